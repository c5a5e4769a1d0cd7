#!/usr/bin/env bash
# handout.sh — writes a standalone student repository for a selection of exercises.
#
#   tutorials/scripts/handout.sh --exercises SELECTION --out DIR
#   tutorials/scripts/handout.sh --check DIR
#
# SELECTION is what PATCHGRAD_EXERCISES takes: exercise names and chapters (04 or
# 04_core_ops), comma-separated, or all. DIR gets the repository's tracked files, in which the
# selected exercise regions hold the throwing stubs of the student build (in the library files
# themselves: there is no student/ copy and no reference file beside it), with a git history
# of one commit. The selection is recorded in DIR/tutorials/handout-exercises.txt, so that
# `cmake --build build --target grade` there grades exactly these exercises. The chapters
# already elide every exercise's code (tutorials/tools/chapter_check.h); a `// [hide:NAME]` block
# of the sources (a derivative in a comment, code that computes the same in another form) is left
# out when exercise NAME is handed out (a line `// [handout:NAME] CODE` then becomes CODE, to
# stand in for it), and so is every mutation of tests/mutation/mutations.txt whose line of
# backward code the handout no longer shows (its `find:` line would name the key line of a
# handed-out backward, its label the terms of the derivative). Before it finishes, the script
# checks that no text file of DIR holds a line of a selected exercise's reference code
# (answer_lines below); --check DIR runs that check alone on an existing handout, against the
# reference code of this checkout.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tutorials/scripts/tree_files.sh"  # tracked_files_tar
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

