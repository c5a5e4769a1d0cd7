"""Writes tests/data/unfold_golden.txt: inputs and torch.nn.functional.unfold outputs that
tests/autograd/ops/test_unfold.cpp compares patchgrad's unfold against.

Run by hand from the repository root, with a Python that has PyTorch (Debian's
python3-torch 1.13 lives in the system Python, not in a pyenv one):

    /usr/bin/python3 autograd/scripts/make_unfold_golden.py

Tests never run this script; they read the file it writes, which is committed.

Format: plain text, whitespace-separated tokens, lines starting with '#' are comments.
Every case is

    case <name>
    input <B> <C> <H> <W>
    <B*C*H*W input values, row-major>
    kernel <kh> <kw> stride <sh> <sw>
    output <B> <C*kh*kw> <L>
    <B*C*kh*kw*L output values, row-major>

and the file ends with the line `end`. Values are small multiples of 1/8, exact in float32
and float64, and all distinct within a case, so a misplaced element cannot go unnoticed.
"""

import os

import torch
import torch.nn.functional as F

# name, (B, C, H, W), (kh, kw), (sh, sw)
CASES = [
    ("rect_kernel_nonoverlapping", (2, 3, 6, 10), (2, 5), (2, 5)),
    ("overlapping_k3_s2", (1, 2, 7, 5), (3, 3), (2, 2)),
    ("nonsquare_image_2x2_patches", (1, 3, 6, 10), (2, 2), (2, 2)),
    ("remainder_dropped", (1, 1, 7, 6), (3, 2), (2, 3)),
]


def values(t):
    return " ".join("%.9g" % v for v in t.flatten().tolist())


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "tests", "data", "unfold_golden.txt")
    lines = ["# torch.nn.functional.unfold golden values, torch " + torch.__version__,
             "# written by autograd/scripts/make_unfold_golden.py (see its header for the format)"]
    for name, shape, kernel, stride in CASES:
        n = shape[0] * shape[1] * shape[2] * shape[3]
        x = ((torch.arange(n, dtype=torch.float64) * 37) % n - n // 2).reshape(shape) / 8
        y = F.unfold(x, kernel, stride=stride)
        lines += ["case " + name,
                  "input %d %d %d %d" % shape, values(x),
                  "kernel %d %d stride %d %d" % (kernel + stride),
                  "output %d %d %d" % tuple(y.shape), values(y)]
    lines.append("end")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
