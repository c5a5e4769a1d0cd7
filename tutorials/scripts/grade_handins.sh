#!/usr/bin/env bash
# grade_handins.sh — the teacher's grading of students' hand-ins (tutorials/README.md, For teachers).
#
#   tutorials/scripts/grade_handins.sh --exercises SELECTION [options] HANDIN...
#   tutorials/scripts/grade_handins.sh --exercises SELECTION --roster FILE [options]
#
#   --work DIR             results and scratch (default: grading); refused when it holds other files
#   -j N                   grade N hand-ins at a time (default 1)
#   --roster FILE          lines "STUDENT<TAB>HANDIN" instead of HANDIN arguments
#   --weights FILE         lines "EXERCISE POINTS" (default: 1 point each); every selected exercise
#   --reference-build DIR  an existing build of this checkout to judge with (default: DIR/reference)
#   --build-timeout S      per hand-in build (default 300)    --run-timeout S  per exercise (default 30)
#   --seed N               the inputs' seed (default: a fresh one, printed)
#   --no-isolation         run the students' code without unshare even where it works
#
# SELECTION is what PATCHGRAD_EXERCISES takes (exercise names, chapters such as 04, or all). A
# HANDIN is a folder or a .tar, .tar.gz, .tgz or .zip archive holding a handout repository
# (tutorials/scripts/handout.sh) or a student/ folder of the in-repository student build. The
# student is the file name without its extension, or the roster's name; two hand-ins with one
# name, an empty name or a control character in a name or path stop the script before it
# deletes or grades anything (names are never paths: hand-in N works in DIR/handins/N).
#
# Per hand-in, in DIR/handins/NNN/: the archive is unpacked (in the sandbox), only the selected
# exercises' regions are taken from it into copies of this checkout's files (a missing file or
# damaged markers: "not implemented", "not handed in"), those files are compiled and linked with
# the reference build's libraries into the hand-in's own patchgrad_probe (in the sandbox, with a
# time limit, no build cache), which computes each exercise's numbers on inputs drawn from the
# seed (in the sandbox, with a time limit). The reference build's patchgrad_probe, which never runs
# a student's code, judges them (tutorials/tools/probe.cpp). The sandbox (tutorials/tools/
# sandbox.sh) is unshare's namespaces: no network, nothing of the machine visible but the system's
# programs, this hand-in's folder and, for the build, the reference build and headers; where
# unshare is refused (and on macOS) the code runs as you, with time limits only, and the script
# says so. Results: DIR/grades.csv, one row per student and exercise and a TOTAL row per student:
# student,exercise,result,points,max_points,max_rel_error,detail. Exits 0 when every hand-in got
# its rows (whatever the grades), 1 when the grader itself failed on one, 2 on a usage error.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
self="$root/tutorials/scripts/grade_handins.sh"
source "$root/tutorials/scripts/tree_files.sh"  # tracked_files_tar

