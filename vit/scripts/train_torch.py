"""Train a patchgrad recipe in PyTorch, on a CPU, a GPU or many (torchrun), from and to patchgrad checkpoints.

Run from the repository root with PyTorch installed (Debian: python3-torch):

    python3 vit/scripts/train_torch.py --data DIR [--preset quick] [--epochs E] [--out runs/torch-quick]
        [--device cpu|cuda|mps] [--threads 1] [--precision fp32|bf16] [--max-steps N] [--resume]
        [--init-from CKPT.safetensors [--resume-recipe]] [--patchgrad build/patchgrad] [-- PATCHGRAD TRAIN FLAGS]
    torchrun --nproc_per_node N vit/scripts/train_torch.py ...   (the same, as N processes)

Flags after `--` go to `patchgrad train` with the preset (`-- --pool mean --ema 0.999`), so
any recipe patchgrad can train is read the same way: the recipe comes from patchgrad itself
(`patchgrad train ... --print-recipe`, one JSON object of its options under their flag names),
and so does the metadata its checkpoints carry (`--print-metadata`), so the two cannot drift apart.

Where it runs. --device picks cuda, then mps, then cpu by default. Under torchrun each of the N
processes (ranks) trains DistributedDataParallel (gloo on CPUs, nccl on GPUs) on its share of every
batch: the recipe's batch is the global batch, each process takes batch / N images of it (N must
divide the batch), and the gradients are averaged so that a step is the step of the whole batch.
Every process prepares the whole batch from the same seeded draws and keeps its share, so the run
does not depend on N: a run on 2 processes equals one on 1 process to float rounding (stochastic
depth and patch dropout aside: each process draws them for its own images), and a run can be
resumed on any number of processes. Rank 0 alone evaluates and writes files. (With Debian 12's
python3-torch, PyTorch 1.13 on Python 3.11, torchrun needs --redirects 1 --tee 1.)

Checkpoints. Everything it writes in --out is what `patchgrad train` writes: last.safetensors
(the weights, the moving average with --ema), last.state.safetensors (the resume file: weights,
AdamW state, position), best.safetensors and metrics.csv, with the tensor names and metadata of
vit/train/checkpoint.h. So `patchgrad eval`, `inspect` and `predict` open them, and
`patchgrad train --resume --out DIR` continues the run on the CPU. --resume continues the run in
--out; --init-from CKPT starts from the weights of a patchgrad checkpoint (its model must be the
recipe's, except for the dropouts), and with --resume-recipe it continues that run instead: the
recipe, the step, the schedule position and the optimizer state come from CKPT's resume file.

What it trains is what `patchgrad train` does, from the same draws where it can:
  - the validation images held out by patchgrad's seeded split (datasets/split.cpp), and each
    epoch's batches in patchgrad's seeded order (datasets/batcher.cpp), the last one partial;
  - per-channel normalisation with CIFAR-10's mean and pixel std (datasets/normalize.h);
  - the random 32x32 crop of the image zero-padded by 4 and the flip, drawn as patchgrad draws them;
  - random erasing (datasets/augment.h), stochastic depth growing linearly to drop_path at the last
    block, mixup and cutmix (datasets/mixup.h, timm's Mixup in 'batch' mode) and patch dropout (off
    in the last --full-patch-epochs), when the recipe asks for them, drawn from PyTorch's
    generators seeded per step; mean or sequence pooling and Locality Self-Attention;
  - truncated-normal(0.02) weights, class token and position embedding; zero biases;
  - AdamW (betas 0.9/0.999, eps 1e-8) with no weight decay on biases, LayerNorm parameters,
    class token and position embedding; per-step linear warmup then cosine to min_lr
    (autograd/optim/lr_schedule.cpp); cross-entropy with label smoothing; optional gradient clipping;
  - with --ema, a moving average of the weights (autograd/optim/ema.h), which is what is evaluated;
    with --tta flip, evaluation logits averaged over each image and its mirror image.
So a recipe without erasing, mixup, stochastic depth and patch dropout trains here as it does in
patchgrad, to float rounding, and a run can move between the two at any step.

Data: --data is CIFAR-10's binary folder (data_batch_1..5.bin, test_batch.bin), or, with
torchvision installed, an ImageFolder-style folder: DIR/train/<class>/*.png and DIR/test/<class>/
(or DIR/val/), one folder per class, as many classes as the model has, resized to its image size.
Recipes with an option this script does not implement (RandAugment, dropout, SGD, Adam, the step
schedule; see IMPLEMENTED), or with an option it does not know, are refused.
"""

