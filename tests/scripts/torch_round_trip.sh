#!/usr/bin/env bash
# tests/scripts/torch_round_trip.sh — a run moves from patchgrad to PyTorch (vit/scripts/train_torch.py,
# two processes under torchrun, gloo on the CPU) and back, and continues as if it had never left:
#
#   bash tests/scripts/torch_round_trip.sh PATCHGRAD [WORKDIR]
#
# On a small synthetic data set in CIFAR-10's binary format (written here: 200 training and
# 100 test images of 10 classes, class-coloured noise), with a small model and a recipe whose draws
# both sides share (crop-flip, a moving average, sequence pooling, flip TTA; no erasing, mixup,
# stochastic depth or patch dropout), 8 steps per epoch:
#   1. patchgrad trains 20 steps (stopping inside epoch 3) and, alone, continues to 40 and 60;
#   2. train_torch.py on 2 processes continues the step-20 checkpoint to step 40, and again on
#      1 process: the two must agree to float rounding;
#   3. train_torch.py refuses, naming the reason, a checkpoint of another width, a batch that 3
#      processes cannot share and an --out that holds a run;
#   4. patchgrad resumes the 2-process run's checkpoint to step 60.
# The handed-over runs must match patchgrad's own at steps 40 and 60 (running loss, metrics.csv,
# weights, optimizer state) to float rounding, and `patchgrad eval` on PyTorch's checkpoint must
# report the test accuracy train_torch.py reported. Without PyTorch it prints
# "skipped: no PyTorch" (ctest lists it as skipped).
set -euo pipefail
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null &&
    "$candidate" -c "import torch, torch.distributed as d; assert d.is_available()" 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: no PyTorch (python3 -c 'import torch' fails; Debian: apt-get install python3-torch)"
  exit 0
fi
work=${2:-$(mktemp -d)}
[ -n "${2:-}" ] || trap 'rm -rf "$work"' EXIT
rm -rf "$work" && mkdir -p "$work"
cd "$work"
echo "round trip in $work with $python ($("$python" -c 'import torch; print("PyTorch", torch.__version__)'))"

"$python" - data <<'PY'
import os, random, sys
# Each image: its class's colour plus noise, so that a few steps learn something.
rng, out = random.Random(1), sys.argv[1]
os.makedirs(out)
def records(n):
    data = bytearray()
    for i in range(n):
        label = i % 10
        colour = [(label * 25 + 40 * c) % 256 for c in range(3)]
        data.append(label)
        for c in range(3):
            data += bytes(min(255, max(0, colour[c] + rng.randint(-60, 60))) for _ in range(1024))
    return data
for i in range(1, 6):
    open(os.path.join(out, "data_batch_%d.bin" % i), "wb").write(records(40))
open(os.path.join(out, "test_batch.bin"), "wb").write(records(100))
PY

recipe=(--preset quick --dim 32 --depth 2 --heads 2 --mlp 64 --epochs 8 --batch 20 --validation 50
  --patch-dropout 0 --ema 0.99 --seed 3)
pg_train() { "$bin" train --data data --threads 1 --log-every 1000 "$@" 2>&1 | grep -v "^threads:" || exit 1; }
torch_train() { "$python" "$root/vit/scripts/train_torch.py" --patchgrad "$bin" --data data --device cpu "$@"; }

echo "== patchgrad: steps 1-20, then alone to 40 and 60"
pg_train "${recipe[@]}" --out pg --max-steps 20
cp -r pg pg20
pg_train --resume --out pg --max-steps 40
cp -r pg pg40
pg_train --resume --out pg --max-steps 60

echo "== PyTorch, 2 processes (torchrun, gloo): steps 21-40 from patchgrad's step-20 checkpoint"
# (--redirects 1 --tee 1: torchrun's default of no redirection fails with PyTorch 1.13 on Python 3.11,
# Debian 12's python3-torch; the processes' output then reaches the console through the tee.)
OMP_NUM_THREADS=1 "$python" -m torch.distributed.run --standalone --nproc_per_node 2 --redirects 1 --tee 1 \
  "$root/vit/scripts/train_torch.py" --patchgrad "$bin" --data data --device cpu \
  --init-from pg20/last.safetensors --resume-recipe --out torch2 --max-steps 40 | tee torch2.log
echo "== PyTorch, 1 process: the same steps"
torch_train --init-from pg20/last.safetensors --resume-recipe --out torch1 --max-steps 40 | tee torch1.log

echo "== PyTorch refuses, saying why: another architecture, a batch 3 processes cannot share, a used --out"
refused() {  # refused TEXT COMMAND...: COMMAND fails, and its output says TEXT
  local text=$1
  shift
  if "$@" >refused.log 2>&1; then
    echo "FAILED: $* ran; it must refuse (\"$text\")"
    exit 1
  fi
  grep -qF -- "$text" refused.log || { echo "FAILED: $* did not say \"$text\":"; cat refused.log; exit 1; }
  echo "refused: $text"
}
wider=("${recipe[@]:2}")  # the recipe without "--preset quick" (train_torch.py adds --preset) ...
wider[1]=48               # ... and with --dim 48 in place of 32
refused "config dim 32 in the checkpoint, 48 in the recipe" \
  torch_train --init-from pg20/last.safetensors --out wider --max-steps 21 -- "${wider[@]}"
refused "the batch of 20 images does not divide among 3 processes" \
  env OMP_NUM_THREADS=1 "$python" -m torch.distributed.run --standalone --nproc_per_node 3 --redirects 1 --tee 1 \
  "$root/vit/scripts/train_torch.py" --patchgrad "$bin" --data data --device cpu \
  --init-from pg20/last.safetensors --resume-recipe --out torch3 --max-steps 21
