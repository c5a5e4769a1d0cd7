#!/usr/bin/env bash
# hostile_handins_test.sh — tutorials/scripts/grade_handins.sh against hand-ins that try to fool
# it, harm it or stop it, each with the verdict it must get, beside honest ones that keep
# theirs (CI runs it after the default build, whose patchgrad_probe judges: REFERENCE_BUILD):
#   - refused before anything is deleted or graded: a hand-in named .tar (an empty name), two
#     archives both named handin.zip, alice and dup/alice, a --work folder that is not the
#     grader's;
#   - one graded class (exercises gelu-backward and softmax-backward, named by a roster, with
#     weights, two at a time): a right answer "pass" (with the full points in its TOTAL row),
#     a wrong one "FAIL", the stub "not implemented", a missing file "not handed in", a forged
#     output written from the backward before an early exit "FAIL", the same from code that runs
#     when the program loads "FAIL", an endless loop "time limit", a backward by finite
#     differences "FAIL" as numerical, one by finite differences of the op itself and one that
#     calls backward() "FAIL" saying so, a
#     damaged .tar.gz and a text file named .zip "unreadable hand-in", two handin.zip told
#     apart by the roster, and names with spaces, '#', '&' and quotes quoted in the CSV;
#   - a hand-in that runs a script from its backward to rewrite the other students' rows, read
#     and delete the teacher's files and reach the network: where unshare works (the grader
#     says "isolation: unshare"), the teacher's files, the other rows and grades.csv stay as
#     they were and the hand-in grades on its numbers ("pass").
#   bash tests/tutorials/hostile_handins_test.sh WORK_DIR [REFERENCE_BUILD]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d)}
reference=${2:-}
rm -rf "$work"
mkdir -p "$work/in" "$work/teacher"
work=$(cd "$work" && pwd)
fail() { echo "hostile_handins_test: $*" >&2; exit 1; }
grade=(bash "$root/tutorials/scripts/grade_handins.sh" --exercises "gelu-backward,softmax-backward" --run-timeout 5)
if [ -n "$reference" ]; then grade+=(--reference-build "$reference"); fi

# A copy of FILE (under autograd/ops/) whose region NAME holds the lines of BODY instead.
with_region() {  # with_region FILE NAME BODY OUT
    mkdir -p "$(dirname "$4")"
    BODY=$3 awk -v name="$2" '
        $0 ~ "// \\[exercise:" name "\\]" { print; printf "%s\n", ENVIRON["BODY"]; skip = 1; next }
        $0 ~ "// \\[/exercise:" name "\\]" { skip = 0 }
        !skip { print }' "$root/$1" > "$4"
}
gelu() { with_region autograd/ops/gelu.cpp gelu-backward "$1" "$2/autograd/ops/gelu.cpp"; }
softmax() { with_region autograd/ops/softmax.cpp softmax-backward "$1" "$2/autograd/ops/softmax.cpp"; }
reference_gelu=$(sed -n '/\[exercise:gelu-backward\]/,/\[\/exercise:gelu-backward\]/p' "$root/autograd/ops/gelu.cpp" | sed '1d;$d')
forge='        {
            char cmd[4096] = {0};
            std::FILE* f = std::fopen("/proc/self/cmdline", "rb");
            const size_t len = f ? std::fread(cmd, 1, sizeof cmd - 1, f) : 0;
            const char* arg[8] = {nullptr};
            int count = 0;
            for (size_t at = 0; at < len && count < 8; at += std::strlen(cmd + at) + 1) arg[count++] = cmd + at;
            if (count >= 5) {
                std::FILE* out = std::fopen(arg[4], "w");
                std::fprintf(out, "patchgrad-probe 1\nexercise gelu-backward\nseed %s\nend 0\n", arg[3]);
                std::fclose(out);
            }
            std::_Exit(0);
        }'

# ---- refusals: nothing graded, nothing deleted --------------------------------------------------
mkdir -p "$work/grading"
touch "$work/grading/.patchgrad-grading"
echo "last week's grades" > "$work/grading/keep.txt"
mkdir -p "$work/in/ok/autograd/ops" "$work/in/dup/alice" "$work/in/alice" "$work/in/a" "$work/in/b"
gelu "$reference_gelu" "$work/in/ok"
tar -cf "$work/in/.tar" -C "$work/in" ok
(cd "$work/in/ok" && cmake -E tar cf ../a/handin.zip --format=zip . && cp ../a/handin.zip ../b/handin.zip)
refused() {  # refused WHAT EXPECTED-MESSAGE ARGS...
    local what=$1 message=$2
    shift 2
    if "${grade[@]}" --work "$work/grading" "$@" > "$work/refused.log" 2>&1; then fail "$what was not refused"; fi
    grep -q "$message" "$work/refused.log" || fail "$what: no \"$message\": $(cat "$work/refused.log")"
    [ "$(cat "$work/grading/keep.txt")" = "last week's grades" ] || fail "$what deleted a file of the work folder"
}
refused "a hand-in named .tar" "gives an empty student name" "$work/in/ok" "$work/in/.tar"
refused "two handin.zip" "given by more than one hand-in" "$work/in/a/handin.zip" "$work/in/b/handin.zip"
refused "alice and dup/alice" "'alice': .*dup/alice" "$work/in/alice" "$work/in/dup/alice"
mkdir -p "$work/foreign" && echo mine > "$work/foreign/notes.txt"
if "${grade[@]}" --work "$work/foreign" "$work/in/ok" > "$work/refused.log" 2>&1 ||
   ! grep -q "holds files this script did not make" "$work/refused.log"; then
    fail "a --work folder holding other files was not refused: $(cat "$work/refused.log")"