import argparse
import copy
import json
import math
import os
import struct
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bench_torch import adamw, check_blas  # noqa: E402
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
    "mixup": None, "cutmix": None, "ema": None, "tta": {"none", "flip"}, "validation": None,
    "seed": None, "init": None, "full-patch-epochs": None,
}
# The config fields that do not make the model what it is (checkpoint.cpp's check_architecture).
NOT_ARCHITECTURE = {"name", "dropout", "emb_dropout", "attn_dropout", "drop_path", "patch_dropout"}
# The recipe flags of the model, each with its config field (vit/train/train_options.cpp's Model rows).
MODEL_FLAGS = {"config": "name", "dim": "dim", "depth": "depth", "heads": "heads", "mlp": "mlp_dim",
               "patch": "patch_size", "pool": "pool", "patch-dropout": "patch_dropout", "lsa": "lsa",
               "drop-path": "drop_path", "dropout": "dropout"}
STATE_FIELDS = ["epoch", "step_in_epoch", "global_step"] + ["dropout_rng.%d" % i for i in range(4)] + [
    "loss_sum", "correct", "seen", "best_accuracy", "elapsed_seconds", "epoch_seconds"]
METRICS_HEADER = ("epoch,step,lr,train_loss,train_acc,eval_set,eval_loss,eval_acc,epoch_seconds,elapsed_seconds,"
                  "img_per_s")  # vit/train/metrics.h's kMetricsHeader


def fail(message):
    sys.exit("train_torch.py: " + message)


# ---- patchgrad's random numbers (autograd/rng.cpp, datasets/batcher.cpp, datasets/split.cpp) ----

MASK = (1 << 64) - 1
GOLDEN = 0x9e3779b97f4a7c15


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK
    return z ^ (z >> 31)


def derive_seed(seed, parts):
    h = mix64((seed + GOLDEN) & MASK)
    for part in parts:
        h = mix64((h + GOLDEN + mix64(part & MASK)) & MASK)
    return h


class Rng:
    """xoshiro256** seeded through splitmix64, draw for draw the numbers of patchgrad's Rng."""

    def __init__(self, seed):
        self.s = []
        for _ in range(4):
            seed = (seed + GOLDEN) & MASK
            self.s.append(mix64(seed))

    def next_u64(self):
        s = self.s
        rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & MASK  # noqa: E731
        result = (rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def uniform(self):
        return (self.next_u64() >> 11) * 2.0 ** -53

    def below(self, n):
        limit = ((1 << 64) - n) % n  # Lemire's rejection, as Rng::below
        while True:
            x = self.next_u64()
            if x >= limit:
                return x % n


def epoch_order(size, seed, epoch):
    """Batcher::epoch_order: the seeded Fisher-Yates permutation of epoch `epoch`."""
    order = list(range(size))
    rng = Rng(derive_seed(seed, [epoch]))
    for i in range(size - 1, 0, -1):
        j = rng.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return torch.tensor(order, dtype=torch.long)


def split_validation(labels, size, seed, classes):
    """split_validation: indices (train, validation) of `size` images held out, size / classes per class."""
    if size % classes != 0:
        fail("--validation %d is not a multiple of the %d classes" % (size, classes))
    per_class, rng = size // classes, Rng(seed)
    held = torch.zeros(len(labels), dtype=torch.bool)
    for k in range(classes):
        members = (labels == k).nonzero().flatten().tolist()
        if per_class >= len(members):
            fail("class %d has %d images; a validation share of %d per class would leave none for training"
                 % (k, len(members), per_class))
        for i in range(per_class):
            j = i + rng.below(len(members) - i)
            members[i], members[j] = members[j], members[i]
            held[members[i]] = True
    return (~held).nonzero().flatten(), held.nonzero().flatten()


def read_cifar(path):
    """A CIFAR-10 binary file -> (images uint8 [N, 3, 32, 32], labels int64 [N])."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) == 0 or len(data) % 3073 != 0:
        sys.exit("train_torch.py: %s: %d bytes is not a whole number of 3,073-byte CIFAR-10 records"
                 % (path, len(data)))
    records = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(-1, 3073)
    return records[:, 1:].reshape(-1, 3, 32, 32).clone(), records[:, 0].long()


def normalise(images):
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return (images.float() / 255 - mean) / std


def crop_flip(images, rng):
    """random_crop_flip per image, in batch order, from patchgrad's Rng: the crop of the image
    zero-padded by 4 at offsets drawn from [0, 8], then the flip with probability 1/2."""
    H, W = images.shape[2:]
    padded = F.pad(images, (4, 4, 4, 4))
    out = torch.empty_like(images)
    for i in range(len(images)):
        top, left = rng.below(9), rng.below(9)
        crop = padded[i, :, top:top + H, left:left + W]
        out[i] = crop.flip(2) if rng.uniform() < 0.5 else crop
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
    the training loop seeds per step.)"""
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


def write_atomically(path, write):
    """write(path + '.<pid>.tmp'), then rename: an interrupted write leaves the previous file whole."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    write(tmp)
    os.replace(tmp, path)


# ---- patchgrad checkpoints (vit/train/checkpoint.h, autograd/io/safetensors.h) ----------------

def exact_text(value):
    """checkpoint.cpp's exact_text for doubles: the fewest of 15 to 17 digits that read back the same."""
    for digits in (15, 16, 17):
        text = "%.*g" % (digits, value)
        if float(text) == value:
            return text
    return text


def read_safetensors(path):
    """(tensors by name, metadata) of a safetensors file of float32 tensors."""
    from load_checkpoint_torch import read_safetensors as read  # it imports this file: not at the top
    try:
        return read(path)
    except (OSError, ValueError, KeyError, struct.error) as e:
        fail("%s: not a readable safetensors file (%s)" % (path, e))


def write_safetensors(path, tensors, metadata):
    """The file autograd/io/safetensors.cpp reads: header length, JSON header, float32 data, written atomically."""
    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name, t in tensors:
        data = t.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)

    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for blob in blobs:
                f.write(blob)
    write_atomically(path, write)


