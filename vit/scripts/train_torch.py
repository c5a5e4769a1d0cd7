"""The same CIFAR-10 training recipe in PyTorch, for the README's results table.

Run by hand from the repository root with Debian's PyTorch (python3-torch 1.13, for the system
Python) and OpenBLAS (libopenblas0-pthread; see bench_torch.blas_library):

    /usr/bin/python3 vit/scripts/train_torch.py --data DIR [--preset quick]
        [--threads 1] [--epochs E] [--seed 0] [--out runs/torch-quick] [--resume]
        [--patchgrad build/patchgrad] [-- PATCHGRAD TRAIN FLAGS]

Flags after `--` go to `patchgrad train` with the preset (`-- --pool mean --ema 0.999`), so
any recipe patchgrad can train is read the same way.

It reads the recipe from patchgrad itself (`patchgrad train --preset NAME --print-recipe`, one
JSON object of the recipe's options under their flag names, made from the option table of
vit/train/train_options.cpp) and the model shape from bench_torch.py's CONFIGS (which
bench_torch.py checks against patchgrad) with the recipe's --dim, --depth, ... on top, so the two
cannot drift apart. It trains the independent timm-style ViT of make_golden.py with what
`patchgrad train --preset NAME` does:
  - 5,000 validation images carved from the 50,000 training images, 500 per class (a seeded
    shuffle within each class, like datasets/split.cpp, but not the same images);
  - per-channel normalisation with CIFAR-10's mean and pixel std (datasets/normalize.h);
  - each epoch a fresh shuffle, batches of `batch`, the last one partial (no drop-last);
  - random 32x32 crop of the image zero-padded by 4, horizontal flip with probability 1/2;
  - random erasing (datasets/augment.h: one rectangle of 2-33% of the image, aspect ratio
    log-uniform in [0.3, 1/0.3], filled with random bytes) and stochastic depth growing
    linearly to drop_path at the last block, when the preset asks for them;
  - mixup and cutmix on the normalised batch (datasets/mixup.h, timm's Mixup in 'batch' mode),
    when the recipe asks for them;
  - mean or sequence pooling (over all tokens, the class token included), patch dropout after
    the position encoding (make_golden.patch_dropout; off in the last --full-patch-epochs) and
    Locality Self-Attention, when the recipe asks for them;
  - truncated-normal(0.02) weights, class token and position embedding; zero biases; or, with
    --init FILE, the weights of a patchgrad weights file (load_checkpoint_torch.py reads it);
  - AdamW (betas 0.9/0.999, eps 1e-8) with no weight decay on biases, LayerNorm parameters,
    class token and position embedding; per-step linear warmup then cosine to min_lr
    (autograd/optim/lr_schedule.cpp); cross-entropy with label smoothing; optional gradient clipping;
  - with --ema, a moving average of the weights (autograd/optim/ema.h: decay min(d, (1+t)/(10+t))
    after step t), which is what is evaluated; with --tta flip, evaluation logits averaged over
    each image and its mirror image.
It prints one line per epoch, then the test accuracy and wall time. After each epoch it rewrites
metrics.csv and state.pt (model, optimiser, random-number generators, position) in --out, so an
interrupted run continues with --resume and ends with the same weights as an uninterrupted one;
its elapsed times then count only the time spent training. At the end it writes results.json.
Recipes with an option this script does not implement (RandAugment, dropout, SGD,
Adam, the step schedule, another validation split; see IMPLEMENTED), or with an option it does
not know (one added to patchgrad since), are refused.
"""

import argparse
import copy
import csv
import json
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bench_torch import adamw, check_blas, cifar_model_config  # noqa: E402
from make_golden import ViT  # noqa: E402

MEAN = (0.4914, 0.4822, 0.4465)  # datasets/normalize.h; load_checkpoint_torch.py uses these too
STD = (0.2470, 0.2435, 0.2616)
# The recipe options (flag names, as --print-recipe writes them) this script trains, each with
# the values it implements (None: any). An option missing here refuses the run.
IMPLEMENTED = {
    "preset": None, "config": None, "dim": None, "depth": None, "heads": None, "mlp": None, "patch": None,
    "epochs": None, "batch": None, "optimizer": {"adamw"}, "lr": None, "weight-decay": None,
    "momentum": None,  # SGD's: unused by AdamW
    "nesterov": {False}, "warmup": None, "schedule": {"cosine", "constant"}, "min-lr": None,
    "label-smoothing": None, "clip-grad": None, "pool": {"cls", "mean", "seq"}, "patch-dropout": None, "lsa": None,
    "drop-path": None, "dropout": {0}, "augment": {"crop-flip", "none"}, "rand-augment": {"none"}, "erasing": None,
    "mixup": None, "cutmix": None, "ema": None, "tta": {"none", "flip"},
    "validation": {5000},  # stratified_split's 500 per class
    "seed": None, "init": None, "full-patch-epochs": None,
}


