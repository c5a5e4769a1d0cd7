#!/usr/bin/env bash
# handout.sh — writes a standalone student repository for a selection of exercises.
#
#   tutorials/tools/handout.sh --exercises SELECTION --out DIR
#   tutorials/tools/handout.sh --check DIR
#
# SELECTION is what PATCHGRAD_EXERCISES takes: exercise names and chapters (04 or
# 04_core_ops), comma-separated, or all. DIR gets the repository's tracked files, in which the
# selected exercise regions hold the throwing stubs of the student build (in the library files
# themselves: there is no student/ copy and no reference file beside it), with a git history
# of one commit. The selection is recorded in DIR/tutorials/handout-exercises.txt, so that
# `cmake --build build --target grade` there grades exactly these exercises. The chapters
# already elide every exercise's code (tutorials/tools/chapter_check.h). Before it finishes,
# the script checks that no text file of DIR holds three consecutive lines of a selected
# exercise's reference code (compared without indentation, comments and short lines, as the
# chapter checker does); --check DIR runs that check alone on an existing handout, against
# the reference code of this checkout.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tutorials/tools/tree_files.sh"  # tracked_files_tar
usage() {
    echo "usage: $0 --exercises SELECTION --out DIR    (write a handout)" >&2
    echo "       $0 --check DIR                        (check a handout for leaked reference code)" >&2
    exit 2
}

selection="" out="" check=""
while [ $# -gt 0 ]; do
    case "$1" in
        --exercises) [ $# -ge 2 ] || usage; selection=$2; shift 2 ;;
        --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
        --check) [ $# -ge 2 ] || usage; check=$2; shift 2 ;;
        *) usage ;;
    esac
done

# The significant lines of stdin, one per line: trimmed, runs of blanks collapsed; comments,
# blank lines and lines under 16 characters dropped (braces, `return out;`).
significant() {
    awk '{ gsub(/^[ \t]+|[ \t\r]+$/, ""); gsub(/[ \t]+/, " ");
           if ($0 ~ /^\/\// || length($0) < 16) next; print }'
}

# Every run of 1, 2 and 3 consecutive significant lines of stdin, joined by \037 (US).
runs() {
    significant | awk '{ line[NR] = $0 }
        END { for (i = 1; i <= NR; i++) {
                  print line[i]
                  if (i + 1 <= NR) print line[i] "\037" line[i + 1]
                  if (i + 2 <= NR) print line[i] "\037" line[i + 1] "\037" line[i + 2] } }'
}

# The reference code of exercise $2 in file $1 of this checkout, as its runs of
# min(3, its significant lines) lines: what must not appear in a handout.
answer_runs() {
    awk -v name="$2" '$0 ~ "^[ \t]*// \\[/exercise:" name "\\][ \t]*$" { inside = 0 }
                      inside { print }
                      $0 ~ "^[ \t]*// \\[exercise:" name "\\][ \t]*$" { inside = 1 }' "$root/$1" |
        significant | awk '{ line[NR] = $0 }
            END { n = NR < 3 ? NR : 3
                  for (i = 1; i + n - 1 <= NR; i++) {
                      s = line[i]; for (k = 1; k < n; k++) s = s "\037" line[i + k]; print s } }'
}

# leak_check DIR: fails naming the file and exercise if a text file of DIR (outside .git)
# shows a selected exercise's reference code. The exercises are the regions of this checkout
# named in DIR/tutorials/handout-exercises.txt's resolved list (DIR/.handout-regions).
leak_check() {
    local dir=$1 patterns leaks=0
    patterns=$(mktemp)
    [ -f "$dir/tutorials/handout-regions.txt" ] ||
        { echo "handout.sh: $dir/tutorials/handout-regions.txt is missing: is $dir a handout?" >&2; exit 1; }
    while IFS='|' read -r rel name; do
        [ -n "$name" ] || continue
        answer_runs "$rel" "$name" | sed "s/^/$name	/" >> "$patterns"
    done < "$dir/tutorials/handout-regions.txt"
    while IFS= read -r -d '' file; do
        grep -Iq . "$file" 2>/dev/null || continue   # binary or empty
        local hits
        hits=$(runs < "$file" | grep -Fx -f <(cut -f2- "$patterns") || true)
        if [ -n "$hits" ]; then
            local first name
            first=$(printf '%s\n' "$hits" | head -n1)
            name=$(grep -F "	$first" "$patterns" | head -n1 | cut -f1)
            echo "handout.sh: ${file#"$dir"/} shows the reference code of exercise $name: \"${first%%$'\037'*}\" ..." >&2
            leaks=1
        fi
    done < <(find "$dir" -path "$dir/.git" -prune -o -type f -print0)
    rm -f "$patterns"
    return $leaks
}

if [ -n "$check" ]; then
    [ -z "$selection$out" ] || usage
    leak_check "$check" && echo "handout.sh: $check shows none of its exercises' reference code"
    exit
fi
[ -n "$selection" ] && [ -n "$out" ] || usage
command -v git > /dev/null || { echo "handout.sh: needs git (the handout is a repository of one commit)" >&2; exit 1; }
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
    echo "handout.sh: $out exists and is not empty; give a new folder" >&2
    exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The tracked files as they are in the working tree (a handout of uncommitted work is the
# teacher's choice), without the history.
tracked_files_tar | tar -xf - -C "$out"
rm -f "$out/tutorials/handout-exercises.txt" "$out/tutorials/handout-regions.txt"

# The stubs: the student build's own copying (student_copy.cmake in script mode), whose
# copies then replace the library files.
wrapper=$(mktemp)
printf 'cmake_minimum_required(VERSION %s)\ninclude(%s)\n' "$(cmake --version | awk 'NR == 1 { print $3 }')" "$out/tutorials/tools/student_copy.cmake" > "$wrapper"
if ! log=$(cd "$out" && cmake -DPATCHGRAD_STUDENT=ON "-DPATCHGRAD_EXERCISES=$selection" -P "$wrapper" 2>&1); then
    rm -f "$wrapper"
    rm -rf "$out"
    echo "$log" >&2
    echo "handout.sh: the selection '$selection' was refused (above)" >&2
    exit 1
fi
rm -f "$wrapper"
grep -v '|-$' "$out/student/.handed-out" > "$out/tutorials/handout-regions.txt"
while IFS='|' read -r rel _; do
    [ -f "$out/student/$rel" ] || continue
    # Drop the copy's three lines of student-build advice; the stub's message names the file.
    sed -e '1,3d' -e 's#(student/#(#' "$out/student/$rel" > "$out/$rel"
    rm -f "$out/student/$rel"
done < <(sort -u "$out/tutorials/handout-regions.txt")
rm -rf "$out/student"
cut -d'|' -f2 "$out/tutorials/handout-regions.txt" | paste -sd, - > "$out/tutorials/handout-exercises.txt"

if ! leak_check "$out"; then
    echo "handout.sh: the handout in $out would give answers away; not finished" >&2
    exit 1
fi

names=$(cat "$out/tutorials/handout-exercises.txt")
git -C "$out" init -q
git -C "$out" add -A
git -C "$out" -c user.name="patchgrad handout" -c user.email="handout@patchgrad.invalid" \
    commit -q -m "Handout: exercises $names"
echo "handout.sh: wrote $out with the exercises $names stubbed ($(git -C "$out" ls-files | wc -l) files, one commit)."
echo "  Students: cmake -S . -B build && cmake --build build --target grade   (grades these exercises)"
