"""Training throughput of patchgrad against PyTorch on this machine, measured in one run.

Run by hand from the repository root with Debian's PyTorch (python3-torch 1.13 is installed
for the system Python, not for a pyenv one on PATH) and OpenBLAS (libopenblas0-pthread; see
blas_library), after building patchgrad:

    /usr/bin/python3 vit/scripts/bench_torch.py [--config cifar-tiny] [--batch 128] [--steps 10]
        [--warmup 2] [--rounds 2] [--patchgrad build/patchgrad] [--dim D --depth L --heads H --mlp M --patch P]
        [--precision fp32|bf16]
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 vit/scripts/bench_torch.py --matmul [--rounds 2] [--patchgrad PATH]

Both sides time the same training step on one random batch: forward, mean cross-entropy,
backward, AdamW (lr 1e-3, weight decay 0.05 on the matrices only, split like timm), and
zero_grad. PyTorch runs the independent timm-style ViT of vit/scripts/make_golden.py (same
parameter names, shapes and operations as patchgrad's model) with 1 and with 2 threads
(torch.set_num_threads; Debian's PyTorch multiplies matrices in OpenBLAS, whose own thread
pool uses every core unless OPENBLAS_NUM_THREADS is set, so "1 thread" still uses both cores
in its matmuls); patchgrad runs `patchgrad bench --threads 1` and `--threads 2` (a build
with OpenBLAS gets OPENBLAS_NUM_THREADS=1 unless the environment sets it). Every measurement is
its own process, so each peak RSS is that run's alone, and the four (six in bf16, below)
alternate, round after round, so a slow spell of the machine hits them alike. The summary
takes each contender's best round and compares the better patchgrad with the better PyTorch.

With --precision bf16, PyTorch runs its step under torch.autocast("cpu", dtype=torch.bfloat16)
and patchgrad under `--precision bf16` (bf16 inputs to every matrix product, float32 sums),
and patchgrad's float32 step joins the rounds, so that bf16's speed-up over it is a ratio
taken in the same run too. The summary repeats patchgrad's precision line, which names the
bf16 kernel that ran, and PATCHGRAD_BF16 (autograd/cpu/bf16/gemm_bf16.h) passes through to choose
it (on an AMX machine, PATCHGRAD_BF16=vdpbf16ps measures what a CPU with AVX512_BF16 alone
gets).
The summary names the kernel set OpenBLAS chose for this CPU (openblas_get_corename): an
OpenBLAS older than the CPU falls back to old, slow kernels (0.3.21 runs "Prescott", SSE3, on
an Intel Xeon of CPU family 6 model 207), and OPENBLAS_CORETYPE=SkylakeX (or Haswell) chooses
for it. A choice made by that variable is named as such ("Haswell, forced by OPENBLAS_CORETYPE"):
check the environment before comparing, since a variable left set there decides for OpenBLAS.

With --matmul it times matrix products alone on one thread (set OPENBLAS_NUM_THREADS=1 too),
on the sizes `patchgrad bench matmul` uses, best of 5 after a warm-up: PyTorch's float32
`torch.mm(a, b, out=c)` alternating with `patchgrad bench matmul`, round after round, then the
best round of each and their ratio per size; or, when there is no patchgrad binary, PyTorch's
float32 and bf16 alone. (Into a preallocated c, as patchgrad's C is: `a @ b` allocates its
answer each time, which makes it slower than OpenBLAS's own cblas_sgemm, a bias in patchgrad's
favour. Steadier still, a patchgrad built with OpenBLAS runs both in one process, in turn:
`patchgrad bench matmul`'s ours/BLAS column.)
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# vit_config() in vit/vision_transformer.cpp; the script checks that patchgrad reports the same.
CONFIGS = {
    "cifar-micro": dict(patch_size=4, dim=96, depth=4, heads=4, mlp_dim=192),
    "cifar-tiny": dict(patch_size=4, dim=128, depth=6, heads=4, mlp_dim=256),
    "cifar-small": dict(patch_size=4, dim=192, depth=6, heads=3, mlp_dim=384),
}
OVERRIDES = [("--dim", "dim"), ("--depth", "depth"), ("--heads", "heads"), ("--mlp", "mlp_dim"),
             ("--patch", "patch_size")]


def cifar_model_config(name, overrides=None):
    """make_golden.py's ViT config of patchgrad's named CIFAR config, with the overrides that are not None."""
    c = dict(image_height=32, image_width=32, channels=3, num_classes=10, layer_norm_eps=1e-6, pool="cls",
             head="linear", qkv_bias=True, gelu="none", learnable_pos_embed=True, **CONFIGS[name])
    c.update({key: value for key, value in (overrides or {}).items() if value is not None})
    return c


def model_config(args):
    return cifar_model_config(args.config, {key: getattr(args, flag[2:]) for flag, key in OVERRIDES})


def adamw(model, lr, weight_decay):
    """AdamW with no weight decay on biases, LayerNorm parameters, class token and position embedding:
    timm's param_groups_weight_decay, as patchgrad's split_weight_decay."""
    import torch
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        exempt = p.ndim <= 1 or name.endswith(".bias") or name in ("cls_token", "pos_embed")
        (no_decay if exempt else decay).append(p)
    return torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}], lr=lr,
                             betas=(0.9, 0.999), eps=1e-8, weight_decay=weight_decay)


def blas_library():
    """The BLAS this process has loaded (call after importing torch), from /proc/self/maps.

    Debian's PyTorch multiplies matrices through libblas.so.3, which is whichever BLAS the
    alternatives system points at: `apt-get install --no-install-recommends python3-torch`
    brings only the reference BLAS (libblas3), which trains cifar-tiny at less than half
    OpenBLAS's speed (libopenblas0-pthread: an epoch of train_torch.py's default preset took
    212 s with it, and had not finished after 450 s without), so every timing depends on it."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "blas" in line and "/" in line}
    except OSError:
        return "unknown"
    blas = sorted(p for p in paths if os.path.basename(p).startswith("libblas"))
    return (blas or sorted(paths) or ["unknown"])[0]