refused "--out torch1 holds a run" \
  torch_train --init-from pg20/last.safetensors --resume-recipe --out torch1 --max-steps 40

echo "== patchgrad: steps 41-60 from PyTorch's step-40 checkpoint"
cp -r torch2 back
pg_train --resume --out back --max-steps 60

echo "== patchgrad eval on PyTorch's checkpoint"
"$bin" eval --checkpoint torch2/last.safetensors --data data --threads 1 | tee eval.log

"$python" - "$root/vit/scripts" <<'PY'
import re, sys
sys.path.insert(0, sys.argv[1])
from load_checkpoint_torch import read_safetensors as load

# Sequence pooling's softmax over the tokens does not change when one number is added to every
# score: attention_pool.bias has no effect and a gradient of rounding noise, which Adam turns into
# steps of the learning rate's size, different in any two engines. Its tensors are left out.
def max_difference(a, b):
    assert sorted(a) == sorted(b), "different tensors: %s" % sorted(set(a) ^ set(b))
    ineffective = lambda name: name.endswith("attention_pool.bias") or name.startswith("optimizer.state.%d." % bias)
    return max((a[k] - b[k]).abs().max().item() / max(1.0, b[k].abs().max().item()) for k in a if not ineffective(k))

def running_loss(meta):
    seen = int(meta["state.seen"])
    return float(meta["state.loss_sum"]) / seen if seen else float("nan")

def rows(path):
    lines = open(path).read().split("\n")[1:]
    return [line.split(",") for line in lines if line]

TOLERANCE = 1e-4  # relative, as the parity tests' gradients (tests/vit/test_vit_golden_f32.cpp)
failures = []
def check(what, difference):
    print("%-62s %.3g" % (what, difference))
    if not difference <= TOLERANCE:
        failures.append(what)

pg20, pg40, pg60 = (load("%s/last.state.safetensors" % d) for d in ("pg20", "pg40", "pg"))
from load_checkpoint_torch import config_from
from make_golden import ViT
from train_torch import patchgrad_order
bias = patchgrad_order(ViT(config_from(pg20[1]))).index("attention_pool.bias")  # its optimizer.state.<i>
t1, t2, back = (load("%s/last.state.safetensors" % d) for d in ("torch1", "torch2", "back"))
for name, (_, meta) in (("patchgrad 20", pg20), ("patchgrad 40", pg40), ("PyTorch 40 (2 processes)", t2),
                        ("PyTorch 40 (1 process)", t1), ("patchgrad 60", pg60), ("patchgrad 60 after PyTorch", back)):
    print("%-28s global step %s, epoch %d step %s, loss of the epoch's steps so far %.6f" % (
        name, meta["state.global_step"], int(meta["state.epoch"]) + 1, meta["state.step_in_epoch"],
        running_loss(meta)))
for step, (a, b) in ((40, (t2, pg40)), (60, (back, pg60))):
    assert a[1]["state.global_step"] == b[1]["state.global_step"] == str(step)
    assert {k: v for k, v in a[1].items() if k.startswith("config.")} == \
        {k: v for k, v in b[1].items() if k.startswith("config.")}
    check("step %d: weights, optimizer state, average vs patchgrad alone" % step, max_difference(a[0], b[0]))
    for field in ("loss_sum", "correct"):
        x, y = float(a[1]["state." + field]), float(b[1]["state." + field])
        check("step %d: state.%s vs patchgrad alone" % (step, field), abs(x - y) / max(1.0, abs(y)))
check("PyTorch step 40: 2 processes vs 1 process (weights, optimizer state)", max_difference(t2[0], t1[0]))
check("PyTorch step 40: running loss, 2 vs 1 process",
      abs(running_loss(t2[1]) - running_loss(t1[1])) if t2[1]["state.seen"] != "0" else
      abs(float(t2[1]["state.loss_sum"]) - float(t1[1]["state.loss_sum"])))

# metrics.csv, epoch by epoch: the handed-over run's against patchgrad's own.
ours, theirs = rows("back/metrics.csv"), rows("pg/metrics.csv")
assert [r[0] for r in ours] == [r[0] for r in theirs] == [str(e) for e in range(1, 8)], (ours, theirs)
for a, b in zip(ours, theirs):
    print("epoch %s: train loss %s (patchgrad alone %s), validation loss %s (%s), accuracy %s (%s)" % (
        a[0], a[3], b[3], a[6], b[6], a[7], b[7]))
    for column, name in ((3, "train_loss"), (6, "eval_loss")):
        check("metrics.csv epoch %s %s vs patchgrad alone" % (a[0], name),
              abs(float(a[column]) - float(b[column])) / max(1.0, abs(float(b[column]))))
    if a[7] != b[7]:
        failures.append("metrics.csv epoch %s eval_acc %s, patchgrad alone %s" % (a[0], a[7], b[7]))

# patchgrad eval on the checkpoint PyTorch wrote: the accuracy train_torch.py reported.
reported = re.search(r"test accuracy ([0-9.]+)%", open("torch2.log").read()).group(1)
evaluated = re.search(r"accuracy ([0-9.]+)%", open("eval.log").read()).group(1)
print("test accuracy: train_torch.py %s%%, patchgrad eval %s%%" % (reported, evaluated))
if reported != evaluated:
    failures.append("test accuracy: train_torch.py %s%%, patchgrad eval %s%%" % (reported, evaluated))
if failures:
    sys.exit("FAILED: " + "; ".join(failures))
print("round trip: PyTorch continued patchgrad's run and patchgrad PyTorch's, to float rounding")
PY
