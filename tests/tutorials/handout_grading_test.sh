#!/usr/bin/env bash
# handout_grading_test.sh — the coursework tools end to end (CI runs it after the default
# build, whose patchgrad_probe judges: REFERENCE_BUILD; it builds each hand-in, so it is not part
# of CTest):
#   - tutorials/scripts/handout.sh writes a handout of chapter 04's exercises in which no line of
#     their reference code appears, nor their derivatives (the `// [hide:NAME]` blocks), nor
#     their mutations in tests/mutation/ (the others are kept, and found in the code), with a
#     history of one commit (linear there runs on the student's matmul); its leak check finds
#     one line of reference code planted in it; a handout of every exercise passes the same check;
#   - tutorials/scripts/grade_handins.sh grades three hand-ins: the handout as given (stubs: "not
#     implemented"), a correct answer identical to the reference, sent as an archive of student/
#     copies (every exercise "pass": an answer equal to the reference is never taken for a
#     stub), and a wrong GELU backward ("FAIL", its error large); the hand-ins themselves are
#     left unchanged. tests/tutorials/hostile_handins_test.sh tries the hostile ones.
#   bash tests/tutorials/handout_grading_test.sh [WORK_DIR [REFERENCE_BUILD]]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d)}
reference=${2:-}
rm -rf "$work"
mkdir -p "$work"
fail() { echo "handout_grading_test: $*" >&2; exit 1; }

# The handout.
"$root/tutorials/scripts/handout.sh" --exercises 04 --out "$work/handout"
grep -q 'exercise gelu-backward: not implemented yet' "$work/handout/autograd/ops/gelu.cpp" ||
    fail "the handout's autograd/ops/gelu.cpp holds no stub"
! grep -q 'Phi(x) + x phi(x)' "$work/handout/autograd/ops/gelu.cpp" || fail "the handout shows GELU's derivative"
grep -q 'it would give away exercise gelu-backward' "$work/handout/autograd/ops/gelu.cpp" ||
    fail "the handout's gelu.cpp does not say what it left out"
! grep -rq '\[/\{0,1\}hide:' "$work/handout/autograd" || fail "the handout kept hide markers"
! grep -rq '// \[handout:' "$work/handout/autograd" || fail "the handout kept a '// [handout:NAME]' line"
grep -q '^ *return linear_through_matmul(x, weight, bias, residual, norm);' "$work/handout/autograd/ops/linear.cpp" &&
    ! grep -q 'gemm(' "$work/handout/autograd/ops/linear.cpp" ||
    fail "the handout's linear.cpp keeps its gemm backward instead of the student's matmul"
! grep -q '^mutation: gelu exact' "$work/handout/tests/mutation/mutations.txt" ||
    fail "the handout's tests/mutation/mutations.txt keeps the mutations of exercise gelu-backward"
grep -q '^mutation: gelu tanh' "$work/handout/tests/mutation/mutations.txt" ||
    fail "the handout's tests/mutation/mutations.txt lost the mutations of code it shows"
if command -v python3 > /dev/null; then
    python3 "$work/handout/tests/mutation/mutate_backward.py" --list > /dev/null ||
        fail "the handout's mutations do not match its code (above)"
fi
[ "$(git -C "$work/handout" rev-list --count HEAD)" = 1 ] || fail "the handout's history is not one commit"
[ ! -e "$work/handout/student" ] || fail "the handout has a student/ folder"
[ "$(cat "$work/handout/tutorials/handout-exercises.txt")" = \
  "cross-entropy-backward,gelu-backward,layernorm-backward,matmul-backward,softmax-backward" ] ||
    fail "the handout records another selection: $(cat "$work/handout/tutorials/handout-exercises.txt")"
sed -n '/\[exercise:gelu-backward\]/,/\[\/exercise:gelu-backward\]/p' "$root/autograd/ops/gelu.cpp" | sed -n 6p |
    sed 's/^ */    note:/' > "$work/handout/tutorials/notes.txt"
if "$root/tutorials/scripts/handout.sh" --check "$work/handout" 2> "$work/check.log"; then
    fail "the leak check missed a line of gelu-backward's reference code in tutorials/notes.txt"
fi
grep -q 'tutorials/notes.txt:1 shows the reference code of exercise gelu-backward' "$work/check.log" ||
    fail "the leak check does not name the file and exercise: $(cat "$work/check.log")"
rm "$work/handout/tutorials/notes.txt"
"$root/tutorials/scripts/handout.sh" --check "$work/handout"
# Every exercise at once: nothing in the whole repository gives one away.
"$root/tutorials/scripts/handout.sh" --exercises all --out "$work/handout-all" > /dev/null ||
    fail "a handout of every exercise gives answers away (above)"

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

grade=("$root/tutorials/scripts/grade_handins.sh" --exercises 04 --work "$work/grading" -j 2)
if [ -n "$reference" ]; then grade+=(--reference-build "$reference"); fi
"${grade[@]}" "$work/in/stubs" "$work/in/exact.tar.gz" "$work/in/wrong"
csv="$work/grading/grades.csv"
row() { grep "^\"$1\",$2," "$csv" || fail "no row for $1 $2 in $csv"; }
for ex in cross-entropy-backward gelu-backward layernorm-backward matmul-backward softmax-backward; do
    row stubs "$ex" | grep -q ',not implemented,' || fail "stubs $ex is not 'not implemented': $(row stubs "$ex")"
    row exact "$ex" | grep -q ',pass,1,1,' || fail "an answer identical to the reference did not pass $ex: $(row exact "$ex")"
done
row exact TOTAL | grep -q ',5,5,' || fail "the exact answer's total is not 5 of 5: $(row exact TOTAL)"
row wrong gelu-backward | grep -q ',FAIL,' || fail "the wrong GELU backward passed: $(row wrong gelu-backward)"
row wrong gelu-backward | grep -qE ',[0-9.]+e(-0[0-2]|\+[0-9]+),' || fail "the wrong GELU backward's error is not large: $(row wrong gelu-backward)"
row wrong matmul-backward | grep -q ',not implemented,.*not handed in' ||
    fail "a missing file is not graded 'not implemented', saying 'not handed in': $(row wrong matmul-backward)"
after=$(cd "$work/in" && find . -type f -exec cksum {} + | sort)
[ "$before" = "$after" ] || fail "grading changed a hand-in"
echo "handout_grading_test: handouts without answers, three hand-ins graded as expected ($work)"