fi

# ---- the class ------------------------------------------------------------------------------------
h="$work/in"
gelu "$reference_gelu" "$h/right"
softmax "$(sed -n '/\[exercise:softmax-backward\]/,/\[\/exercise:softmax-backward\]/p' "$root/autograd/ops/softmax.cpp" | sed '1d;$d')" "$h/right"
gelu "${reference_gelu/cdf + v \* pdf/cdf - v * pdf}" "$h/wrong"
grep -q 'cdf - v \* pdf' "$h/wrong/autograd/ops/gelu.cpp" || fail "could not plant the wrong GELU backward"
gelu '        throw std::logic_error("exercise gelu-backward: not implemented yet (autograd/ops/gelu.cpp)");' "$h/stub"
mkdir -p "$h/empty" && echo "I forgot the code" > "$h/empty/README.txt"
gelu "$forge" "$h/forged"
gelu "$reference_gelu
    }
}
struct Forger {
    Forger() {
$forge
    }
} forger_at_load;
[[maybe_unused]] void unused_tail(const real* xd, const real* dy, real* dx, int64_t n, bool exact) {
    if (exact) {" "$h/loadtime"
gelu '        volatile bool spin = true;
        while (spin) {
        }' "$h/spin"
gelu '        for (int64_t i = 0; i < n; ++i) {
            const auto f = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
            const double h = 1e-5;
            dx[i] += dy[i] * (f(xd[i] + h) - f(xd[i] - h)) / (2 * h);
        }' "$h/numerical"
gelu '        {
            // Central differences through the op itself, on the whole tensor at once.
            const Tensor x = Tensor::from_vector({n}, std::vector<real>(xd, xd + n));
            const real h = real(1e-5);
            const Tensor slope = (gelu(x + h) - gelu(x - h)) / (2 * h);
            for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * slope.data()[i];
        }' "$h/numerical-ops"
softmax '            {
                std::vector<real> logits(yr, yr + n);
                for (real& z : logits) z = std::log(z);
                Tensor t = Tensor::from_vector({n}, logits, true);
                const Tensor e = exp(t);
                Tensor s = e / sum(e);
                s.backward(Tensor::from_vector({n}, std::vector<real>(dyr, dyr + n)));
                for (int64_t i = 0; i < n; ++i) dxr[i] += t.grad().data()[i];
            }' "$h/engine"
printf 'a secret\n' > "$work/teacher/secret.txt"
printf 'precious\n' > "$work/teacher/precious.txt"
gelu "        static const int tampered = std::system(\"sh unpack/evil.sh > unpack/evil.log 2>&1\");
        (void)tampered;