def resume_path(path):
    """checkpoint.h's optimizer_state_path: runs/x/last.safetensors -> runs/x/last.state.safetensors."""
    return path[:-len(".safetensors")] + ".state.safetensors" if path.endswith(".safetensors") else path + ".state"


def patchgrad_order(model):
    """The parameter names in the order of patchgrad's optimizer (split_weight_decay: the decayed
    ones, then the exempt ones), which numbers its state "state.<i>.<field>"; bench_torch.adamw's."""
    names = [name for name, _ in model.named_parameters()]
    exempt = lambda name, p: p.ndim <= 1 or name.endswith(".bias") or name in ("cls_token", "pos_embed")  # noqa: E731
    params = dict(model.named_parameters())
    return [n for n in names if not exempt(n, params[n])] + [n for n in names if exempt(n, params[n])]


def optimizer_tensors(model, optimizer):
    """The optimizer state as patchgrad's Optimizer::state_tensors names and shapes it."""
    params, out = dict(model.named_parameters()), []
    for i, name in enumerate(patchgrad_order(model)):
        state = optimizer.state.get(params[name])
        if not state:
            continue
        shape = patchgrad_shape(name, params[name])
        out.append(("optimizer.state.%d.step" % i, torch.tensor(float(state["step"]))))
        out += [("optimizer.state.%d.%s" % (i, field), state[field].reshape(shape))
                for field in ("exp_avg", "exp_avg_sq")]
    return out


def load_optimizer(model, optimizer, tensors, source):
    """Optimizer::load_state_tensors: the resume file's optimizer.state.<i>.<field>, i in patchgrad_order."""
    params, order = dict(model.named_parameters()), patchgrad_order(model)
    for name, t in tensors.items():
        if not name.startswith("optimizer.state."):
            continue
        i, field = name[len("optimizer.state."):].split(".", 1)
        if int(i) >= len(order) or field not in ("step", "exp_avg", "exp_avg_sq"):
            fail("%s: the model has no optimizer state %s (AdamW's: step, exp_avg, exp_avg_sq)" % (source, name))
        p = params[order[int(i)]]
        state = optimizer.state[p]
        if field == "step":
            state["step"] = torch.tensor(float(t.item()))
        elif t.shape != p.detach().reshape(patchgrad_shape(order[int(i)], p)).shape:
            fail("%s: %s has shape %s, but parameter %d (%s) has %s" % (source, name, list(t.shape), int(i),
                                                                       order[int(i)], list(p.shape)))
        else:
            state[field] = t.reshape(p.shape).to(p.device).clone()


def patchgrad_shape(name, p):
    """patchgrad's parameter shape: the patch projection is a Linear [D, C*P*P]."""
    return (p.shape[0], -1) if name == "patch_embed.proj.weight" else tuple(p.shape)


def file_tensors(model, prefix=""):
    return [(prefix + name, t) for name, t in model.state_dict().items()]


