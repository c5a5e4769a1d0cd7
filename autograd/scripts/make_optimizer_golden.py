"""Writes tests/data/optimizer_golden.txt: trajectories of torch.optim's SGD, Adam and AdamW
that tests/autograd/optim/test_optimizer.cpp reproduces with patchgrad's optimizers (float64,
relative error 1e-10).

Run by hand from the repository root, with a Python that has PyTorch (Debian's
python3-torch 1.13 lives in the system Python, not in a pyenv one):

    /usr/bin/python3 autograd/scripts/make_optimizer_golden.py

Tests never run this script; they read the file it writes, which is committed.

The problem. Three float64 parameters w [2, 3], late [2, 2] and b [3] minimise the quadratic
    loss = sum over parameters and elements of 0.5 * h * (p - c)^2,
whose gradient h * (p - c) is set directly as p.grad before each step (no autograd), so the
C++ test can compute the very same numbers. The curvatures h differ per element, which
makes Adam's per-element scaling visible. `late` has no gradient (p.grad is None) before
step first_grad: the optimiser must skip it entirely, so its step count and bias
correction lag behind the others'. Two parameter groups: [w, late] with the optimiser's
weight decay, [b] with weight_decay 0 (the no-decay group of split_weight_decay).

Format: plain text, whitespace-separated tokens; lines starting with '#' are comments.
Numbers are Python's repr of the float64, which reads back exactly.

    steps <S>
    param <name> <ndim> <dims...> <initial values, row-major>      (w, late, b, in group order)
    curvature <name> <values>
    target <name> <values>
    first_grad <name> <step>                                        (1-based)
    case <case> <SGD|Adam|AdamW> <explicit|defaults> <n> <n pairs: key value>
    step <s>                                                        (s = 1..S, each followed by)
    <name> <values after step s>                                    (one line per parameter)
    state <name> <field> <values>                                   (after step S; step is one number)
    endcase
    ...
    end

SGD's keys are lr momentum dampening weight_decay nesterov (0 or 1); Adam's and AdamW's are
lr beta1 beta2 eps weight_decay. "defaults" means the optimiser was built with PyTorch's
defaults for everything but the parameters (the keys record what those were), so the test
builds patchgrad's with its defaults too and checks they are the same numbers.
"""

import os

import torch

STEPS = 5
SHAPES = [("w", (2, 3)), ("late", (2, 2)), ("b", (3,))]
FIRST_GRAD = {"w": 1, "late": 3, "b": 1}

# name, optimizer class, keyword arguments (None: PyTorch's defaults)
CASES = [
    ("sgd_plain", "SGD", dict(lr=0.1)),
    ("sgd_momentum", "SGD", dict(lr=0.05, momentum=0.9)),
    ("sgd_dampening_wd", "SGD", dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.05)),
    ("sgd_nesterov_wd", "SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("adam", "Adam", dict(lr=0.1)),
    ("adam_wd", "Adam", dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    ("adamw", "AdamW", dict(lr=0.05, betas=(0.85, 0.98), eps=1e-7, weight_decay=0.2)),
    ("adamw_defaults", "AdamW", None),
]


def values(t):
    return " ".join(repr(v) for v in t.flatten().tolist())


def hyper_parameters(kind, defaults):
    if kind == "SGD":
        return [("lr", defaults["lr"]), ("momentum", defaults["momentum"]), ("dampening", defaults["dampening"]),
                ("weight_decay", defaults["weight_decay"]), ("nesterov", int(defaults["nesterov"]))]
    return [("lr", defaults["lr"]), ("beta1", defaults["betas"][0]), ("beta2", defaults["betas"][1]),
            ("eps", defaults["eps"]), ("weight_decay", defaults["weight_decay"])]


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "tests", "data", "optimizer_golden.txt")

    g = torch.Generator().manual_seed(2024)
    initial, curvature, target = {}, {}, {}
    for name, shape in SHAPES:
        initial[name] = torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1
        curvature[name] = torch.rand(shape, generator=g, dtype=torch.float64) * 2 + 0.5
        target[name] = torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1

    lines = ["# torch.optim golden trajectories, torch " + torch.__version__,
             "# written by autograd/scripts/make_optimizer_golden.py (see its header for the format)",
             "steps %d" % STEPS]
    for name, shape in SHAPES:
        lines.append("param %s %d %s %s" % (name, len(shape), " ".join(map(str, shape)), values(initial[name])))
    for name, _ in SHAPES:
        lines.append("curvature %s %s" % (name, values(curvature[name])))
        lines.append("target %s %s" % (name, values(target[name])))
        lines.append("first_grad %s %d" % (name, FIRST_GRAD[name]))

    for case, kind, kwargs in CASES:
        params = {name: initial[name].clone().requires_grad_(True) for name, _ in SHAPES}
        groups = [{"params": [params["w"], params["late"]]}, {"params": [params["b"]], "weight_decay": 0.0}]
        optimizer = getattr(torch.optim, kind)(groups, **(kwargs or {}))
        keys = hyper_parameters(kind, optimizer.defaults)
        lines.append("case %s %s %s %d %s" % (case, kind, "defaults" if kwargs is None else "explicit", len(keys),
                                              " ".join("%s %r" % kv for kv in keys)))
        for step in range(1, STEPS + 1):
            for name, p in params.items():
                with torch.no_grad():
                    p.grad = curvature[name] * (p - target[name]) if step >= FIRST_GRAD[name] else None
            optimizer.step()
            lines.append("step %d" % step)
            for name, p in params.items():
                lines.append("%s %s" % (name, values(p.detach())))
        for name, p in params.items():
            for field, value in optimizer.state[p].items():
                if value is None:  # SGD without momentum stores momentum_buffer = None
                    continue
                lines.append("state %s %s %s" % (name, field, values(value) if value.dim() else repr(value.item())))
        lines.append("endcase")
    lines.append("end")

    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