$reference_gelu" "$h/tamper"
cat > "$h/tamper/evil.sh" <<EOF
for f in "$work"/grading/handins/*/rows.csv; do echo '"victim",gelu-backward,FAIL,0,2,-,"tampered"' > "\$f"; done
echo '"intruder",gelu-backward,pass,2,2,-,' >> "$work/grading/grades.csv"
cat "$work/teacher/secret.txt" > stolen.txt
rm -f "$work/teacher/precious.txt"
echo pwned > "$work/teacher/pwned.txt"
bash -c 'echo hello > /dev/tcp/1.1.1.1/80' && echo "network reached" > network.txt
EOF
(cd "$h/right" && tar -czf ../damaged.tar.gz . && head -c 300 ../damaged.tar.gz > ../damaged.tmp && mv ../damaged.tmp ../damaged.tar.gz)
echo "not a zip at all" > "$h/erin.zip"
(cd "$h/wrong" && cmake -E tar cf "$h/b/handin.zip" --format=zip .)
# Without isolation the tampering hand-in would succeed (grade_handins.sh says so): left out then.
isolated=0
if [ "$(bash "$root/tutorials/scripts/sandbox.sh" --check)" = isolated ]; then isolated=1; fi
roster="$work/roster.tsv"
{
    echo "# student<TAB>hand-in"
    printf 'amp&co\t%s\n' "$h/right"
    printf 'o'"'"'brien "x"\t%s\n' "$h/wrong"
    printf 'with space\t%s\n' "$h/stub"
    printf 'hash#1\t%s\n' "$h/empty"
    printf 'forged\t%s\n' "$h/forged"
    printf 'loadtime\t%s\n' "$h/loadtime"
    printf 'spin\t%s\n' "$h/spin"
    printf 'numerical\t%s\n' "$h/numerical"
    printf 'numerical-ops\t%s\n' "$h/numerical-ops"
    printf 'engine\t%s\n' "$h/engine"
    if [ "$isolated" = 1 ]; then printf 'tamper\t%s\n' "$h/tamper"; fi
    printf 'damaged\t%s\n' "$h/damaged.tar.gz"
    printf 'erin\t%s\n' "$h/erin.zip"
    printf 'ann\t%s\n' "$h/a/handin.zip"
    printf 'ben\t%s\n' "$h/b/handin.zip"
} > "$roster"
printf 'gelu-backward 2\nsoftmax-backward 3\n' > "$work/weights.txt"
before=$(cd "$h" && find . -type f -exec cksum {} + | sort)
"${grade[@]}" --work "$work/grading" -j 2 --roster "$roster" --weights "$work/weights.txt" | tee "$work/grade.log"
csv="$work/grading/grades.csv"

row() {  # row STUDENT-AS-IN-THE-CSV EXERCISE: the row, or fail
    grep -F "$1,$2," "$csv" || fail "no row for $1 $2 in $csv: $(cat "$csv")"
}
expect() {  # expect STUDENT EXERCISE TEXT...: the row holds every TEXT
    local r t
    r=$(row "$1" "$2")
    shift 2
    for t in "$@"; do [[ "$r" == *"$t"* ]] || fail "expected '$t' in: $r"; done
}
expect '"amp&co"' gelu-backward ',pass,2,2,'
expect '"amp&co"' softmax-backward ',pass,3,3,'
expect '"amp&co"' TOTAL ',5,5,'
expect '"o'"'"'brien ""x"""' gelu-backward ',FAIL,0,2,' 'is wrong'
expect '"with space"' gelu-backward ',not implemented,0,2,'
expect '"hash#1"' gelu-backward ',not implemented,' 'not handed in'
expect '"hash#1"' softmax-backward ',not implemented,' 'not handed in'
expect '"forged"' gelu-backward ',FAIL,'
expect '"loadtime"' gelu-backward ',FAIL,'
expect '"loadtime"' softmax-backward ',FAIL,'
expect '"spin"' gelu-backward ',time limit,' 'time limit of 5 s'
expect '"numerical"' gelu-backward ',FAIL,' 'numerical derivative'
expect '"numerical-ops"' gelu-backward ',FAIL,' 'calls forward ops'
expect '"engine"' softmax-backward ',FAIL,' 'calls backward()'
expect '"damaged"' gelu-backward ',unreadable hand-in,'
expect '"erin"' softmax-backward ',unreadable hand-in,'
expect '"ann"' gelu-backward ',pass,'
expect '"ben"' gelu-backward ',FAIL,'
[ "$(grep -c ',TOTAL,' "$csv")" = $((14 + isolated)) ] || fail "not one TOTAL row per student: $(grep ',TOTAL,' "$csv")"
after=$(cd "$h" && find . -type f -exec cksum {} + | sort)
[ "$before" = "$after" ] || fail "grading changed a hand-in"

if [ "$isolated" = 1 ]; then
    grep -q '^isolation: unshare' "$work/grade.log" || fail "unshare works here, but the grader did not use it"
    expect '"tamper"' gelu-backward ',pass,'
    [ -f "$work/teacher/precious.txt" ] || fail "the tampering hand-in deleted a teacher's file"
    [ ! -e "$work/teacher/pwned.txt" ] || fail "the tampering hand-in wrote into the teacher's folder"
    ! grep -rq "a secret" "$work/grading/handins" || fail "the tampering hand-in read a teacher's file"
    ! grep -q 'tampered\|intruder' "$csv" || fail "the tampering hand-in changed the grades"
    ! find "$work/grading/handins" -name network.txt | grep -q . || fail "the tampering hand-in reached the network"
    find "$work/grading/handins" -name evil.log | grep -q . || fail "the tampering script never ran (no evil.log)"
    echo "hostile_handins_test: the tampering hand-in ran isolated and harmed nothing"
else
    grep -q '^isolation: NONE' "$work/grade.log" || fail "the grader did not say that it ran without isolation"
    echo "hostile_handins_test: SKIPPED the tampering hand-in: unshare is refused here, so grade_handins.sh" \
         "runs the students' code without isolation (and says so)"
fi
echo "hostile_handins_test: refusals, $((14 + isolated)) hand-ins graded as expected ($work)"
