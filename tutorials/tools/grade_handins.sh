#!/usr/bin/env bash
# grade_handins.sh — the teacher's grading of students' hand-ins.
#
#   tutorials/tools/grade_handins.sh --exercises SELECTION [--work DIR] HANDIN...
#
# SELECTION is what PATCHGRAD_EXERCISES takes (exercise names, chapters such as 04, or all).
# A HANDIN is a folder or an archive (.tar, .tar.gz, .tgz, .zip) holding either a handout
# repository (tutorials/tools/handout.sh) with the student's code in the library files, or a
# student/ folder of the in-repository student build; the student's name is its file name
# without the extension. For each hand-in, in its own folder DIR/NAME (default DIR: grading):
#   - src/ is this checkout's tracked files, that is the teacher's full tests, which may be
#     more than the handout shipped; only the regions of the selected exercises are taken
#     from the hand-in (a region missing from it, or with damaged markers, becomes a stub
#     that grades as "not implemented", saying "not handed in"); nothing the student changed
#     elsewhere counts;
#   - build/ is its own build, of the float64 tests and the grader only (with ccache when it
#     is installed, so that the hand-ins after the first rebuild only their exercise files);
#   - the grader runs the tests of each selected exercise.
# The hand-in itself is only read, never changed. The results go to DIR/grades.csv (student,
# exercise, tests, result, max_rel_error, first_failure) and to the terminal as a table.
# Exits 0 when every hand-in was graded (whatever the grades), 1 when one could not be.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tutorials/tools/tree_files.sh"  # tracked_files_tar
usage() {
    echo "usage: $0 --exercises SELECTION [--work DIR] HANDIN..." >&2
    exit 2
}
selection="" work="grading"
handins=()
while [ $# -gt 0 ]; do
    case "$1" in
        --exercises) [ $# -ge 2 ] || usage; selection=$2; shift 2 ;;
        --work) [ $# -ge 2 ] || usage; work=$2; shift 2 ;;
        -*) usage ;;
        *) handins+=("$1"); shift ;;
    esac
done
[ -n "$selection" ] && [ ${#handins[@]} -gt 0 ] || usage
mkdir -p "$work"
work=$(cd "$work" && pwd)
launcher=()
if command -v ccache > /dev/null; then
    # Without the tests' precompiled header: each build makes its own .gch, and every test
    # file that includes one missed the cache in the next hand-in's build.
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON)
    export CCACHE_BASEDIR=$work  # same relative paths in every hand-in's tree: cache hits
    export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
fi

# The selected exercises as "FILE|NAME" lines: the student build's own selection logic
# (student_copy.cmake in script mode) run on a scratch copy of the tree.
regions_of_selection() {
    local scratch wrapper
    scratch=$(mktemp -d)
    tracked_files_tar | tar -xf - -C "$scratch"
    wrapper=$(mktemp)
    printf 'cmake_minimum_required(VERSION %s)\ninclude(%s)\n' "$(cmake --version | awk 'NR == 1 { print $3 }')" \
        "$scratch/tutorials/tools/student_copy.cmake" > "$wrapper"
    if ! (cd "$scratch" && cmake -DPATCHGRAD_STUDENT=ON "-DPATCHGRAD_EXERCISES=$selection" -P "$wrapper" > "$scratch/log" 2>&1); then
        cat "$scratch/log" >&2
        rm -rf "$scratch" "$wrapper"
        echo "grade_handins.sh: the selection '$selection' was refused (above)" >&2
        exit 1
    fi
    grep -v '|-$' "$scratch/student/.handed-out"
    rm -rf "$scratch" "$wrapper"
}
selected=$(regions_of_selection)

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
        [ "$(printf '%s\n' "$entries" | wc -l)" -eq 1 ] && [ -d "$dir/$entries" ] || break
        dir="$dir/$entries"
    done
    if [ -d "$dir/student" ]; then dir="$dir/student"; fi
    printf '%s\n' "$dir"
}