def read_recipe(patchgrad, preset, epochs=None, flags=()):
    """`patchgrad train --preset PRESET [--epochs E] [FLAGS] --print-recipe`: the recipe as a dict, flag -> value."""
    command = [patchgrad, "train", "--preset", preset] + list(flags) + ["--print-recipe"]
    if epochs is not None:
        command += ["--epochs", str(epochs)]
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as e:
        sys.exit("train_torch.py: cannot run %s (build it, or name it with --patchgrad): %s" % (patchgrad, e))
    if done.returncode != 0:
        sys.exit("train_torch.py: %s: %s" % (" ".join(command), done.stderr.strip()))
    return json.loads(done.stdout)


def load_init(model, recipe):
    """--init: start from a patchgrad weights file, whose model must be the recipe's (its dropouts may differ)."""
    from load_checkpoint_torch import config_from, read_safetensors  # it imports this file: not at the top
    tensors, meta = read_safetensors(recipe["init"])
    saved = config_from(meta)
    wanted = {"patch_size": recipe["patch"], "dim": recipe["dim"], "depth": recipe["depth"], "heads": recipe["heads"],
              "mlp_dim": recipe["mlp"], "pool": recipe["pool"], "lsa": recipe["lsa"]}
    differ = ["%s %s in the file, %s in the recipe" % (k, saved[k], v) for k, v in wanted.items() if saved[k] != v]
    if differ:
        sys.exit("train_torch.py: --init %s: %s" % (recipe["init"], "; ".join(differ)))
    model.load_state_dict(tensors, strict=True)


def unsupported(recipe):
    """The recipe's options this script cannot train as asked, as "--flag value" texts."""
    return ["--%s %s" % (flag, json.dumps(value)) for flag, value in recipe.items()
            if flag not in IMPLEMENTED or (IMPLEMENTED[flag] is not None and value not in IMPLEMENTED[flag])]


