#!/usr/bin/env bash
# sandbox.sh — runs one command of a student's hand-in (its unpacking, build or run) for
# tutorials/scripts/grade_handins.sh, with limits and, where Linux allows it, isolated:
#
#   tutorials/scripts/sandbox.sh --check                        (prints "isolated" or why not)
#   tutorials/scripts/sandbox.sh --mount-point DIR [--rw PATH]... [--ro PATH[=SOURCE]]...
#                              [--isolate] --cd DIR -- COMMAND...
#
# Always: a clean environment (PATH, HOME=/tmp, LANG=C: none of the caller's variables), no core
# files, at most 4 GB of address space and 2 GB per file. With --isolate, unshare(1) gives the
# command its own user, mount, PID and network namespaces: no network at all, a root file system
# holding only the system's programs and libraries (/usr and what /bin, /lib point to, read-only),
# a fresh /tmp and /dev, the --rw paths writable, the --ro paths read-only (SOURCE shown at
# PATH); nothing else of the machine (no home folders, no other hand-ins, not the teacher's
# repository) exists in there. The command runs with every capability dropped (setpriv), so it
# cannot undo a mount, and when it ends every process it started ends with it (its PID
# namespace). DIR (--mount-point) is an empty folder the new root is built on. The time limit
# is the caller's (timeout around this script).
set -euo pipefail

if [ "${1:-}" = --check ]; then
    # Whether unshare works here as this user: it does on most Linux systems; containers and
    # hardened kernels may refuse user namespaces.
    for tool in unshare setpriv chroot; do
        command -v "$tool" > /dev/null || { echo "no $tool (util-linux, coreutils)"; exit 0; }
    done
    if out=$(unshare --user --map-root-user --net --mount --pid --fork --kill-child \
                 sh -c 'mount -t tmpfs tmpfs /tmp && echo isolated' 2>&1) && [ "$out" = isolated ]; then
        echo isolated
    else
        echo "unshare refused: $(printf '%s' "$out" | head -n1)"
    fi
    exit 0
fi

mount_point="" cd_to="" isolate=0 inside=0
rw=() ro=()
while [ $# -gt 0 ]; do
    case "$1" in
        --mount-point) mount_point=$2; shift 2 ;;
        --rw) rw+=("$2"); shift 2 ;;
        --ro) ro+=("$2"); shift 2 ;;
        --cd) cd_to=$2; shift 2 ;;
        --isolate) isolate=1; shift ;;
        --inside) inside=1; shift ;;
        --) shift; break ;;
        *) echo "sandbox.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] && [ -n "$cd_to" ] || { echo "sandbox.sh: give --cd DIR -- COMMAND..." >&2; exit 2; }

limits() {
    ulimit -c 0
    ulimit -v 4194304 2> /dev/null || true  # KiB
    ulimit -f 2097152 2> /dev/null || true  # KiB
}
clean_env=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp TMPDIR=/tmp LANG=C LC_ALL=C)

if [ "$isolate" = 0 ]; then
    limits
    cd "$cd_to"
    exec "${clean_env[@]}" "$@"
fi

if [ "$inside" = 0 ]; then
    [ -d "$mount_point" ] || { echo "sandbox.sh: --mount-point $mount_point is not a folder" >&2; exit 2; }
    args=(--mount-point "$mount_point" --cd "$cd_to" --isolate --inside)
    for p in "${rw[@]+"${rw[@]}"}"; do args+=(--rw "$p"); done
    for p in "${ro[@]+"${ro[@]}"}"; do args+=(--ro "$p"); done
    exec unshare --user --map-root-user --net --mount --pid --fork --kill-child \
        bash "$0" "${args[@]}" -- "$@"
fi

# Inside the namespaces: build the new root on a tmpfs and enter it.
root=$mount_point
mount -t tmpfs -o size=16m,mode=755 sandbox "$root"
bind() {  # bind SOURCE TARGET ro|rw
    if [ -d "$1" ]; then mkdir -p "$root$2"; else mkdir -p "$root$(dirname "$2")" && : > "$root$2"; fi
    mount --bind "$1" "$root$2"
    if [ "$3" = ro ]; then mount -o remount,bind,ro "$root$2"; fi
}
for d in /usr /bin /sbin /lib /lib32 /lib64 /libx32; do
    if [ -L "$d" ]; then
        ln -s "$(readlink "$d")" "$root$d"
    elif [ -d "$d" ]; then
        bind "$d" "$d" ro
    fi
done
mkdir -p "$root/etc"
for f in /etc/ld.so.cache /etc/alternatives; do
    if [ -e "$f" ]; then bind "$f" "$f" ro; fi
done
mkdir -p "$root/dev" "$root/tmp" "$root/proc"
for f in null zero random urandom; do bind "/dev/$f" "/dev/$f" rw; done
mount -t tmpfs -o size=512m,mode=1777 tmp "$root/tmp"
mount -t proc proc "$root/proc"
for p in "${ro[@]+"${ro[@]}"}"; do
    target=${p%%=*} source=${p#*=}
    bind "$source" "$target" ro
done
for p in "${rw[@]+"${rw[@]}"}"; do bind "$p" "$p" rw; done
limits
exec chroot "$root" "${clean_env[@]}" setpriv --no-new-privs --bounding-set=-all --inh-caps=-all \
    sh -c 'cd "$1" && shift && exec "$@"' sh "$cd_to" "$@"