class Checkpoints:
    """Writes a run's files as `patchgrad train` does: the resume file first, then the weights."""

    def __init__(self, out, metadata):
        self.out, self.metadata = out, metadata

    def save(self, file, state, model, average, optimizer=None):
        metadata = dict(self.metadata)
        for key in STATE_FIELDS:
            value = state[key]
            metadata["state." + key] = exact_text(value) if isinstance(value, float) else str(value)
        path = os.path.join(self.out, file)
        if optimizer is not None:
            extra = [] if average is None else file_tensors(average, "ema.")
            write_safetensors(resume_path(path), file_tensors(model) + optimizer_tensors(model, optimizer) + extra,
                              metadata)
        write_safetensors(path, file_tensors(average or model), metadata)


# ---- the recipe ------------------------------------------------------------------------------

def run_patchgrad(patchgrad, args):
    command = [patchgrad, "train"] + list(args)
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as e:
        fail("cannot run %s (build it, or name it with --patchgrad): %s" % (patchgrad, e))
    if done.returncode != 0:
        fail("%s: %s" % (" ".join(command), done.stderr.strip()))
    return done.stdout


def read_recipe(patchgrad, flags):
    """`patchgrad train FLAGS --print-recipe` and `--print-metadata`: (recipe flag -> value, metadata)."""
    recipe = json.loads(run_patchgrad(patchgrad, list(flags) + ["--print-recipe"]))
    return recipe, json.loads(run_patchgrad(patchgrad, list(flags) + ["--print-metadata"]))


def checkpoint_flags(meta):
    """The `patchgrad train` flags of the recipe a checkpoint's metadata holds."""
    flags = []
    entries = [(flag, meta["config." + field]) for flag, field in MODEL_FLAGS.items()]
    entries += [(key[len("train."):], value) for key, value in sorted(meta.items())
                if key.startswith("train.") and key != "train.data"]
    for flag, value in entries:
        if value == "true":
            flags.append("--" + flag)
        elif value != "false":
            flags += ["--" + flag, value]
    return flags


def differences(saved, wanted, prefixes, skip=()):
    """"config dim 64 in the checkpoint, 32 in the recipe" for every entry of `prefixes` that differs."""
    out = []
    for key in sorted(set(saved) | set(wanted)):
        prefix = key.split(".", 1)[0] + "."
        if prefix in prefixes and key.split(".", 1)[1] not in skip and key != "train.data" \
                and saved.get(key) != wanted.get(key):
            out.append("%s %s in the checkpoint, %s in the recipe" % (key.replace(".", " ", 1), saved.get(key),
                                                                      wanted.get(key)))
    return out


def unsupported(recipe):
    """The recipe's options this script cannot train as asked, as "--flag value" texts."""
    return ["--%s %s" % (flag, json.dumps(value)) for flag, value in recipe.items()
            if flag not in IMPLEMENTED or (IMPLEMENTED[flag] is not None and value not in IMPLEMENTED[flag])]


def model_config(meta, recipe):
    from load_checkpoint_torch import config_from
    c = config_from(meta)
    for field in ("emb_dropout", "attn_dropout"):
        if float(meta["config." + field]) != 0:
            fail("config %s %s: this script has no dropout" % (field, meta["config." + field]))
    c.update(drop_path=recipe["drop-path"], patch_dropout=recipe["patch-dropout"])
    return c


# ---- data ------------------------------------------------------------------------------------

def image_folder(path, c):
    """An ImageFolder (one folder per class) as uint8 images [N, C, H, W] of the model's size, and labels."""
    try:
        import torchvision
    except ImportError:
        fail("--data %s is no CIFAR-10 binary folder, and an image folder needs torchvision (python3-torchvision)"
             % os.path.dirname(path))
    size = (c["image_height"], c["image_width"])
    transform = torchvision.transforms.Compose([torchvision.transforms.Resize(size),
                                                torchvision.transforms.CenterCrop(size),
                                                torchvision.transforms.PILToTensor()])
    folder = torchvision.datasets.ImageFolder(path, transform=transform)
    if len(folder.classes) != c["num_classes"]:
        fail("%s has %d classes, the model %d" % (path, len(folder.classes), c["num_classes"]))
    images = torch.stack([folder[i][0] for i in range(len(folder))])  # its loader gives RGB
    return images, torch.tensor(folder.targets, dtype=torch.long)


