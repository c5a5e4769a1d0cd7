#!/usr/bin/env bash
# tests/soak_kill_resume.sh — kills a training run at random moments and resumes it, again and
# again, then checks that it ends with exactly the weights of a run that was never interrupted.
# A manual soak test (not part of ctest: it needs CIFAR-10 and takes minutes); run it for as
# long as you like after touching checkpoints or the trainer:
#
#   bash tests/soak_kill_resume.sh --data DIR                            # 5 kills
#   bash tests/soak_kill_resume.sh --data DIR --rounds 50                # longer
#   PATCHGRAD=build-asan/patchgrad bash tests/soak_kill_resume.sh --data DIR
#
# After a first save, each round resumes the quick preset's run for 16 more steps (then saves)
# and sends it SIGKILL after a random 0.3-5.3 s: during the data loading, a step or a save.
# Every third round sends SIGHUP instead, which must save and stop. A resume that is refused, or final weights that differ from the
# uninterrupted run's by a single bit, fail the test. Prints "soak: N kills, weights identical".
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${PATCHGRAD:-build/patchgrad}
data=${PATCHGRAD_DATA:-}
rounds=5
steps=""
while (($#)); do
  case "$1" in
    --data) data=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "soak_kill_resume.sh: unknown argument '$1' (--data DIR, --rounds N, --steps S)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "soak_kill_resume.sh: no patchgrad binary at $bin (build it, or set PATCHGRAD=...)" >&2; exit 2; }
[ -n "$data" ] || { echo "soak_kill_resume.sh: say where CIFAR-10 is: --data DIR (or PATCHGRAD_DATA)" >&2; exit 2; }
steps=${steps:-$((2 + 16 * rounds + 8))}  # the rounds' saves, and a last stretch after them

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
train=("$bin" train --preset quick --data "$data" --threads 2)

# The tensors of a safetensors file: everything after the 8-byte length and the JSON header
# (whose metadata holds wall-clock times, which differ between runs).
tensor_bytes() {
  local header
  header=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
  tail -c +$((9 + header)) "$1"
}

echo "soak: the uninterrupted run ($steps steps)"
"${train[@]}" --max-steps "$steps" --out "$work/straight" > "$work/straight.log" 2>&1

# The interrupted run: a first save after 2 steps, then rounds that resume and save every few
# steps, each killed at a random moment.
"${train[@]}" --max-steps 2 --out "$work/killed" > "$work/start.log" 2>&1
kills=0
for ((round = 1; round <= rounds; ++round)); do
  target=$((2 + 16 * round < steps ? 2 + 16 * round : steps))
  "${train[@]}" --resume --max-steps "$target" --out "$work/killed" > "$work/round$round.log" 2>&1 &
  pid=$!
  sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.3 + 5 * r / 32767 }')"
  if ((round % 3 == 0)); then signal=HUP; else signal=KILL; fi
  if kill -s "$signal" "$pid" 2> /dev/null; then kills=$((kills + 1)); fi
  status=0
  wait "$pid" 2> /dev/null || status=$?
  # 0: done before the signal; 130: saved and stopped (SIGHUP); 137: killed. Anything else
  # is an error of patchgrad's own, a refused resume say.
  case $status in
    0 | 130 | 137) ;;
    *) echo "soak: round $round failed (exit $status):"; tail -n 3 "$work/round$round.log"; exit 1 ;;
  esac
  echo "soak: round $round: SIG$signal, exit $status: $(tail -n 1 "$work/round$round.log")"
done
"${train[@]}" --resume --max-steps "$steps" --out "$work/killed" > "$work/final.log" 2>&1 ||
  { echo "soak: the final resume failed:"; tail -n 5 "$work/final.log"; exit 1; }

if cmp -s <(tensor_bytes "$work/straight/last.safetensors") <(tensor_bytes "$work/killed/last.safetensors"); then
  echo "soak: $kills kills, weights identical"
else
  echo "soak: after $kills kills the weights differ from the uninterrupted run's" >&2
  exit 1
fi