# The answers: every line of a selected exercise's reference code (this checkout's region), with
# comments and indentation dropped and blanks collapsed, of at least 16 characters, that is not
# part of a line found elsewhere in the library's sources (autograd/ layers/ vit/ datasets/, the
# chapter programs; `const real* dy = o.grad_data();` gives nothing away) and is no bare loop
# header. Prints "NAME<TAB>LINE" for the regions "FILE|NAME" listed in file $1.
answer_lines() {
    local list lines answers name
    list=$(mktemp)
    lines=$(mktemp)
    answers=$(mktemp)
    (cd "$root" && find autograd layers vit datasets tutorials \( -name '*.cpp' -o -name '*.h' \) 2> /dev/null |
        grep -v '^tutorials/tools/' | sort) > "$list"
    # Every library line as "REGION<TAB>LINE" (REGION "-" outside the exercises).
    (cd "$root" && awk -v list="$list" '
        BEGIN { while ((getline file < list) > 0) {
                    region = "-"
                    while ((getline text < file) > 0) {
                        if (text ~ /^[ \t]*\/\/ \[exercise:[a-z0-9-]+\][ \t]*$/) {
                            region = text; sub(/^[ \t]*\/\/ \[exercise:/, "", region); sub(/\].*/, "", region); continue }
                        if (text ~ /^[ \t]*\/\/ \[\/exercise:/) { region = "-"; continue }
                        line = text; sub(/\/\/.*/, "", line); gsub(/[ \t\r]+/, " ", line); gsub(/^ | $/, "", line)
                        if (line != "") print region "\t" line
                    }
                    close(file) } }') > "$lines"
    cut -d'|' -f2 "$1" | sort -u | while IFS= read -r name; do
        [ -n "$name" ] || continue
        awk -F'\t' -v x="$name" '$1 == x && length($2) >= 16 && $2 !~ /^for \(int64_t [a-z0-9_]+ = [a-z0-9_]+; [a-z0-9_]+ < [^;]+; \+\+[a-z0-9_]+\)( \{)?$/ { print $2 }' \
            "$lines" | sort -u > "$answers"
        [ -s "$answers" ] || continue
        # The answers also found inside some other line of the library are generic.
        awk -F'\t' -v x="$name" '$1 != x { print $2 }' "$lines" | grep -F -o -f "$answers" | sort -u |
            comm -23 "$answers" - | sed "s/^/$name	/"
    done
    rm -f "$list" "$lines" "$answers"
}

# leak_check DIR: fails naming each file, line and exercise where a text file of DIR (outside
# .git) holds an answer line of one of DIR's exercises (DIR/tutorials/handout-regions.txt), in
# code or in a comment, whatever its indentation or spacing.
leak_check() {
    local dir=$1 answers hits
    [ -f "$dir/tutorials/handout-regions.txt" ] ||
        { echo "handout.sh: $dir/tutorials/handout-regions.txt is missing: is $dir a handout?" >&2; exit 1; }
    answers=$(mktemp)
    answer_lines "$dir/tutorials/handout-regions.txt" > "$answers"
    # Every text line of the handout as "FILE:LINE:text", blanks collapsed; then the answers in it.
    hits=$( (cd "$dir" && find . -path ./.git -prune -o -type f -print0) | (cd "$dir" && xargs -0 grep -Il . 2> /dev/null || true) |
        (cd "$dir" && xargs awk '{ line = $0; gsub(/[ \t\r]+/, " ", line); print FILENAME ":" FNR ": " line }' 2> /dev/null) |
        grep -F -f <(cut -f2 "$answers") || true)
    if [ -z "$hits" ]; then
        rm -f "$answers"
        return 0
    fi
    printf '%s\n' "$hits" | head -n 40 | while IFS= read -r hit; do
        local where=${hit%%: *} text=${hit#*: } name
        name=$(awk -F'\t' -v t="$text" 'index(t, $2) { print $1; exit }' "$answers")
        echo "handout.sh: ${where#./} shows the reference code of exercise $name: \"$(printf '%s' "$text" | cut -c1-100)\"" >&2
    done
    rm -f "$answers"
    return 1
}

# hide_blocks DIR SELECTED: in every file of DIR, a `// [hide:NAME]` ... `// [/hide:NAME]` block of
# a selected exercise becomes one comment line; the markers of the others are dropped. A line
# `// [handout:NAME] CODE` becomes CODE when NAME is selected (what replaces a hidden block).
hide_blocks() {
    local dir=$1 selected=$2 file
    grep -rlIE --exclude-dir=.git '// \[(hide|handout):' "$dir" | while IFS= read -r file; do
        awk -v selected="$selected" '
            BEGIN { n = split(selected, s, ","); for (i = 1; i <= n; i++) want[s[i]] = 1 }
            /^[ \t]*\/\/ \[hide:[a-z0-9-]+\][ \t]*$/ {
                name = $0; sub(/^[ \t]*\/\/ \[hide:/, "", name); sub(/\].*/, "", name)
                stack[++depth] = name
                if (want[name] && hidden++ == 0) {
                    indent = $0; sub(/\/\/.*/, "", indent)
                    print indent "// (left out of this handout: it would give away exercise " name ")"
                }
                next }
            /^[ \t]*\/\/ \[\/hide:[a-z0-9-]+\][ \t]*$/ { if (want[stack[depth]]) hidden--; depth--; next }
            /^[ \t]*\/\/ \[handout:[a-z0-9-]+\] / {
                name = $0; sub(/^[ \t]*\/\/ \[handout:/, "", name); sub(/\].*/, "", name)
                if (want[name] && !hidden) { code = $0; sub(/\/\/ \[handout:[a-z0-9-]+\] /, "", code); print code }
                next }
            !hidden { print }' "$file" > "$file.tmp"
        mv "$file.tmp" "$file"
    done
}

# keep_shown_mutations DIR: DIR/tests/mutation/mutations.txt keeps its comments and the
# mutations whose `find:` fragment still occurs in the `file:` they name, in DIR; the others
# (the key lines of the stubbed and hidden code) are left out, and a comment says how many.
keep_shown_mutations() {
    local dir=$1 list=$1/tests/mutation/mutations.txt
    [ -f "$list" ] || return 0
    awk -v dir="$dir" '
        # The text of DIR/FILE, read once (RS is the blank line while reading the list).
        function text_of(file,   line, all) {
            if (!(file in cache)) {
                RS = "\n"; all = ""
                while ((getline line < (dir "/" file)) > 0) all = all line "\n"
                close(dir "/" file); RS = ""; cache[file] = all
            }
            return cache[file]
        }
        BEGIN { RS = "" }
        {
            file = ""; find = ""
            n = split($0, line, "\n")
            for (i = 1; i <= n; i++) {
                if (line[i] ~ /^file: /) file = substr(line[i], 7)
                if (line[i] ~ /^find: /) find = substr(line[i], 7)
            }
            if (find != "" && index(text_of(file), find) == 0) { left_out++; next }
            kept[++blocks] = $0
        }
        END {
            for (b = 1; b <= blocks; b++) {
                if (b > 1) print ""
                print kept[b]
                if (b == 1 && left_out)
                    print "#\n# This handout leaves out the " left_out " mutations of the backward code it does not show."
            }
        }' "$list" > "$list.tmp"
    mv "$list.tmp" "$list"
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
hide_blocks "$out" "$(cat "$out/tutorials/handout-exercises.txt")"
keep_shown_mutations "$out"

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