def blas_core(blas):
    """The kernel set OpenBLAS runs on this CPU ("SkylakeX", "Haswell", "Prescott", ...), or "unknown";
    "Haswell, forced by OPENBLAS_CORETYPE" when the environment chose it (a machine may come with the
    variable set, to kernels slower than those OpenBLAS picks by itself)."""
    try:
        import ctypes
        lib = ctypes.CDLL(blas)
        lib.openblas_get_corename.restype = ctypes.c_char_p
        core = lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "unknown"
    return core + ", forced by OPENBLAS_CORETYPE" if os.environ.get("OPENBLAS_CORETYPE") else core


def blas_warning(blas):
    """The warning for a BLAS named by blas_library() that is not OpenBLAS, or None."""
    if "openblas" in blas or blas == "unknown":
        return None
    return ("PyTorch's BLAS is %s, not OpenBLAS; it trains at less than half the speed it has with OpenBLAS "
            "(apt-get install libopenblas0-pthread)" % blas)


def check_blas():
    """Returns blas_library(), printing blas_warning on stderr if there is one."""
    blas = blas_library()
    warning = blas_warning(blas)
    if warning:
        print("warning: " + warning, file=sys.stderr, flush=True)
    return blas


def rss_mib():
    """Resident memory now (VmRSS), in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def torch_worker(args):
    """One PyTorch measurement in this process; prints one JSON line."""
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(ROOT, "vit", "scripts"))
    from make_golden import ViT

    torch.set_num_threads(args.torch_worker)
    torch.manual_seed(0)
    c = model_config(args)
    model = ViT(c)
    model.train()
    optimizer = adamw(model, lr=1e-3, weight_decay=0.05)
    images = torch.randn(args.batch, c["channels"], c["image_height"], c["image_width"])
    labels = torch.randint(0, c["num_classes"], (args.batch,))

    before_mib = rss_mib()
    ms = []
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        with autocast:
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= args.warmup:
            ms.append((time.perf_counter() - t0) * 1e3)
    mean_ms = sum(ms) / len(ms)
    print(json.dumps(dict(img_s=args.batch / (mean_ms * 1e-3), mean_ms=mean_ms, min_ms=min(ms),
                          peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, before_mib=before_mib,
                          params=sum(p.numel() for p in model.parameters()), loss=loss.item(),
                          torch=torch.__version__, blas=blas_library(), blas_core=blas_core(blas_library()))))


# As `patchgrad bench matmul` runs them: 1024^3, then cifar-tiny's linear layers at batch 128 (forward
# A @ B^T and input gradient A @ B at M = 8320, weight gradient A^T @ B at K = 8320).
MATMUL_SIZES = [(1024, 1024, 1024), (8320, 384, 128), (8320, 128, 128), (8320, 256, 128), (8320, 128, 256),
                (8320, 128, 384), (384, 128, 8320), (128, 128, 8320), (256, 128, 8320), (128, 256, 8320)]
MATMUL_FORMS = ["A @ B", "A @ B^T", "A^T @ B"]  # as `patchgrad bench matmul` names its rows


def torch_matmul_rates(bf16):
    """{(m, n, k): (float32 GFLOP/s, bf16 GFLOP/s or None)} of PyTorch's `torch.mm(a, b, out=c)` on one thread,
    best of 5."""
    import torch
    torch.set_num_threads(1)

    def rate(product, flop):
        product()
        best = min(timed(product) for _ in range(5))
        return flop / best * 1e-9

    def timed(product):
        t0 = time.perf_counter()
        product()
        return time.perf_counter() - t0

    rates = {}
    for m, n, k in MATMUL_SIZES:
        a, b, c = torch.rand(m, k) * 2 - 1, torch.rand(k, n) * 2 - 1, torch.empty(m, n)
        flop = 2.0 * m * n * k
        half = None
        if bf16:
            a16, b16, c16 = a.bfloat16(), b.bfloat16(), c.bfloat16()
            half = rate(lambda: torch.mm(a16, b16, out=c16), flop)
        rates[(m, n, k)] = (rate(lambda: torch.mm(a, b, out=c), flop), half)
    return rates


def patchgrad_matmul_rates(binary):
    """{(m, n, k): [GFLOP/s of gemm_blocked for each of MATMUL_FORMS]} from `patchgrad bench matmul`."""
    cmd = [binary, "bench", "matmul"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("bench_torch.py: %s failed:\n%s" % (" ".join(cmd), result.stderr))
    rates, size = {}, None
    for line in result.stdout.splitlines():
        match = re.match(r"^M=(\d+) N=(\d+) K=(\d+)$", line)
        if match:
            size = tuple(int(x) for x in match.groups())
            rates[size] = []
            continue
        row = re.match(r"^(.+?)\s{2,}([0-9.]+)", line)  # a form's label, then gemm_blocked's column
        if size and row and row.group(1).split(" (")[0] in MATMUL_FORMS:
            rates[size].append(float(row.group(2)))
    if sorted(rates) != sorted(MATMUL_SIZES) or any(len(r) != len(MATMUL_FORMS) for r in rates.values()):
        sys.exit("bench_torch.py: unexpected output of %s:\n%s" % (" ".join(cmd), result.stdout))
    return rates


def torch_matmul(args):
    """PyTorch's float32 (OpenBLAS) and bf16 (oneDNN) products on bench matmul's sizes, one thread; with a
    patchgrad binary, float32 only, alternating with `patchgrad bench matmul` round after round."""
    import torch
    blas = blas_library()
    if not os.access(args.patchgrad, os.X_OK):
        print("PyTorch %s, one thread; float32 by %s (kernels %s), bf16 by oneDNN; best of 5, GFLOP/s"
              % (torch.__version__, blas, blas_core(blas)))
        for (m, n, k), (fp32, bf16) in torch_matmul_rates(bf16=True).items():
            print("M=%-5d N=%-4d K=%-4d  float32 %6.1f   bf16 %6.1f" % (m, n, k, fp32, bf16))
        return
    best_torch, best_ours = {}, {}
    for r in range(1, args.rounds + 1):
        ours = patchgrad_matmul_rates(args.patchgrad)
        theirs = torch_matmul_rates(bf16=False)
        for size in MATMUL_SIZES:
            best_torch[size] = max(best_torch.get(size, 0.0), theirs[size][0])
            best_ours[size] = [max(a, b) for a, b in zip(best_ours.get(size, [0.0] * len(MATMUL_FORMS)), ours[size])]
            print("round %d  M=%-5d N=%-4d K=%-4d  OpenBLAS %6.1f   patchgrad %s" % (
                r, *size, theirs[size][0], " ".join("%6.1f" % x for x in ours[size])), flush=True)
    print()
    print("float32 GFLOP/s on one thread, best of %d rounds (each the best of 5 runs): PyTorch's "
          "`torch.mm(a, b, out=c)` by %s (kernels %s) and patchgrad's gemm_blocked (%s)"
          % (args.rounds, blas, blas_core(blas), ", ".join(MATMUL_FORMS)))
    for size in MATMUL_SIZES:
        print("M=%-5d N=%-4d K=%-4d  OpenBLAS %6.1f   patchgrad %s   ratio %s" % (
            *size, best_torch[size], " ".join("%6.1f" % x for x in best_ours[size]),
            " ".join("%.2f" % (x / best_torch[size]) for x in best_ours[size])))


def run_torch(args, threads):
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", str(threads)] + common_flags(args)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def common_flags(args, precision=None):
    flags = ["--config", args.config, "--batch", str(args.batch), "--steps", str(args.steps),
             "--warmup", str(args.warmup), "--precision", precision or args.precision]
    for flag, _ in OVERRIDES:
        value = getattr(args, flag[2:])
        if value is not None:
            flags += [flag, str(value)]
    return flags


def run_patchgrad(args, threads, precision=None):
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    cmd = [args.patchgrad, "bench", "--threads", str(threads)] + common_flags(args, precision)
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit("bench_torch.py: %s failed:\n%s" % (" ".join(cmd), result.stderr))
    out = result.stdout

    def find(pattern):
        match = re.search(pattern, out, re.MULTILINE)
        if not match:
            sys.exit("bench_torch.py: no match for %r in the output of %s:\n%s" % (pattern, " ".join(cmd), out))
        return match.groups()

    img_s, = find(r"^img/s\s+([0-9.]+)")
    mean_ms, min_ms = find(r"^ms per step\s+mean ([0-9.]+), min ([0-9.]+)")
    peak, before = find(r"^peak RSS\s+([0-9.]+) MiB \(VmHWM\); ([0-9.]+) MiB before the first step")
    params, = find(r"^patchgrad bench: .*, ([0-9]+) parameters")
    c = model_config(args)
    sizes = find(r"^patchgrad bench: \S+: 32x32 images, 3 channels, patch (\d+) \(\d+ patches\), dim (\d+), "
                 r"depth (\d+), heads (\d+), MLP (\d+),")
    expected = tuple(str(c[k]) for k in ("patch_size", "dim", "depth", "heads", "mlp_dim"))
    if sizes != expected:
        sys.exit("bench_torch.py: patchgrad runs patch/dim/depth/heads/MLP %s but this script's %s is %s; update "
                 "CONFIGS" % (sizes, args.config, expected))
    build, = find(r"^build: (.*)$")
    precision, = find(r"^precision: (.*)$")  # in bf16, the kernel that ran (AMX, vdpbf16ps, ...)
    return dict(img_s=float(img_s), mean_ms=float(mean_ms), min_ms=float(min_ms), peak_mib=float(peak),
                before_mib=float(before),
                params=int(params), build=build, precision=precision)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="cifar-tiny", choices=sorted(CONFIGS))
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                        help="bf16: PyTorch under bf16 autocast, patchgrad with --precision bf16")
    parser.add_argument("--patchgrad", default=os.path.join(ROOT, "build", "patchgrad"),
                        help="the patchgrad binary (default: build/patchgrad in the repository)")
    for flag, _ in OVERRIDES:
        parser.add_argument(flag, type=int)
    parser.add_argument("--matmul", action="store_true",
                        help="time the matrix products alone, one thread: PyTorch's, and patchgrad's if --patchgrad "
                             "names a binary that exists")
    parser.add_argument("--torch-worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name in ("batch", "steps", "rounds"):
        if getattr(args, name) <= 0:
            parser.error("--%s must be positive" % name)
    if args.warmup < 0:
        parser.error("--warmup must be 0 or positive")

    if args.torch_worker:
        torch_worker(args)
        return
    if args.matmul:
        torch_matmul(args)
        return
    if not os.access(args.patchgrad, os.X_OK):
        sys.exit("bench_torch.py: no patchgrad binary at %s (build it, or pass --patchgrad PATH)" % args.patchgrad)

    c = model_config(args)
    print("config %s: patch %d, dim %d, depth %d, heads %d, MLP %d; batch %d, %d warm-up + %d measured steps, "
          "%d rounds, precision %s" % (args.config, c["patch_size"], c["dim"], c["depth"], c["heads"], c["mlp_dim"],
                                       args.batch, args.warmup, args.steps, args.rounds, args.precision))
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    bf16 = args.precision == "bf16"
    torch_tag, ours_tag = ("PyTorch autocast", "patchgrad bf16") if bf16 else ("PyTorch", "patchgrad")
    names = [torch_tag + " 1 thread", torch_tag + " 2 threads", ours_tag + " 1 thread", ours_tag + " 2 threads"]
    # In bf16, patchgrad's float32 step runs in the same rounds: bf16 pays only if it beats that too.
    fp32_names = ["patchgrad fp32 1 thread", "patchgrad fp32 2 threads"] if bf16 else []
    results = {name: [] for name in names + fp32_names}
    for r in range(1, args.rounds + 1):
        for name in names + fp32_names:
            threads = 1 if "1 thread" in name else 2
            if name.startswith("patchgrad"):
                res = run_patchgrad(args, threads, "fp32" if name in fp32_names else None)
            else:
                res = run_torch(args, threads)
            results[name].append(res)
            print("round %d  %-24s %8.1f img/s   ms/step mean %7.1f min %7.1f   peak RSS %7.1f MiB (%.1f before "
                  "the first step)" % (r, name, res["img_s"], res["mean_ms"], res["min_ms"], res["peak_mib"],
                                       res["before_mib"]), flush=True)
    print("load average after:  %.2f %.2f %.2f" % os.getloadavg())

    best = {name: max(results[name], key=lambda res: res["img_s"]) for name in results}
    torch_best = max(names[:2], key=lambda name: best[name]["img_s"])
    ours_best = max(names[2:], key=lambda name: best[name]["img_s"])
    print()
    print("PyTorch %s (BLAS %s, kernels %s), %d parameters; patchgrad %s, %d parameters" % (
        best[names[0]]["torch"], best[names[0]]["blas"], best[names[0]]["blas_core"], best[names[0]]["params"],
        best[ours_best]["build"], best[ours_best]["params"]))
    print("patchgrad precision: %s" % best[ours_best]["precision"])
    warning = blas_warning(best[names[0]]["blas"])
    if warning:
        print("WARNING: " + warning)
    if best[names[0]]["params"] != best[ours_best]["params"]:
        print("WARNING: the two models differ in size, so the comparison is not like for like")
    print("best round of each:")
    for name in results:
        print("  %-24s %8.1f img/s   peak RSS %7.1f MiB, of which the training steps added %.1f" % (
            name, best[name]["img_s"], best[name]["peak_mib"], best[name]["peak_mib"] - best[name]["before_mib"]))
    print("ratio %s / %s (the better of each): %.2f" % (
        ours_best, torch_best, best[ours_best]["img_s"] / best[torch_best]["img_s"]))
    if fp32_names:
        fp32_best = max(fp32_names, key=lambda name: best[name]["img_s"])
        print("ratio %s / %s (bf16 over float32, the better of each): %.2f" % (
            ours_best, fp32_best, best[ours_best]["img_s"] / best[fp32_best]["img_s"]))


if __name__ == "__main__":
    main()
