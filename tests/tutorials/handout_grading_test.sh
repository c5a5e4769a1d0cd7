#!/usr/bin/env bash
# handout_grading_test.sh — the coursework tools end to end (CI runs it after the default
# build; it builds the tests once per hand-in, so it is not part of CTest):
#   - tutorials/tools/handout.sh writes a handout of chapter 04's exercises in which their
#     reference code appears nowhere, with a history of one commit; its leak check finds
#     reference code planted in it;
#   - tutorials/tools/grade_handins.sh grades three hand-ins in their own builds: the handout
#     as given (stubs: "not implemented"), a correct answer identical to the reference, sent
#     as an archive of student/ copies (every exercise "pass": an answer equal to the reference
#     is never taken for a stub), and a wrong GELU backward ("FAIL", its error large); the
#     hand-ins themselves are left unchanged.
#   bash tests/tutorials/handout_grading_test.sh [WORK_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d)}
rm -rf "$work"
mkdir -p "$work"
fail() { echo "handout_grading_test: $*" >&2; exit 1; }

# The handout.
"$root/tutorials/tools/handout.sh" --exercises 04 --out "$work/handout"
grep -q 'exercise gelu-backward: not implemented yet' "$work/handout/autograd/ops/gelu.cpp" ||
    fail "the handout's autograd/ops/gelu.cpp holds no stub"
[ "$(git -C "$work/handout" rev-list --count HEAD)" = 1 ] || fail "the handout's history is not one commit"
[ ! -e "$work/handout/student" ] || fail "the handout has a student/ folder"
[ "$(cat "$work/handout/tutorials/handout-exercises.txt")" = \
  "cross-entropy-backward,gelu-backward,layernorm-backward,matmul-backward,softmax-backward" ] ||
    fail "the handout records another selection: $(cat "$work/handout/tutorials/handout-exercises.txt")"
sed -n '/\[exercise:gelu-backward\]/,/\[\/exercise:gelu-backward\]/p' "$root/autograd/ops/gelu.cpp" \
    > "$work/handout/tutorials/notes.txt"
if "$root/tutorials/tools/handout.sh" --check "$work/handout" 2> "$work/check.log"; then
    fail "the leak check missed gelu-backward's reference code in tutorials/notes.txt"
fi
grep -q 'tutorials/notes.txt shows the reference code of exercise gelu-backward' "$work/check.log" ||
    fail "the leak check does not name the file and exercise: $(cat "$work/check.log")"
rm "$work/handout/tutorials/notes.txt"
"$root/tutorials/tools/handout.sh" --check "$work/handout"

# Three hand-ins.
mkdir -p "$work/in/stubs" "$work/in/exact/student/autograd/ops" "$work/in/wrong/autograd/ops"
cp -R "$work/handout/." "$work/in/stubs/"
rm -rf "$work/in/stubs/.git"
for f in gelu softmax layer_norm matmul cross_entropy; do cp "$root/autograd/ops/$f.cpp" "$work/in/exact/student/autograd/ops/"; done
(cd "$work/in" && tar -czf exact.tar.gz exact && rm -rf exact)
cp "$root/autograd/ops/gelu.cpp" "$work/in/wrong/autograd/ops/gelu.cpp"
sed -i.orig 's/dx\[i\] += dy\[i\] \* (cdf + v \* pdf);/dx[i] += dy[i] * (cdf - v * pdf);/' "$work/in/wrong/autograd/ops/gelu.cpp"
rm "$work/in/wrong/autograd/ops/gelu.cpp.orig"
grep -q 'cdf - v \* pdf' "$work/in/wrong/autograd/ops/gelu.cpp" || fail "could not plant the wrong GELU backward"
before=$(cd "$work/in" && find . -type f -exec cksum {} + | sort)

"$root/tutorials/tools/grade_handins.sh" --exercises 04 --work "$work/grading" \
    "$work/in/stubs" "$work/in/exact.tar.gz" "$work/in/wrong"
csv="$work/grading/grades.csv"
row() { grep "^$1,$2," "$csv" || fail "no row for $1 $2 in $csv"; }
for ex in cross-entropy-backward gelu-backward layernorm-backward matmul-backward softmax-backward; do
    row stubs "$ex" | grep -q ',not implemented,' || fail "stubs $ex is not 'not implemented': $(row stubs "$ex")"
    row exact "$ex" | grep -q ',pass,' || fail "an answer identical to the reference did not pass $ex: $(row exact "$ex")"
done
row wrong gelu-backward | grep -q ',FAIL' || fail "the wrong GELU backward passed: $(row wrong gelu-backward)"
row wrong gelu-backward | grep -qE ',[0-9.]+e-0[0-2],' || fail "the wrong GELU backward's error is not large: $(row wrong gelu-backward)"
row wrong matmul-backward | grep -q ',not implemented,.*not handed in' ||
    fail "a missing file is not graded 'not implemented', saying 'not handed in': $(row wrong matmul-backward)"
after=$(cd "$work/in" && find . -type f -exec cksum {} + | sort)
[ "$before" = "$after" ] || fail "grading changed a hand-in"
echo "handout_grading_test: handout without answers, three hand-ins graded as expected ($work)"