csv="$work/grades.csv"
printf 'student,exercise,tests,result,max_rel_error,first_failure\n' > "$csv.tmp"
failed_handins=0
for handin in "${handins[@]}"; do
    name=$(basename "$handin")
    name=${name%.zip}; name=${name%.tgz}; name=${name%.tar.gz}; name=${name%.tar}
    dir="$work/$name"
    rm -rf "$dir"
    mkdir -p "$dir/handin"
    case "$handin" in
        *.zip) unzip -q "$handin" -d "$dir/handin" ;;
        *.tar | *.tar.gz | *.tgz) tar -xf "$handin" -C "$dir/handin" ;;
        *) if [ -d "$handin" ]; then cp -R "$handin/." "$dir/handin/"
           else echo "grade_handins.sh: $handin is neither a folder nor a .tar/.tar.gz/.tgz/.zip archive" >&2
                failed_handins=1; continue; fi ;;
    esac
    from=$(handin_root "$dir/handin")
    echo "== $name ($handin)"

    mkdir -p "$dir/src"
    tracked_files_tar | tar -xf - -C "$dir/src"
    while IFS='|' read -r rel exercise; do
        [ -n "$exercise" ] || continue
        body="$dir/$exercise.region"
        if [ -f "$from/$rel" ] && region_body "$from/$rel" "$exercise" > "$body"; then :; else
            indent=$(grep -m1 "// \[exercise:$exercise\]" "$root/$rel" | sed 's#//.*##')
            printf '%sthrow std::logic_error("exercise %s: not implemented yet (not handed in: no %s with its markers)");\n' \
                "$indent" "$exercise" "$rel" > "$body"
        fi
        put_region "$dir/src/$rel" "$exercise" "$body"
        grep -q '^#include <stdexcept>' "$dir/src/$rel" ||
            { printf '#include <stdexcept>  // for a stub in the hand-in\n' | cat - "$dir/src/$rel" > "$dir/src/$rel.tmp" &&
              mv "$dir/src/$rel.tmp" "$dir/src/$rel"; }
    done <<< "$selected"

    if ! cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
            "-DPATCHGRAD_EXERCISES=$selection" > "$dir/configure.log" 2>&1 ||
       ! cmake --build "$dir/build" -j "$(getconf _NPROCESSORS_ONLN 2> /dev/null || echo 2)" \
            --target patchgrad_tests64 patchgrad_grade > "$dir/build.log" 2>&1; then
        error=$(grep -m1 -E 'error:|Error' "$dir/configure.log" "$dir/build.log" | sed 's#.*/src/##' | cut -c1-200)
        while IFS='|' read -r rel exercise; do
            [ -n "$exercise" ] || continue
            printf '%s,%s,0,build failed,-,"%s"\n' "$name" "$exercise" "${error//\"/\"\"}" >> "$csv.tmp"
        done <<< "$selected"
        echo "   build failed: $error (log: $dir/build.log)"
        continue
    fi
    rm -f "$dir/build/grade/grades.csv"
    cmake --build "$dir/build" --target grade > "$dir/grade.log" 2>&1 || true
    if [ ! -f "$dir/build/grade/grades.csv" ]; then
        echo "grade_handins.sh: the grader wrote no table for $name (log: $dir/grade.log)" >&2
        failed_handins=1
        continue
    fi
    # exercise,file,tests,result,max_rel_error,first_failure -> student,exercise,tests,...
    tail -n +2 "$dir/build/grade/grades.csv" | sed -E -e "s/^([^,]*),[^,]*,/$name,\1,/" -e "s#$dir/src/##g" -e 's#(\.\./)+src/##g' >> "$csv.tmp"
    grep -E '^[0-9]+ of [0-9]+ exercises pass' "$dir/grade.log" | sed 's/^/   /'
done
mv "$csv.tmp" "$csv"

echo
# The table: CSV fields split by hand (quoted fields may hold commas), the failure cut short.
awk '{ n = 0; f = ""; q = 0
       for (i = 1; i <= length($0); i++) {
           c = substr($0, i, 1)
           if (q && c == "\"" && substr($0, i + 1, 1) == "\"") { f = f c; i++ }
           else if (c == "\"") q = !q
           else if (c == "," && !q) { v[NR, ++n] = f; f = "" }
           else f = f c }
       v[NR, ++n] = f
       for (i = 1; i <= 5; i++) if (length(v[NR, i]) > w[i]) w[i] = length(v[NR, i]) }
     END { for (r = 1; r <= NR; r++) {
               line = ""
               for (i = 1; i <= 5; i++) line = line sprintf("%-" w[i] "s  ", v[r, i])
               print line substr(v[r, 6], 1, 100) } }' "$csv"
echo
echo "grades: $csv (one folder per hand-in in $work: its sources, build and logs)"
exit $failed_handins