def read_cifar(path):
    """A CIFAR-10 binary file -> (images uint8 [N, 3, 32, 32], labels int64 [N])."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) == 0 or len(data) % 3073 != 0:
        sys.exit("train_torch.py: %s: %d bytes is not a whole number of 3,073-byte CIFAR-10 records"
                 % (path, len(data)))
    records = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(-1, 3073)
    return records[:, 1:].reshape(-1, 3, 32, 32).clone(), records[:, 0].long()


def stratified_split(labels, per_class, generator):
    """Indices (train, validation): per_class validation images of every class."""
    validation = []
    for c in range(10):
        members = (labels == c).nonzero().flatten()
        validation.append(members[torch.randperm(len(members), generator=generator)[:per_class]])
    validation = torch.cat(validation).sort().values
    keep = torch.ones(len(labels), dtype=torch.bool)
    keep[validation] = False
    return keep.nonzero().flatten(), validation


def normalise(images):
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return (images.float() / 255 - mean) / std


def crop_flip(images, generator):
    """Random 32x32 crops of the images zero-padded by 4, each flipped with probability 1/2."""
    padded = F.pad(images, (4, 4, 4, 4))
    offsets = torch.randint(0, 9, (len(images), 2), generator=generator)
    flips = torch.rand(len(images), generator=generator) < 0.5
    out = torch.empty_like(images)
    for i in range(len(images)):
        top, left = offsets[i].tolist()
        crop = padded[i, :, top:top + 32, left:left + 32]
        out[i] = crop.flip(2) if flips[i] else crop
    return out


def random_erasing(images, prob, generator):
    """datasets/augment.h's RandomErasing (timm's, 'pixel' fill) on uint8 images [N, C, H, W]."""
    out = images.clone()
    C, H, W = images.shape[1:]
    uniform = lambda: torch.rand(1, generator=generator).item()  # noqa: E731
    for i in range(len(images)):
        if uniform() >= prob:
            continue
        for _ in range(10):
            area = (0.02 + (1 / 3 - 0.02) * uniform()) * H * W
            aspect = math.exp(math.log(0.3) * (1 - 2 * uniform()))
            h, w = math.floor(math.sqrt(area * aspect) + 0.5), math.floor(math.sqrt(area / aspect) + 0.5)
            if h < H and w < W:
                top = torch.randint(0, H - h + 1, (1,), generator=generator).item()
                left = torch.randint(0, W - w + 1, (1,), generator=generator).item()
                out[i, :, top:top + h, left:left + w] = torch.randint(0, 256, (C, h, w), generator=generator,
                                                                      dtype=torch.uint8)
                break
    return out


def mix(x, y, p, generator):
    """datasets/mixup.h's Mixup (timm's, mode 'batch') on a normalised batch: one lam ~ Beta(alpha,
    alpha) per batch, image i paired with image B-1-i; cutmix with probability 1/2 when both are on,
    its box timm's rand_bbox and lam corrected to the box's area. Returns (x, y_a, y_b, lam): the
    loss is lam CE(y_a) + (1 - lam) CE(y_b). (Beta draws from torch's global generator, which
    state.pt keeps with the others.)"""
    if p["mixup"] == 0 and p["cutmix"] == 0:
        return x, y, y, 1.0
    use_cutmix = p["cutmix"] > 0 and (p["mixup"] == 0 or torch.rand(1, generator=generator).item() < 0.5)
    alpha = p["cutmix"] if use_cutmix else p["mixup"]
    lam = torch.distributions.Beta(alpha, alpha).sample().item()
    partner = x.flip(0)
    if not use_cutmix:
        return lam * x + (1 - lam) * partner, y, y.flip(0), lam
    H, W = x.shape[2:]
    ratio = math.sqrt(1 - lam)
    cut_h, cut_w = int(H * ratio), int(W * ratio)
    cy = torch.randint(0, H, (1,), generator=generator).item()
    cx = torch.randint(0, W, (1,), generator=generator).item()
    top, bottom = min(max(cy - cut_h // 2, 0), H), min(max(cy + cut_h // 2, 0), H)
    left, right = min(max(cx - cut_w // 2, 0), W), min(max(cx + cut_w // 2, 0), W)
    out = x.clone()
    out[:, :, top:bottom, left:right] = partner[:, :, top:bottom, left:right]
    return out, y, y.flip(0), 1 - (bottom - top) * (right - left) / (H * W)


def lr_at(step, p, total, warmup):
    """autograd/optim/lr_schedule.cpp's LRSchedule::lr_at for the cosine and constant kinds."""
    if step < warmup:
        return p["lr"] * (step + 1) / warmup
    if p["schedule"] == "constant":
        return p["lr"]
    progress = min((step - warmup) / max(total - warmup, 1), 1.0)
    return p["min-lr"] + (p["lr"] - p["min-lr"]) * 0.5 * (1 + math.cos(math.pi * progress))


def evaluate(model, images, labels, autocast, tta="none", batch=500):
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for i in range(0, len(images), batch):
            with autocast:
                x = normalise(images[i:i + batch])
                logits = model(x).float()
                if tta == "flip":
                    logits = (logits + model(x.flip(3)).float()) * 0.5
            loss += F.cross_entropy(logits, labels[i:i + batch], reduction="sum").item()
            correct += (logits.argmax(1) == labels[i:i + batch]).sum().item()
    model.train()
    return loss / len(images), correct / len(images)


