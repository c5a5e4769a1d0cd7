#!/usr/bin/env bash
# tests/scripts/soak_kill_resume.sh — kills a training run at random moments and resumes it,
# again and again, then checks that it ends with exactly the weights of a run that was never interrupted.
# A manual soak test (not part of ctest: it needs CIFAR-10 and takes minutes); run it for as
# long as you like after touching checkpoints or the trainer:
#
#   bash tests/scripts/soak_kill_resume.sh --data DIR                    # 5 rounds
#   bash tests/scripts/soak_kill_resume.sh --data DIR --rounds 50        # longer
#   PATCHGRAD=build-asan/patchgrad bash tests/scripts/soak_kill_resume.sh --data DIR
#
# After a first save, each round resumes the quick preset's run for 16 more steps (then saves)
# and sends it SIGKILL after a random 0.3-5.3 s: during the data loading, a step or a save.
# Every third round sends SIGHUP instead, which must save and stop. Every other round also
# starts a second run into the same folder at a random moment (a --resume of it, or a new run
# with another --lr), which must be refused naming the first's process id, or, once the first
# has ended, resume it or be told the folder holds a run. Every fifth round, a run of its own
# whose first step makes the weights infinite (--lr 1e39) gets Ctrl-C right after that step:
# it must fail saying training diverged, and leave its last save as it was and loadable.
# A resume that is refused, an outcome other than these, or final weights that differ from the
# uninterrupted run's by a single bit fail the test. Prints "soak: N signals, M second runs
# refused, K diverged runs stopped, weights identical".
set -euo pipefail
cd "$(dirname "$0")/../.."

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