def load_data(path, c):
    """(training images, labels, test images, labels): CIFAR-10's binary files, or an image folder."""
    if os.path.exists(os.path.join(path, "data_batch_1.bin")):
        parts = [read_cifar(os.path.join(path, "data_batch_%d.bin" % i)) for i in range(1, 6)]
        return (torch.cat([x for x, _ in parts]), torch.cat([y for _, y in parts])) + \
            read_cifar(os.path.join(path, "test_batch.bin"))
    test = next((os.path.join(path, d) for d in ("test", "val") if os.path.isdir(os.path.join(path, d))), None)
    if not os.path.isdir(os.path.join(path, "train")) or test is None:
        fail("--data %s: expected CIFAR-10's data_batch_1..5.bin and test_batch.bin, or an image folder with "
             "train/<class>/ and test/<class>/ (or val/<class>/)" % path)
    return image_folder(os.path.join(path, "train"), c) + image_folder(test, c)


# ---- training --------------------------------------------------------------------------------

def evaluate(model, images, labels, device, tta, batch, autocast):
    """(mean cross-entropy, accuracy) of `model` on the images, as vit/train/evaluation.cpp."""
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for i in range(0, len(images), batch):
            y = labels[i:i + batch].to(device)
            with autocast:
                x = normalise(images[i:i + batch]).to(device)
                logits = model(x).float()
                if tta == "flip":
                    logits = (logits + model(x.flip(3)).float()) * 0.5
            loss += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
    model.train()
    return loss / len(images), correct / len(images)


def csv_row(r):
    return "%d,%d,%.6g,%.6f,%.6f,%s,%.6f,%.6f,%.3f,%.3f,%.1f\n" % (
        r["epoch"], r["step"], r["lr"], r["train_loss"], r["train_acc"], r["eval_set"], r["eval_loss"],
        r["eval_acc"], r["epoch_seconds"], r["elapsed_seconds"], r["img_per_s"])