def write_atomically(path, write):
    """write(path + '.<pid>.tmp'), then rename: an interrupted write leaves the previous file whole."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    write(tmp)
    os.replace(tmp, path)


def write_metrics(path, rows):
    def write(tmp):
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    write_atomically(path, write)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("PATCHGRAD_DATA"),
                        help="folder with data_batch_1..5.bin and test_batch.bin (default: $PATCHGRAD_DATA)")
    parser.add_argument("--preset", default="quick", help="a patchgrad preset (patchgrad train --help lists them)")
    parser.add_argument("--epochs", type=int, help="override the preset's epochs (a shorter trial)")
    parser.add_argument("--patchgrad", default=os.path.join("build", "patchgrad"),
                        help="the patchgrad program whose recipe to read (default: build/patchgrad)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch.set_num_threads (default 1: PyTorch's fastest on this machine, where OpenBLAS's "
                             "own pool still uses every core unless OPENBLAS_NUM_THREADS is set)")
    parser.add_argument("--seed", type=int, help="default: the recipe's")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                        help="bf16: run forward and loss under torch.autocast('cpu', dtype=torch.bfloat16), as "
                             "patchgrad train --precision bf16 rounds its matrix products (default fp32)")
    parser.add_argument("--out", help="folder for metrics.csv, state.pt and results.json (default: runs/torch-PRESET)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run whose state.pt is in --out (same preset, epochs and seed)")
    parser.add_argument("flags", nargs=argparse.REMAINDER,
                        help="after --: patchgrad train flags on top of the preset (--pool mean --ema 0.999)")
    args = parser.parse_args()
    if not args.data:
        parser.error("--data DIR (or PATCHGRAD_DATA) is required")
    flags = args.flags[1:] if args.flags[:1] == ["--"] else args.flags
    p = read_recipe(args.patchgrad, args.preset, args.epochs, flags)
    if unsupported(p):
        sys.exit("train_torch.py: preset %s uses %s, which this script does not implement"
                 % (args.preset, ", ".join(unsupported(p))))
    if args.seed is None:
        args.seed = p["seed"]
    out = args.out or os.path.join("runs", "torch-" + args.preset)
    # A new run never writes over another's files, this script's or patchgrad train's.
    taken = [f for f in ("metrics.csv", "state.pt", "results.json", "last.safetensors")
             if os.path.exists(os.path.join(out, f))]
    if taken and not args.resume:
        sys.exit("train_torch.py: --out %s holds a run (%s): continue it with --resume or choose another --out"
                 % (out, ", ".join(taken)))
    os.makedirs(out, exist_ok=True)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    parts = [read_cifar(os.path.join(args.data, "data_batch_%d.bin" % i)) for i in range(1, 6)]
    images, labels = torch.cat([x for x, _ in parts]), torch.cat([y for _, y in parts])
    test_images, test_labels = read_cifar(os.path.join(args.data, "test_batch.bin"))
    train_idx, val_idx = stratified_split(labels, 500, generator)
    train_images, train_labels = images[train_idx], labels[train_idx]
    val_images, val_labels = images[val_idx], labels[val_idx]

    model = ViT(cifar_model_config(p["config"], {"dim": p["dim"], "depth": p["depth"], "heads": p["heads"],
                                                 "mlp_dim": p["mlp"], "patch_size": p["patch"],
                                                 "drop_path": p["drop-path"], "pool": p["pool"],
                                                 "patch_dropout": p["patch-dropout"], "lsa": p["lsa"]}))
    for name, q in model.named_parameters():
        if name.endswith(".bias"):
            torch.nn.init.zeros_(q)
        elif q.ndim >= 2 or name in ("cls_token", "pos_embed"):
            torch.nn.init.trunc_normal_(q, std=0.02, a=-2, b=2)
    if p["init"] != "none":
        load_init(model, p)
    optimizer = adamw(model, p["lr"], p["weight-decay"])
    average = copy.deepcopy(model) if p["ema"] > 0 else None  # the weights' moving average, evaluated
    evaluated = average or model
    batch = int(p["batch"])
    steps_per_epoch = math.ceil(len(train_images) / batch)
    total = int(p["epochs"]) * steps_per_epoch
    warmup = min(round(p["warmup"] * steps_per_epoch), total)
    shape = {k: p[k] for k in ("patch", "dim", "depth", "heads", "mlp")}
    print("PyTorch %s (BLAS %s), %d thread(s): preset %s%s, %s %s, %d parameters, %d epochs of %d steps; "
          "%d training, %d validation, %d test images"
          % (torch.__version__, check_blas(), args.threads, args.preset, "".join(" " + f for f in flags),
             p["config"], shape,
             sum(q.numel() for q in model.parameters()), p["epochs"], steps_per_epoch, len(train_images),
             len(val_images), len(test_images)), flush=True)

    state_path = os.path.join(out, "state.pt")
    first_epoch, step, rows, elapsed, resumed_after = 0, 0, [], 0.0, []
    if args.resume:
        if not os.path.exists(state_path):
            sys.exit("train_torch.py: --resume: %s does not exist" % state_path)
        state = torch.load(state_path)
        differ = ["%s %s (now %s)" % (k, v, p.get(k)) for k, v in state["preset"].items() if p.get(k) != v]
        if state["seed"] != args.seed:
            differ.append("seed %d (now %d)" % (state["seed"], args.seed))
        if differ:
            sys.exit("train_torch.py: --resume: %s is a run with %s" % (state_path, ", ".join(differ)))
        model.load_state_dict(state["model"])
        if average is not None:
            average.load_state_dict(state["average"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])  # drop path's draws
        first_epoch, step, rows, elapsed = state["epoch"], state["step"], state["rows"], state["elapsed_s"]
        resumed_after = state["resumed_after"] + [first_epoch]
        print("resumed %s after epoch %d (%.0f s of training so far)" % (state_path, first_epoch, elapsed), flush=True)

    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")
    start = time.time() - elapsed
    for epoch in range(first_epoch, int(p["epochs"])):
        # --full-patch-epochs: the last epochs see every patch (trainer.cpp's drops_patches_in).
        model.patch_dropout = p["patch-dropout"] if epoch < p["epochs"] - p["full-patch-epochs"] else 0.0
        order = torch.randperm(len(train_images), generator=generator)
        seen, correct, loss_sum = 0, 0, 0.0
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            x = crop_flip(train_images[idx], generator) if p["augment"] == "crop-flip" else train_images[idx]
            if p["erasing"] > 0:
                x = random_erasing(x, p["erasing"], generator)
            y = train_labels[idx]
            x, y_a, y_b, lam = mix(normalise(x), y, p, generator)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, p, total, warmup)
            with autocast:
                logits = model(x)
                loss = lam * F.cross_entropy(logits, y_a, label_smoothing=p["label-smoothing"])
                if lam < 1:
                    loss = loss + (1 - lam) * F.cross_entropy(logits, y_b, label_smoothing=p["label-smoothing"])
            loss.backward()
            if p["clip-grad"] > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), p["clip-grad"])
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if average is not None:
                d = min(p["ema"], (1 + step) / (10 + step))
                with torch.no_grad():
                    for a, q in zip(average.parameters(), model.parameters()):
                        a.add_(q - a, alpha=1 - d)
            step += 1
            seen += len(idx)
            loss_sum += loss.item() * len(idx)
            # A mixed image counts in proportion to the share of the label it was predicted as (trainer.cpp).
            predicted = logits.argmax(1)
            correct += lam * (predicted == y_a).sum().item() + (1 - lam) * (predicted == y_b).sum().item()
        val_loss, val_acc = evaluate(evaluated, val_images, val_labels, autocast, p["tta"])
        elapsed = time.time() - start
        rows.append(dict(epoch=epoch + 1, train_loss=loss_sum / seen, train_acc=correct / seen, val_loss=val_loss,
                         val_acc=val_acc, lr=optimizer.param_groups[0]["lr"], elapsed_s=elapsed))
        print("epoch %d/%d: train loss %.4f acc %.1f%% | validation loss %.4f acc %.2f%% | elapsed %.0f s"
              % (epoch + 1, p["epochs"], loss_sum / seen, 100 * correct / seen, val_loss, 100 * val_acc, elapsed),
              flush=True)
        state = dict(preset=p, seed=args.seed, epoch=epoch + 1, step=step, rows=rows, elapsed_s=elapsed,
                     resumed_after=resumed_after,
                     model=model.state_dict(), optimizer=optimizer.state_dict(), generator=generator.get_state(),
                     average=average.state_dict() if average is not None else None,
                     torch_rng=torch.get_rng_state())
        write_atomically(state_path, lambda tmp: torch.save(state, tmp))
        write_metrics(os.path.join(out, "metrics.csv"), rows)
    test_loss, test_acc = evaluate(evaluated, test_images, test_labels, autocast, p["tta"])
    wall = time.time() - start
    print("test accuracy %.2f%% (loss %.4f) after %d epochs, %.0f s" % (100 * test_acc, test_loss, p["epochs"], wall))

    results = dict(preset=args.preset, flags=flags, config=p["config"], epochs=p["epochs"], threads=args.threads,
                   precision=args.precision,
                   torch=torch.__version__, parameters=sum(q.numel() for q in model.parameters()),
                   test_accuracy=test_acc, test_loss=test_loss, wall_seconds=wall, resumed_after_epochs=resumed_after)

    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(results, f, indent=2)
    write_atomically(os.path.join(out, "results.json"), write)
    print("results: %s" % os.path.join(out, "results.json"))


if __name__ == "__main__":
    main()