usage() {
    sed -n '3,14p' "$self" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
refuse() {
    echo "grade_handins.sh: $*" >&2
    exit 2
}

# ---- one hand-in (run by xargs -P as `grade_handins.sh --job INDEX WORK`) -------------------------

# A CSV field (RFC 4180): quoted always, or when it holds a comma, a quote or a line break.
quoted() { printf '"%s"' "${1//\"/\"\"}"; }
csv_field() {
    case "$1" in
        *[,\"$'\n'$'\r']*) quoted "$1" ;;
        *) printf '%s' "$1" ;;
    esac
}

# region_body FILE NAME: the lines strictly between NAME's markers in FILE; status 1 when FILE
# lacks a well-formed pair of markers.
region_body() {
    awk -v name="$2" '
        $0 ~ "^[ \t]*// \\[exercise:" name "\\][ \t]*$" { opened++; inside = 1; next }
        $0 ~ "^[ \t]*// \\[/exercise:" name "\\][ \t]*$" { closed++; inside = 0; next }
        inside { print }
        END { exit (opened == 1 && closed == 1) ? 0 : 1 }' "$1"
}

# put_region FILE NAME BODYFILE: replaces NAME's region body in FILE by BODYFILE's lines.
put_region() {
    awk -v name="$2" -v body="$3" '
        $0 ~ "^[ \t]*// \\[exercise:" name "\\][ \t]*$" { print; while ((getline l < body) > 0) print l; skip = 1; next }
        $0 ~ "^[ \t]*// \\[/exercise:" name "\\][ \t]*$" { skip = 0 }
        !skip { print }' "$1" > "$1.tmp"
    mv "$1.tmp" "$1"
}

# The folder holding the hand-in's exercise files: its student/ if it has one, else itself;
# a folder that wraps everything (an archive's top folder) is entered first.
handin_root() {
    local dir=$1 entries
    while [ ! -d "$dir/student" ] && [ ! -d "$dir/autograd" ] && [ ! -d "$dir/layers" ] && [ ! -d "$dir/vit" ] &&
          [ ! -d "$dir/datasets" ] && [ ! -d "$dir/tutorials" ]; do
        entries=$(ls -A "$dir")
        [ -n "$entries" ] && [ "$(printf '%s\n' "$entries" | wc -l)" -eq 1 ] && [ -d "$dir/$entries" ] || break
        dir="$dir/$entries"
    done
    if [ -d "$dir/student" ]; then dir="$dir/student"; fi
    printf '%s\n' "$dir"
}

# limit SECONDS COMMAND...: COMMAND's status, 124 when it was stopped at the time limit.
limit() {
    local seconds=$1
    shift
    if command -v timeout > /dev/null; then
        timeout -k 5 "$seconds" "$@"
    elif command -v gtimeout > /dev/null; then
        gtimeout -k 5 "$seconds" "$@"
    else  # macOS without coreutils
        "$@" &
        local pid=$! status
        (sleep "$seconds" && kill -TERM "$pid" 2> /dev/null && sleep 5 && kill -KILL "$pid" 2> /dev/null) &
        local watchdog=$!
        wait "$pid" && status=0 || status=$?
        if kill -0 "$watchdog" 2> /dev/null; then
            kill "$watchdog" 2> /dev/null || true
        else
            status=124
        fi
        return "$status"
    fi
}

# sandboxed SECONDS DIR [SANDBOX OPTIONS] -- COMMAND...: COMMAND in the hand-in's sandbox, in its
# folder DIR, the one it may write, with a time limit.
sandboxed() {
    local seconds=$1 dir=$2
    shift 2
    local options=(--cd "$dir" --rw "$dir")
    if [ "$PG_ISOLATE" = 1 ]; then options+=(--isolate --mount-point "$PG_WORK/.sandbox-root"); fi
    while [ "$1" != -- ]; do options+=("$1"); shift; done
    limit "$seconds" bash "$root/tutorials/scripts/sandbox.sh" "${options[@]}" "$@"
}

grade_one() {
    local index=$1 line id handin dir box
    line=$(sed -n "${index}p" "$PG_STATE/handins")
    id=${line%%$'\t'*}
    handin=${line#*$'\t'}
    # DIR holds what the grader writes (rows, logs, the numbers it judges); DIR/box is all the
    # hand-in's own commands can write.
    dir="$PG_WORK/handins/$(printf '%03d' "$index")"
    box="$dir/box"
    rm -rf "$dir"
    mkdir -p "$box/unpack" "$box/src" "$box/out" "$box/project"
    printf '%s\n' "$id" > "$dir/student"
    : > "$dir/rows.csv"
    : > "$dir/points"

    # row EXERCISE RESULT MAX_REL DETAIL
    row() {
        local weight points
        weight=$(awk -v e="$1" '$1 == e { print $2 }' "$PG_STATE/weights")
        points=0
        if [ "$2" = pass ]; then points=$weight; fi
        printf '%s,%s,%s,%s,%s,%s,%s\n' "$(quoted "$id")" "$1" "$(csv_field "$2")" "$points" "$weight" \
            "$3" "$(quoted "$4")" >> "$dir/rows.csv"
        printf '%s %s\n' "$points" "$weight" >> "$dir/points"
    }
    every_exercise() {  # every_exercise RESULT DETAIL
        local rel exercise
        while IFS='|' read -r rel exercise; do row "$exercise" "$1" - "$2"; done < "$PG_STATE/regions"
    }
    say() { printf '   %-20s %s\n' "$id" "$*"; }

    # Unpacking: archives in the sandbox (a hand-in's paths and links land in its own folder).
    local status=0 archive="" unpack=()
    case "$handin" in
        *.zip)
            archive=handin.zip unpack=(unzip -q -o handin.zip -d unpack)
            # Without unzip, CMake's own extraction (libarchive) reads zip files too.
            command -v unzip > /dev/null || unpack=(sh -c 'cd unpack && cmake -E tar xf ../handin.zip') ;;
        *.tar | *.tar.gz | *.tgz) archive=handin.tar unpack=(tar -xf handin.tar --no-same-owner --no-same-permissions -C unpack) ;;
    esac
    if [ -d "$handin" ]; then
        cp -R "$handin/." "$box/unpack/" 2> "$dir/unpack.log" || status=$?
    elif [ -n "$archive" ] && [ -f "$handin" ]; then
        cp "$handin" "$box/$archive"
        sandboxed 120 "$box" -- "${unpack[@]}" > "$dir/unpack.log" 2>&1 || status=$?
    else
        status=1
        echo "neither a folder nor a .tar, .tar.gz, .tgz or .zip file" > "$dir/unpack.log"
    fi
    chmod -R u+rwX "$box/unpack" 2> /dev/null || true
    find "$box/unpack" ! -type f ! -type d -exec rm -f {} + 2> /dev/null || true  # links, pipes, devices
    if [ "$status" != 0 ]; then
        local why
        why=$( (grep -m1 -iE 'error|cannot|unexpected|not ' "$dir/unpack.log" || grep -m1 . "$dir/unpack.log") |
            sed 's/^ *//' | cut -c1-200 || true)
        [ "$status" = 124 ] && why="unpacking took longer than 120 s"
        every_exercise "unreadable hand-in" "${why:-could not be read (status $status)}"
        say "unreadable hand-in: ${why:-status $status}"
        return 0
    fi

    # The hand-in's exercise files: this checkout's, with the selected regions taken from it.
    local from rel exercise body files="" indent
    from=$(handin_root "$box/unpack")
    while IFS='|' read -r rel exercise; do
        mkdir -p "$box/src/$(dirname "$rel")"
        [ -f "$box/src/$rel" ] || cp "$PG_REFSRC/$rel" "$box/src/$rel"
        case ";$files;" in *";$rel;"*) ;; *) files="${files:+$files;}$rel" ;; esac
        body="$dir/$exercise.region"
        if [ -f "$from/$rel" ] && region_body "$from/$rel" "$exercise" > "$body"; then :; else
            indent=$(grep -m1 "// \[exercise:$exercise\]" "$PG_REFSRC/$rel" | sed 's#//.*##')
            printf '%sthrow std::logic_error("exercise %s: not implemented yet (not handed in: no %s with its markers)");\n' \
                "$indent" "$exercise" "$rel" > "$body"
        fi
        put_region "$box/src/$rel" "$exercise" "$body"
        grep -q '^#include <stdexcept>' "$box/src/$rel" ||
            { printf '#include <stdexcept>  // for a stub in the hand-in\n' | cat - "$box/src/$rel" > "$box/src/$rel.tmp" &&
              mv "$box/src/$rel.tmp" "$box/src/$rel"; }
    done < "$PG_STATE/regions"

    # The build: only those files, against the reference build (read-only), no build cache.
    cp "$root/tutorials/tools/handin/CMakeLists.txt" "$box/project/"
    local build_mounts=() path top
    while IFS= read -r path; do build_mounts+=(--ro "$path"); done < "$PG_REFBUILD/grading/mounts.txt"
    for top in "$PG_HEADERS"/*; do build_mounts+=(--ro "$PG_REFSRC/$(basename "$top")=$top"); done
    status=0
    sandboxed "$PG_BUILD_TIMEOUT" "$box" "${build_mounts[@]}" -- sh -c \
        'cmake -S project -B build "-DREFERENCE=$1" "-DHANDIN_DIR=$2" "-DHANDIN_FILES=$3" && cmake --build build' \
        sh "$PG_REFBUILD/grading/reference.cmake" "$box/src" "$files" > "$dir/build.log" 2>&1 || status=$?
    if [ "$status" != 0 ] || [ ! -x "$box/build/patchgrad_probe" ]; then
        local error
        error=$(grep -m1 -E 'error|Error' "$dir/build.log" | sed "s#$box/src/##g" | cut -c1-200 || true)
        [ "$status" = 124 ] && error="the build took longer than $PG_BUILD_TIMEOUT s"
        every_exercise "build failed" "${error:-status $status}"
        say "build failed: ${error:-status $status}"
        return 0
    fi

    # Each exercise: the hand-in's probe computes (sandbox), the reference's judges.
    local result max_rel detail verdict passed=0 count=0
    while IFS='|' read -r rel exercise; do
        status=0
        rm -f "$box/out/$exercise.txt"
        sandboxed "$PG_RUN_TIMEOUT" "$box" -- build/patchgrad_probe run "$exercise" "$PG_SEED" "out/$exercise.txt" \
            > "$dir/$exercise.log" 2>&1 || status=$?
        # What the judge reads: a regular file, at most 64 MB, copied out of the hand-in's reach.
        if [ -f "$box/out/$exercise.txt" ] && [ ! -L "$box/out/$exercise.txt" ]; then
            head -c 67108864 "$box/out/$exercise.txt" > "$dir/$exercise.numbers"
        else
            : > "$dir/$exercise.numbers"
        fi
        verdict=$("$PG_JUDGE" judge "$exercise" "$PG_SEED" "$dir/$exercise.numbers" --status "$status" \
                  --time-limit "$PG_RUN_TIMEOUT") || verdict=$'FAIL\n-\nthe judge failed on this output (grader bug)'
        result=$(printf '%s\n' "$verdict" | sed -n 1p)
        max_rel=$(printf '%s\n' "$verdict" | sed -n 2p)
        detail=$(printf '%s\n' "$verdict" | sed -n 3p)
        row "$exercise" "$result" "$max_rel" "$detail"
        count=$((count + 1))
        if [ "$result" = pass ]; then passed=$((passed + 1)); fi
    done < "$PG_STATE/regions"
    say "$passed of $count exercises pass"
}

if [ "${1:-}" = --job ]; then
    grade_one "$2"
    exit 0
fi

# ---- the class ---------------------------------------------------------------------------------

selection="" work="grading" jobs=1 roster="" weights="" reference_build="" seed="" isolation=auto
build_timeout=300 run_timeout=30
handins=()
positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || refuse "$1 needs a positive integer, got '$2'"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --exercises | --work | -j | --jobs | --roster | --weights | --reference-build | --build-timeout | \
            --run-timeout | --seed)
            [ $# -ge 2 ] || usage
            case "$1" in
                --exercises) selection=$2 ;;
                --work) work=$2 ;;
                -j | --jobs) positive "$1" "$2"; jobs=$2 ;;
                --roster) roster=$2 ;;
                --weights) weights=$2 ;;
                --reference-build) reference_build=$2 ;;
                --build-timeout) positive "$1" "$2"; build_timeout=$2 ;;
                --run-timeout) positive "$1" "$2"; run_timeout=$2 ;;
                --seed) [[ "$2" =~ ^[0-9]+$ ]] || refuse "--seed needs a number, got '$2'"; seed=$2 ;;
            esac
            shift 2 ;;
        --no-isolation) isolation=none; shift ;;
        -*) usage ;;
        *) handins+=("$1"); shift ;;
    esac
done
[ -n "$selection" ] || usage
[ -z "$roster" ] || [ ${#handins[@]} -eq 0 ] || refuse "give the hand-ins either as arguments or in --roster, not both"

# The students: names checked, and collisions refused, before anything is deleted or graded.
names=() paths=()
has_control() { [[ "$1" == *[[:cntrl:]]* ]]; }
if [ -n "$roster" ]; then
    [ -f "$roster" ] || refuse "--roster $roster: no such file"
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        line=${line%$'\r'}
        case "$line" in '' | '#'*) continue ;; esac
        [[ "$line" == *$'\t'* ]] || refuse "$roster:$n: expected STUDENT<TAB>HANDIN, got '$line'"
        names+=("${line%%$'\t'*}")
        paths+=("${line#*$'\t'}")
    done < "$roster"
else
    for h in "${handins[@]+"${handins[@]}"}"; do
        name=$(basename -- "$h")
        name=${name%.zip}; name=${name%.tgz}; name=${name%.tar.gz}; name=${name%.tar}
        names+=("$name")
        paths+=("$h")
    done
fi
[ ${#names[@]} -gt 0 ] || usage
for i in "${!names[@]}"; do
    name=${names[$i]} path=${paths[$i]}
    [ -n "$name" ] || refuse "the hand-in '$path' gives an empty student name (rename it, or name the students with --roster); nothing was graded or deleted"
    if has_control "$name" || has_control "$path"; then
        refuse "the student name '$name' or its hand-in '$path' holds a control character; nothing was graded or deleted"
    fi
    [ -e "$path" ] || refuse "the hand-in '$path' of '$name' does not exist; nothing was graded or deleted"
done
duplicates=$(printf '%s\n' "${names[@]}" | sort | uniq -d)
if [ -n "$duplicates" ]; then
    {
        echo "grade_handins.sh: these student names are given by more than one hand-in; nothing was graded or deleted:"
        while IFS= read -r d; do
            for i in "${!names[@]}"; do [ "${names[$i]}" != "$d" ] || echo "  '$d': ${paths[$i]}"; done
        done <<< "$duplicates"
        echo "Name each student with --roster FILE (lines STUDENT<TAB>HANDIN), e.g. for archives all named handin.zip."
    } >&2
    exit 2
fi

# The work folder: new, empty, or one this script made.
if [ -e "$work" ] && [ -n "$(ls -A "$work" 2> /dev/null)" ] && [ ! -f "$work/.patchgrad-grading" ]; then
    refuse "--work $work holds files this script did not make; give a new or empty folder"
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
touch "$work/.patchgrad-grading"
state="$work/.state"
rm -rf "$state" "$work/handins" "$work/.sandbox-root"
mkdir -p "$state" "$work/handins" "$work/.sandbox-root"
for i in "${!names[@]}"; do printf '%s\t%s\n' "${names[$i]}" "${paths[$i]}"; done > "$state/handins"

# The selected exercises as "FILE|NAME" lines: the student build's own selection logic
# (student_copy.cmake in script mode) on a scratch copy of the tree.
scratch="$state/selection"
mkdir -p "$scratch"
tracked_files_tar | tar -xf - -C "$scratch"
printf 'cmake_minimum_required(VERSION %s)\ninclude(%s)\n' "$(cmake --version | awk 'NR == 1 { print $3 }')" \
    "$scratch/tutorials/tools/student_copy.cmake" > "$state/select.cmake"
if ! (cd "$scratch" && cmake -DPATCHGRAD_STUDENT=ON "-DPATCHGRAD_EXERCISES=$selection" -P "$state/select.cmake" \
        > "$state/select.log" 2>&1); then
    cat "$state/select.log" >&2
    refuse "the selection '$selection' was refused (above)"
fi
grep -v '|-$' "$scratch/student/.handed-out" > "$state/regions"
rm -rf "$scratch"

# Points per exercise.
: > "$state/weights"
while IFS='|' read -r _ exercise; do
    points=1
    if [ -n "$weights" ]; then
        [ -f "$weights" ] || refuse "--weights $weights: no such file"
        points=$(awk -v e="$exercise" '$1 == e { print $2 }' "$weights")
        [ -n "$points" ] || refuse "--weights $weights gives no points for the selected exercise $exercise"
        [[ "$points" =~ ^[0-9]+(\.[0-9]+)?$ ]] || refuse "--weights $weights: '$points' points for $exercise is not a number"
    fi
    printf '%s %s\n' "$exercise" "$points" >> "$state/weights"
done < "$state/regions"
if [ -n "$weights" ]; then
    while read -r exercise _; do
        case "$exercise" in '' | '#'*) continue ;; esac
        grep -q "|$exercise\$" "$state/regions" || refuse "--weights $weights names $exercise, which is not in the selection"
    done < "$weights"
fi

# The reference: this checkout built once (before any student's code runs), or the build given.
cpus=$(getconf _NPROCESSORS_ONLN 2> /dev/null || echo 2)
if [ -n "$reference_build" ]; then
    refbuild=$(cd "$reference_build" && pwd)
    [ -f "$refbuild/CMakeCache.txt" ] || refuse "--reference-build $reference_build is not a CMake build folder"
else
    refbuild="$work/reference/build"
    refsrc="$work/reference/src"
    stamp=$(tracked_files_tar | cksum)
    if [ "$(cat "$work/reference/stamp" 2> /dev/null)" != "$stamp" ]; then
        rm -rf "$refsrc"
        mkdir -p "$refsrc"
        tracked_files_tar | tar -xf - -C "$refsrc"
        printf '%s\n' "$stamp" > "$work/reference/stamp"
    fi
    launcher=()
    if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
    echo "grade_handins.sh: building the reference in $refbuild (once; later runs reuse it)"
    cmake -S "$refsrc" -B "$refbuild" -DCMAKE_BUILD_TYPE=Release -DPATCHGRAD_BUILD_TUTORIALS=OFF \
        "${launcher[@]+"${launcher[@]}"}" > "$work/reference/configure.log" 2>&1 ||
        { tail -n 20 "$work/reference/configure.log" >&2; refuse "the reference build could not be configured"; }
fi
cmake --build "$refbuild" -j "$cpus" --target patchgrad_probe > "$state/reference-build.log" 2>&1 ||
    { tail -n 20 "$state/reference-build.log" >&2; refuse "the reference build failed (log: $state/reference-build.log)"; }
[ -f "$refbuild/grading/reference.cmake" ] || refuse "$refbuild has no grading/reference.cmake: not a build of this checkout's tests"
refsrc=$(sed -n 's/^set(PATCHGRAD_REFERENCE_SOURCE_DIR "\(.*\)")$/\1/p' "$refbuild/grading/reference.cmake")
if [ -n "$reference_build" ] && [ "$(cd "$refsrc" && pwd -P)" != "$(cd "$root" && pwd -P)" ]; then
    refuse "--reference-build $reference_build is a build of $refsrc, not of this checkout ($root)"
fi
judge="$refbuild/tutorials/patchgrad_probe"
missing=$(comm -23 <(cut -d'|' -f2 "$state/regions" | sort) <("$judge" list | sort))
[ -z "$missing" ] || refuse "no probe for the exercise(s) $(echo "$missing" | paste -sd' ' -): add one to tutorials/tools/probes.cpp"

# The headers a hand-in's build sees (at the reference's source path): no .cpp, no answer.
headers="$work/reference/headers"
rm -rf "$headers"
mkdir -p "$headers"
(cd "$refsrc" && find autograd layers vit datasets tests tutorials -name '*.h' -print0 2> /dev/null |
    tar --null -T - -cf -) | tar -xf - -C "$headers"

# Isolation: unshare where it works.
isolate=0
if [ "$isolation" = auto ]; then
    why=$(bash "$root/tutorials/scripts/sandbox.sh" --check)
    if [ "$why" = isolated ]; then
        isolate=1
        echo "isolation: unshare: the students' code runs without network, sees only the system's programs and its own folder (the build also the reference build and headers), every capability dropped"
    else
        echo "isolation: NONE ($why): the students' code runs as you, with your files and the network; only time limits and a clean environment apply"
    fi
else
    echo "isolation: NONE (--no-isolation): the students' code runs as you, with your files and the network; only time limits and a clean environment apply"
fi
if [ "$isolate" = 1 ]; then
    # The sandbox must find the compiler and CMake among the system's programs.
    if ! out=$(limit 60 bash "$root/tutorials/scripts/sandbox.sh" --isolate --mount-point "$work/.sandbox-root" \
            --cd / -- sh -c 'cmake --version && "$1" --version' sh \
            "$(sed -n 's/^set(PATCHGRAD_REFERENCE_COMPILER "\(.*\)")$/\1/p' "$refbuild/grading/reference.cmake")" 2>&1); then
        refuse "the sandbox cannot run CMake or the compiler (they must be under /usr): $(printf '%s' "$out" | head -n1)"
    fi
fi
if [ -z "$seed" ]; then seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); fi
echo "seed $seed (to grade again with the same inputs: --seed $seed)"
printf '%s\n' "$seed" > "$work/seed"

export PG_WORK="$work" PG_STATE="$state" PG_REFBUILD="$refbuild" PG_REFSRC="$refsrc" PG_HEADERS="$headers" \
    PG_JUDGE="$judge" PG_SEED="$seed" PG_ISOLATE="$isolate" PG_BUILD_TIMEOUT="$build_timeout" \
    PG_RUN_TIMEOUT="$run_timeout"
count=${#names[@]}
echo "grading $count hand-in(s), $jobs at a time"
seq 1 "$count" | xargs -P "$jobs" -I{} bash "$self" --job {} || true

# grades.csv: the rows of every hand-in in the order given, and each student's total.
csv="$work/grades.csv"
failed=0
{
    echo "student,exercise,result,points,max_points,max_rel_error,detail"
    for i in $(seq 1 "$count"); do
        dir="$work/handins/$(printf '%03d' "$i")"
        name=${names[$((i - 1))]}
        if [ ! -s "$dir/rows.csv" ]; then
            failed=1
            printf '%s,TOTAL,grader failed,0,0,-,%s\n' "$(quoted "$name")" "$(quoted "see $dir")"
            continue
        fi
        cat "$dir/rows.csv"
        printf '%s,TOTAL,,%s,-,\n' "$(quoted "$name")" "$(awk '{ p += $1; m += $2 } END { printf "%g,%g", p, m }' "$dir/points")"
    done
} > "$csv.tmp"
mv "$csv.tmp" "$csv"

echo
# The table: CSV fields split by hand (quoted fields may hold commas), the detail cut short.
awk '{ n = 0; f = ""; q = 0
       for (i = 1; i <= length($0); i++) {
           c = substr($0, i, 1)
           if (q && c == "\"" && substr($0, i + 1, 1) == "\"") { f = f c; i++ }
           else if (c == "\"") q = !q
           else if (c == "," && !q) { v[NR, ++n] = f; f = "" }
           else f = f c }
       v[NR, ++n] = f
       for (i = 1; i <= 6; i++) if (length(v[NR, i]) > w[i]) w[i] = length(v[NR, i]) }
     END { for (r = 1; r <= NR; r++) {
               line = ""
               for (i = 1; i <= 6; i++) line = line sprintf("%-" w[i] "s  ", v[r, i])
               print line substr(v[r, 7], 1, 100) } }' "$csv"
echo
echo "grades: $csv (one folder per hand-in in $work/handins: its sources, build and logs)"
exit $failed