fail() {
  echo "soak: $1" >&2
  [ $# -lt 2 ] || tail -n 5 "$2" >&2
  exit 1
}

# A random number of seconds from $1 to $1 + $2, two decimals.
random_seconds() { awk -v r="$RANDOM" -v low="$1" -v span="$2" 'BEGIN { printf "%.2f", low + span * r / 32767 }'; }

# The tensors of a safetensors file: everything after the 8-byte length and the JSON header
# (whose metadata holds wall-clock times, which differ between runs).
tensor_bytes() {
  local header
  header=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
  tail -c +$((9 + header)) "$1"
}

# A one-pixel picture, for `predict` to load a checkpoint with.
printf 'P6 1 1 255\n\000\000\000' > "$work/pixel.ppm"

# The diverging run: its last save is a process stopped by Ctrl-C before its first step (tried
# again when the signal came before the program could catch it). Then a second process gets Ctrl-C
# as soon as it has printed where it resumes, so during its first step, which makes the
# weights infinite: it must fail (exit 1) saying training diverged, having saved nothing, and
# leave the last save as it was, still loadable. (A signal that arrives before the step ends
# the process with a save at step 0, which is tried again; one that arrives after it lets the
# second step fail on its loss, also exit 1 and nothing saved.)
diverge() {
  local dir=$work/diverge log=$work/diverge.log pid status before after wait_s attempt
  local run=("${train[@]}" --lr 1e39 --warmup 0 --log-every 1 --out "$dir")
  for wait_s in 0.4 0.25 0.15 0.1 0.05 0.02; do
    rm -rf "$dir"
    "${run[@]}" > "$log" 2>&1 &
    pid=$!
    sleep "$wait_s"
    kill -INT "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    [ ! -f "$dir/last.state.safetensors" ] || break
  done
  [ -f "$dir/last.state.safetensors" ] || fail "the diverging run never saved before its first step" "$log"
  for attempt in 1 2 3 4 5; do
    before=$(cksum "$dir/last.safetensors" "$dir/last.state.safetensors")
    "${run[@]}" --resume > "$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2> /dev/null && ! grep -q "^resuming from" "$log"; do sleep 0.005; done
    kill -INT "$pid" 2> /dev/null || true
    status=0
    wait "$pid" 2> /dev/null || status=$?
    [ "$status" != 130 ] || continue  # stopped before the step, a new save at step 0
    if [ "$status" != 1 ] || ! grep -q "training diverged" "$log"; then
      fail "the diverging run ended with exit $status, not 1 and 'training diverged'" "$log"
    fi
    after=$(cksum "$dir/last.safetensors" "$dir/last.state.safetensors")
    [ "$before" = "$after" ] || fail "the diverging run changed its last save" "$log"
    "$bin" predict --checkpoint "$dir/last.state.safetensors" "$work/pixel.ppm" > "$work/predict.log" 2>&1 ||
      fail "the diverging run's last save no longer loads" "$work/predict.log"
    if grep -q "so nothing is saved" "$log"; then diverge_how="stopped right after its first step"; else
      diverge_how="failed on the loss of its second step"; fi
    return 0
  done
  fail "the diverging run stopped before its first step $attempt times" "$log"
}

echo "soak: the uninterrupted run ($steps steps)"
"${train[@]}" --max-steps "$steps" --out "$work/straight" > "$work/straight.log" 2>&1

# The interrupted run: a first save after 2 steps, then rounds that resume and save every few
# steps, each killed at a random moment.
"${train[@]}" --max-steps 2 --out "$work/killed" > "$work/start.log" 2>&1
signals=0 refused=0 diverged=0
for ((round = 1; round <= rounds; ++round)); do
  target=$((2 + 16 * round < steps ? 2 + 16 * round : steps))
  log=$work/round$round.log
  "${train[@]}" --resume --max-steps "$target" --out "$work/killed" > "$log" 2>&1 &
  pid=$!
  second=""
  if ((round % 2 == 1)); then
    if ((round % 4 == 1)); then
      second_run=(--resume --max-steps "$target")  # the same command again
    else
      second_run=(--lr 0.002)  # a new run with another recipe
    fi
    (
      sleep "$(random_seconds 0 3)"
      exec "${train[@]}" "${second_run[@]}" --out "$work/killed"
    ) > "$work/second$round.log" 2>&1 &
    second=$!
  fi
  sleep "$(random_seconds 0.3 5)"
  if ((round % 3 == 0)); then signal=HUP; else signal=KILL; fi
  if kill -s "$signal" "$pid" 2> /dev/null; then signals=$((signals + 1)); fi
  status=0
  wait "$pid" 2> /dev/null || status=$?
  # 0: done before the signal; 130: saved and stopped (SIGHUP); 137: killed; 1: refused because
  # the second run locked the folder first. Anything else is an error of patchgrad's own, a
  # refused resume say.
  outcome=""
  case $status in
    0 | 130 | 137) ;;
    1)
      if [ -z "$second" ] || ! grep -q "in use by another patchgrad train (process $second)" "$log"; then
        fail "round $round failed (exit $status):" "$log"
      fi
      outcome="; refused: the second run locked the folder first"
      ;;
    *) fail "round $round failed (exit $status):" "$log" ;;
  esac
  if [ -n "$second" ]; then
    second_status=0
    wait "$second" 2> /dev/null || second_status=$?
    second_log=$work/second$round.log
    if [ "$second_status" = 1 ] && grep -q "in use by another patchgrad train (process $pid)" "$second_log"; then
      refused=$((refused + 1))
      outcome="$outcome; second run refused"
    elif [ "$second_status" = 1 ] && [ "${second_run[0]}" = --lr ] && grep -q "holds a run" "$second_log"; then
      outcome="$outcome; second run came after the first: told the folder holds a run"
    elif [ "$second_status" = 0 ] && [ "${second_run[0]}" = --resume ]; then
      outcome="$outcome; second run came after the first: resumed it"
    else
      fail "round $round: the second run ended with exit $second_status:" "$second_log"
    fi
  fi
  echo "soak: round $round: SIG$signal, exit $status$outcome: $(tail -n 1 "$log")"
  if ((round % 5 == 0)); then
    diverge
    diverged=$((diverged + 1))
    echo "soak: round $round: a diverging run $diverge_how, its last save kept"
  fi
done
"${train[@]}" --resume --max-steps "$steps" --out "$work/killed" > "$work/final.log" 2>&1 ||
  fail "the final resume failed:" "$work/final.log"

if cmp -s <(tensor_bytes "$work/straight/last.safetensors") <(tensor_bytes "$work/killed/last.safetensors"); then
  echo "soak: $signals signals, $refused second runs refused, $diverged diverged runs stopped, weights identical"
else
  fail "after $signals signals the weights differ from the uninterrupted run's"
fi
