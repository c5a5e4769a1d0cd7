# tree_files.sh — sourced by handout.sh and grade_handins.sh (which set $root).
# shellcheck shell=bash disable=SC2154
# (SC2154, a variable used but never set: $root, which the sourcing script sets.)
# This checkout's files as a tar stream: git's tracked files, or in a tree that is not a git
# checkout (an unpacked archive) every file outside build folders and student/.
tracked_files_tar() {
    if git -C "$root" rev-parse --git-dir > /dev/null 2>&1; then
        (cd "$root" && git ls-files -z | tar --null -T - -cf -)
    else
        (cd "$root" && find . \( -name .git -o -name 'build*' -o -name student \) -prune -o -type f -print0 |
            tar --null -T - -cf -)
    fi
}