def read_rows(path, last_epoch):
    """The rows of a run's metrics.csv up to `last_epoch`, as text lines (none when there is no file)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return []
    return [line + "\n" for line in lines if line and int(line.split(",")[0]) <= last_epoch]


def choose_device(name):
    if name is None:
        name = "cuda" if torch.cuda.is_available() else \
            "mps" if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        fail("--device cuda: this PyTorch sees no CUDA device")
    if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        fail("--device mps: this PyTorch has no Metal (mps) device")
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("PATCHGRAD_DATA"),
                        help="CIFAR-10's binary folder, or an image folder (train/<class>/, test/<class>/) "
                             "(default: $PATCHGRAD_DATA)")
    parser.add_argument("--preset", default="quick", help="a patchgrad preset (patchgrad train --help lists them)")
    parser.add_argument("--epochs", type=int, help="override the preset's epochs (a shorter trial)")
    parser.add_argument("--patchgrad", default=os.path.join("build", "patchgrad"),
                        help="the patchgrad program whose recipe to read (default: build/patchgrad)")
    parser.add_argument("--device", choices=["cpu", "cuda", "mps"], help="default: cuda, else mps, else cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per process (default 1)")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                        help="bf16: forward and loss under torch.autocast with bfloat16 (default fp32)")
    parser.add_argument("--out", help="folder for the run's files (default: runs/torch-PRESET)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out (ours or patchgrad's)")
    parser.add_argument("--init-from", metavar="CKPT", help="start from the weights of a patchgrad checkpoint")
    parser.add_argument("--resume-recipe", action="store_true",
                        help="with --init-from: continue that run (its recipe, step, schedule and optimizer state, "
                             "from its resume file)")
    parser.add_argument("--max-steps", type=int, default=0, help="stop (and save) after this many steps of the run")
    parser.add_argument("flags", nargs=argparse.REMAINDER,
                        help="after --: patchgrad train flags on top of the preset (--pool mean --ema 0.999)")
    args = parser.parse_args()
    if not args.data:
        parser.error("--data DIR (or PATCHGRAD_DATA) is required")
    if args.resume_recipe and not args.init_from:
        parser.error("--resume-recipe continues the run of --init-from CKPT: name the checkpoint")
    if args.resume and args.init_from:
        parser.error("--resume continues the run in --out, --init-from starts from another: not both")
    flags = args.flags[1:] if args.flags[:1] == ["--"] else args.flags

    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    device_name = choose_device(args.device)
    if world > 1 and device_name == "mps":
        fail("torchrun with --device mps: PyTorch's DistributedDataParallel has no backend for it")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if device_name == "cuda" else \
        torch.device(device_name)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    say = (lambda text: print(text, flush=True)) if rank == 0 else (lambda text: None)

    # The recipe: a checkpoint's when continuing a run, else the preset's with the flags.
    out = args.out or os.path.join("runs", "torch-" + args.preset)
    source = os.path.join(out, "last.state.safetensors") if args.resume else \
        resume_path(args.init_from) if args.resume_recipe else args.init_from
    if source and not os.path.exists(source):
        fail("%s does not exist%s" % (source, " (the resume file of the run)" if args.resume or args.resume_recipe
                                      else ""))
    tensors, saved = read_safetensors(source) if source else ({}, {})
    if source and saved.get("format") != "patchgrad-checkpoint-1":
        fail("%s: not a patchgrad checkpoint (its metadata has no format patchgrad-checkpoint-1)" % source)
    continuing = args.resume or args.resume_recipe
    if continuing:
        if flags or args.epochs is not None:
            fail("a continued run keeps its recipe: leave out --epochs and the flags after --")
        if not any(name.startswith("optimizer.") for name in tensors) and saved.get("state.global_step") != "0":
            fail("%s holds no optimizer state: it is a weights file; name its run's resume file" % source)
        recipe, meta = read_recipe(args.patchgrad, checkpoint_flags(saved))
        differ = differences(saved, meta, {"config.", "train."})
    else:
        extra = [] if args.epochs is None else ["--epochs", str(args.epochs)]
        recipe, meta = read_recipe(args.patchgrad, ["--preset", args.preset] + flags + extra)
        differ = differences(saved, meta, {"config."}, NOT_ARCHITECTURE) if source else []
    if differ:
        fail("%s: %s" % (source, "; ".join(differ)))
    if unsupported(recipe):
        fail("the recipe uses %s, which this script does not implement" % ", ".join(unsupported(recipe)))
    batch, seed = int(recipe["batch"]), int(recipe["seed"])
    if batch % world:
        fail("the batch of %d images does not divide among %d processes: choose a process count that divides it"
             % (batch, world))
    taken = [f for f in ("metrics.csv", "last.safetensors", "last.state.safetensors", "results.json")
             if os.path.exists(os.path.join(out, f))]
    if taken and not args.resume:
        fail("--out %s holds a run (%s): continue it with --resume or choose another --out" % (out, ", ".join(taken)))
    if rank == 0:
        os.makedirs(out, exist_ok=True)
    meta["train.data"] = os.path.realpath(args.data)
    checkpoints = Checkpoints(out, meta)

    torch.set_num_threads(args.threads)
    torch.manual_seed(seed)
    c = model_config(meta, recipe)
    images, labels, test_images, test_labels = load_data(args.data, c)
    if recipe["validation"] > 0:
        train_idx, val_idx = split_validation(labels, int(recipe["validation"]), seed, c["num_classes"])
        train_images, train_labels = images[train_idx], labels[train_idx]
        eval_images, eval_labels, eval_set = images[val_idx], labels[val_idx], "validation"
    else:
        train_images, train_labels = images, labels
        eval_images, eval_labels, eval_set = test_images, test_labels, "test"

    model = ViT(c)
    for name, q in model.named_parameters():
        if name.endswith(".bias"):
            torch.nn.init.zeros_(q)
        elif q.ndim >= 2 or name in ("cls_token", "pos_embed"):
            torch.nn.init.trunc_normal_(q, std=0.02, a=-2, b=2)
    if recipe["init"] != "none" and not continuing:  # the recipe's --init: a weights file
        model.load_state_dict(read_safetensors(recipe["init"])[0], strict=True)
    if source:
        model.load_state_dict({n: t for n, t in tensors.items() if "." not in n or n.split(".")[0] not in
                               ("optimizer", "ema")}, strict=True)
    model.to(device)
    average = None
    if recipe["ema"] > 0:
        average = copy.deepcopy(model)  # the weights' moving average, evaluated
        if continuing:
            average.load_state_dict({n[4:]: t for n, t in tensors.items() if n.startswith("ema.")}, strict=True)
    evaluated = average or model
    optimizer = adamw(model, recipe["lr"], recipe["weight-decay"])
    trained = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda"
                                                        else None) if world > 1 else model
    steps_per_epoch = math.ceil(len(train_images) / batch)
    epochs = int(recipe["epochs"])
    total = epochs * steps_per_epoch
    warmup = min(int(math.floor(min(recipe["warmup"], epochs) * steps_per_epoch + 0.5)), total)

    # Where the run stands (checkpoint.h's TrainingState).
    state = dict(epoch=0, step_in_epoch=0, global_step=0, loss_sum=0.0, correct=0.0, seen=0, best_accuracy=-1.0,
                 elapsed_seconds=0.0, epoch_seconds=0.0)
    state.update({"dropout_rng.%d" % i: Rng(seed).s[i] for i in range(4)})
    rows = []
    if continuing:
        load_optimizer(model, optimizer, tensors, source)
        for key in STATE_FIELDS:
            text = saved["state." + key]
            state[key] = int(text) if key in ("epoch", "step_in_epoch", "global_step", "seen") or \
                key.startswith("dropout_rng") else float(text)
        if state["global_step"] != state["epoch"] * steps_per_epoch + state["step_in_epoch"] or \
                state["seen"] != state["step_in_epoch"] * batch:
            fail("%s: state epoch %d, step %d, global step %d, seen %d do not fit %d steps of %d images per epoch "
                 "(another data set?)" % (source, state["epoch"], state["step_in_epoch"], state["global_step"],
                                          state["seen"], steps_per_epoch, batch))
        rows = read_rows(os.path.join(os.path.dirname(source), "metrics.csv"), state["epoch"])

    say("PyTorch %s (BLAS %s) on %s, %d process%s of %d thread(s): %s%s, %d parameters, %d epochs of %d steps of "
        "%d images (%d per process); %d training, %d %s, %d test images"
        % (torch.__version__, check_blas(), device_name, world, "" if world == 1 else "es", args.threads,
           " ".join("%s=%s" % kv for kv in (("preset", recipe["preset"]), ("config", recipe["config"]))),
           "".join(" " + f for f in flags), sum(q.numel() for q in model.parameters()), epochs, steps_per_epoch,
           batch, batch // world, len(train_images), len(eval_images), eval_set, len(test_images)))
    if source:
        say("%s %s at epoch %d, step %d of %d (global step %d)" % (
            "resuming from" if continuing else "weights from", source, state["epoch"] + 1, state["step_in_epoch"],
            steps_per_epoch, state["global_step"]))

    autocast = torch.autocast(device.type if device.type != "mps" else "cpu", dtype=torch.bfloat16,
                              enabled=args.precision == "bf16")
    start, elapsed_base, lr, stopped = time.time(), state["elapsed_seconds"], 0.0, False
    while state["epoch"] < epochs and not stopped:
        epoch = state["epoch"]
        # --full-patch-epochs: the last epochs see every patch (trainer.cpp's drops_patches_in).
        model.patch_dropout = recipe["patch-dropout"] if epoch < epochs - recipe["full-patch-epochs"] else 0.0
        order, epoch_start, epoch_base = epoch_order(len(train_images), seed, epoch), time.time(), \
            state["epoch_seconds"]
        first_step = state["step_in_epoch"]
        while state["step_in_epoch"] < steps_per_epoch:
            if args.max_steps and state["global_step"] >= args.max_steps:
                stopped = True
                break
            step = state["step_in_epoch"]
            idx = order[step * batch:(step + 1) * batch]
            # The whole batch from the draws of (seed, epoch, step), on every process; each keeps its share.
            step_seed = derive_seed(seed, [epoch, step])
            generator = torch.Generator().manual_seed(step_seed >> 1)
            torch.manual_seed(step_seed >> 1)  # mixup's Beta draw: the same on every process
            x = train_images[idx]
            if recipe["augment"] == "crop-flip":
                x = crop_flip(x, Rng(step_seed))
            if recipe["erasing"] > 0:
                x = random_erasing(x, recipe["erasing"], generator)
            x, y_a, y_b, lam = mix(normalise(x), train_labels[idx], recipe, generator)
            torch.manual_seed((step_seed >> 1) ^ rank)  # stochastic depth and patch dropout: per process
            n = len(idx)
            share = slice(n * rank // world, n * (rank + 1) // world)
            x, y_a, y_b = x[share].to(device), y_a[share].to(device), y_b[share].to(device)
            lr = lr_at(state["global_step"], recipe, total, warmup)
            for group in optimizer.param_groups:
                group["lr"] = lr
            with autocast:
                logits = trained(x)
                # Summed over this share and divided by the whole batch: the average over the processes
                # that DistributedDataParallel takes of the gradients is then the batch's mean's.
                loss = lam * F.cross_entropy(logits.float(), y_a, label_smoothing=recipe["label-smoothing"],
                                             reduction="sum")
                if lam < 1:
                    loss = loss + (1 - lam) * F.cross_entropy(logits.float(), y_b, reduction="sum",
                                                              label_smoothing=recipe["label-smoothing"])
            (loss * world / n).backward()
            if recipe["clip-grad"] > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["clip-grad"])
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if average is not None:
                d = min(recipe["ema"], (1 + state["global_step"]) / (10 + state["global_step"]))
                with torch.no_grad():
                    for a, q in zip(average.parameters(), model.parameters()):
                        a.add_(q - a, alpha=1 - d)
            predicted = logits.argmax(1)
            sums = torch.tensor([loss.item(), lam * (predicted == y_a).sum().item() +
                                 (1 - lam) * (predicted == y_b).sum().item()], dtype=torch.float64)
            if world > 1:
                dist.all_reduce(sums)
            batch_loss = sums[0].item() / n
            if not math.isfinite(batch_loss):
                fail("the loss is %s at epoch %d, step %d: training diverged; try a smaller --lr or --clip-grad 1"
                     % (batch_loss, epoch + 1, step + 1))
            state["loss_sum"] += batch_loss * n
            state["correct"] += sums[1].item()
            state["seen"] += n
            state["step_in_epoch"] += 1
            state["global_step"] += 1
        state["epoch_seconds"] = epoch_base + time.time() - epoch_start if state["step_in_epoch"] else 0.0
        state["elapsed_seconds"] = elapsed_base + time.time() - start
        if stopped:
            break
        if rank == 0:
            eval_loss, eval_acc = evaluate(evaluated, eval_images, eval_labels, device, recipe["tta"], batch,
                                           autocast)
            seen = state["seen"]
            row = dict(epoch=epoch + 1, step=state["global_step"], lr=lr, train_loss=state["loss_sum"] / seen,
                       train_acc=state["correct"] / seen, eval_set=eval_set, eval_loss=eval_loss, eval_acc=eval_acc,
                       epoch_seconds=state["epoch_seconds"], elapsed_seconds=state["elapsed_seconds"],
                       img_per_s=(seen - first_step * batch) / max(time.time() - epoch_start, 1e-9))
            rows.append(csv_row(row))
            improved = eval_acc > state["best_accuracy"]
            state.update(epoch=epoch + 1, step_in_epoch=0, loss_sum=0.0, correct=0.0, seen=0, epoch_seconds=0.0,
                         best_accuracy=max(eval_acc, state["best_accuracy"]))
            if improved:
                checkpoints.save("best.safetensors", state, model, average)
            write_text(os.path.join(out, "metrics.csv"), METRICS_HEADER + "\n" + "".join(rows))
            checkpoints.save("last.safetensors", state, model, average, optimizer)
            say("epoch %d/%d: train loss %.4f acc %.1f%% | %s loss %.4f acc %.2f%%%s | elapsed %.0f s"
                % (epoch + 1, epochs, row["train_loss"], 100 * row["train_acc"], eval_set, eval_loss,
                   100 * eval_acc, " (best)" if improved else "", state["elapsed_seconds"]))
        else:
            state.update(epoch=epoch + 1, step_in_epoch=0, loss_sum=0.0, correct=0.0, seen=0, epoch_seconds=0.0)
        if world > 1:
            dist.barrier()
    if rank == 0:
        if stopped:
            checkpoints.save("last.safetensors", state, model, average, optimizer)
            say("stopped after %d steps (--max-steps) at epoch %d, step %d of %d: saved %s (running loss %.6f)"
                % (state["global_step"], state["epoch"] + 1, state["step_in_epoch"], steps_per_epoch,
                   os.path.join(out, "last.safetensors"),
                   state["loss_sum"] / state["seen"] if state["seen"] else float("nan")))
        test_loss, test_acc = evaluate(evaluated, test_images, test_labels, device, recipe["tta"], batch, autocast)
        say("test accuracy %.2f%% (%d images, loss %.4f) after %d steps, %.0f s"
            % (100 * test_acc, len(test_images), test_loss, state["global_step"], state["elapsed_seconds"]))
        if not stopped:
            results = dict(format="patchgrad-results-1", preset=recipe["preset"], config=recipe["config"],
                           engine="PyTorch %s, %s, %d process(es)" % (torch.__version__, device_name, world),
                           parameters=sum(q.numel() for q in model.parameters()), epochs=epochs,
                           steps=state["global_step"], best_eval_accuracy=state["best_accuracy"], eval_set=eval_set,
                           test_images=len(test_images), test_loss=test_loss, test_accuracy=test_acc,
                           wall_seconds=state["elapsed_seconds"])
            write_text(os.path.join(out, "results.json"), json.dumps(results, indent=2) + "\n")
            say("results: %s" % os.path.join(out, "results.json"))
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def write_text(path, text):
    def write(tmp):
        with open(tmp, "w") as f:
            f.write(text)
    write_atomically(path, write)


if __name__ == "__main__":
    main()
