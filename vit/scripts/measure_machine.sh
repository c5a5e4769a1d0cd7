#!/usr/bin/env bash
# measure_machine.sh — every speed figure chapter 12's tables keep per machine, taken in
# one go on the machine at hand: its identity, patchgrad against PyTorch on cifar-tiny and
# cifar-micro (the default build, the native build if given, and forced AVX2 on an AVX-512
# CPU), gemm against OpenBLAS on one thread, the memory's read, write and copy rates, a step's
# share of the gemm rate, and, where the CPU
# has bf16 instructions, bf16 against PyTorch's autocast and against patchgrad's own float32.
#
#   bash vit/scripts/measure_machine.sh [--patchgrad build/patchgrad] [--native PATH] [--rounds 2]
#                                       [--openblas PATH]
#
# --openblas names a patchgrad built with OpenBLAS (cmake -S . -B build-openblas
# -DCMAKE_BUILD_TYPE=Release -DPATCHGRAD_USE_OPENBLAS=ON && make -C build-openblas -j2 patchgrad;
# another build is refused): its `bench matmul` runs gemm_blocked and cblas_sgemm in turn in one process on the same
# matrices, and the median of their pairwise ratios (the ours/BLAS column) is the gemm
# comparison least moved by a host whose speed swings; without it, gemm is compared with
# PyTorch's products in separate processes only.
#
# Run it on an otherwise idle machine (a build or a training run beside it halves what it
# measures), with PyTorch and OpenBLAS installed as chapter 12 says; it runs
# in the repository root, so relative paths are taken from there. Everything it prints also
# goes to a log whose path it prints last; the summary at the end repeats each ratio under the
# command that produced it. It takes a few minutes on 2 vCPUs (bf16 instructions add three runs).
#
# Why the environment variables: OpenBLAS 0.3.21 (Debian 12's) may not know CPUs newer than it
# and fall back to "Prescott", SSE3 kernels that would flatter patchgrad by 2-3x. So on a CPU
# with AVX-512 this script sets OPENBLAS_CORETYPE=SkylakeX unless OpenBLAS already runs AVX-512
# kernels, and Haswell where it picks Prescott on an AVX2 CPU, for every PyTorch and cblas_sgemm
# run, and says so. An OPENBLAS_CORETYPE already in the environment is dropped first (and
# named): a machine may come with OPENBLAS_CORETYPE=Haswell set, AVX2 kernels at about half
# of what OpenBLAS's own choice reaches on an AVX-512 CPU, which would flatter patchgrad by 2x.
# PATCHGRAD_ISA=avx2 with OPENBLAS_CORETYPE=Haswell is the AVX2 laptop on an AVX-512 machine;
# PATCHGRAD_BF16=vdpbf16ps is a CPU with AVX512_BF16 but no AMX.
set -euo pipefail
cd "$(dirname "$0")/../.."

binary=build/patchgrad
native=""
openblas=""
rounds=2
while [ $# -gt 0 ]; do
    case "$1" in
        --patchgrad) binary=${2:?--patchgrad needs a path}; shift 2 ;;
        --native) native=${2:?--native needs a path}; shift 2 ;;
        --openblas) openblas=${2:?--openblas needs a path}; shift 2 ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "measure_machine.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$rounds" in '' | *[!0-9]* | 0) echo "measure_machine.sh: --rounds must be a positive number, got '$rounds'" >&2; exit 2 ;; esac
python=/usr/bin/python3  # Debian's python3-torch is installed for the system Python
for b in "$binary" $native; do
    [ -x "$b" ] || { echo "measure_machine.sh: no patchgrad binary at $b (build it: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && make -C build -j2 patchgrad)" >&2; exit 2; }
done
openblas_build="cmake -S . -B build-openblas -DCMAKE_BUILD_TYPE=Release -DPATCHGRAD_USE_OPENBLAS=ON && make -C build-openblas -j2 patchgrad"
if [ -n "$openblas" ]; then
    [ -x "$openblas" ] || { echo "measure_machine.sh: no patchgrad binary at $openblas for --openblas (build it: $openblas_build)" >&2; exit 2; }
    # Without OpenBLAS, bench matmul has no cblas_sgemm to take turns with: no ours/BLAS column.
    [[ "$("$openblas" bench matmul 16 16 16 --repeats 1 2>&1)" == *"ours/BLAS"* ]] ||
        { echo "measure_machine.sh: --openblas $openblas was not built with -DPATCHGRAD_USE_OPENBLAS=ON (build it: $openblas_build)" >&2; exit 2; }
fi
"$python" -c "import torch" 2>/dev/null || {
    echo "measure_machine.sh: $python cannot import torch (apt-get install --no-install-recommends python3-torch libopenblas0-pthread)" >&2
    exit 2
}

log=${TMPDIR:-/tmp}/patchgrad-speed-$(date -u +%Y%m%dT%H%M%SZ).log
exec > >(tee "$log") 2>&1
summary=()
section() { echo; echo "== $*"; }
# run LABEL COMMAND...: prints and runs the command, then keeps its ratio lines (and
# bench_torch.py's best round of each contender, with its img/s and memory) for the summary.
run() {
    local label=$1 output
    shift
    echo "\$ $*"
    output=$("$@" 2>&1) || { echo "$output"; echo "measure_machine.sh: that command failed" >&2; exit 1; }
    echo "$output"
    summary+=("$label: $*" "$(grep -E '^(ratio|M=|img/s|sgemm rate|paired|threads:|patchgrad precision|  (PyTorch|patchgrad) |A @ B|A\^T @ B)' <<<"$output" | sed 's/^/    /' || true)")
}

flags=" $(lscpu | sed -n 's/^Flags: *//p') "
has() { [[ "$flags" == *" $1 "* ]]; }

section "machine"
date -u
lscpu | grep -E '^(Architecture|CPU\(s\)|Model name|CPU family|Model|Thread\(s\) per core|Core\(s\) per socket|L2 cache|L3 cache):' || true
echo "vector and matrix flags:$(for f in sse2 avx2 fma avx512f avx512bw avx512vl avx512_bf16 amx_tile amx_bf16 asimd bf16; do has $f && printf ' %s' $f; done)"
echo "compiler: $(c++ --version | head -1)"
echo "commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
"$binary" --version
"$python" -c "import torch; print('PyTorch', torch.__version__)"

if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
    echo "OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE was set in the environment: dropped, so OpenBLAS picks its own kernels"
    unset OPENBLAS_CORETYPE
fi
blas_core=$("$python" -c "
import sys; sys.path.insert(0, 'vit/scripts')
import torch, bench_torch
print(bench_torch.blas_core(bench_torch.blas_library()))")
echo "OpenBLAS kernels PyTorch gets on its own: $blas_core"
case "$blas_core" in
    SkylakeX | Cooperlake | SapphireRapids) ;;
    *) if has avx512f; then export OPENBLAS_CORETYPE=SkylakeX; elif [ "$blas_core" = Prescott ] && has avx2; then export OPENBLAS_CORETYPE=Haswell; fi ;;
esac
[ -n "${OPENBLAS_CORETYPE:-}" ] && echo "OpenBLAS's own choice leaves this CPU's widest vectors unused: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE for every PyTorch and cblas_sgemm run below but the forced-AVX2 ones (Haswell)"
[ -n "${OPENBLAS_L2_SIZE:-}" ] && echo "OPENBLAS_L2_SIZE=$OPENBLAS_L2_SIZE from the environment is kept (OpenBLAS's L2 size hint, for machines whose CPUID does not report it)"

bench_torch=("$python" vit/scripts/bench_torch.py --steps 8 --warmup 2 --rounds "$rounds")
for b in "$binary" $native; do
    for config in cifar-tiny cifar-micro; do
        section "float32 step, $config, $b"
        run "float32 $config" "${bench_torch[@]}" --patchgrad "$b" --config "$config"
    done
done
if has avx512f; then
    for config in cifar-tiny cifar-micro; do
        section "the AVX2 laptop: PATCHGRAD_ISA=avx2 against OpenBLAS's Haswell kernels, $config"
        run "forced AVX2 $config" env PATCHGRAD_ISA=avx2 OPENBLAS_CORETYPE=Haswell \
            "${bench_torch[@]}" --patchgrad "$binary" --config "$config"
    done
fi

section "gemm on one thread against OpenBLAS"
run "gemm / OpenBLAS" env OPENBLAS_NUM_THREADS=1 "$python" vit/scripts/bench_torch.py --matmul --rounds "$rounds" --patchgrad "$binary"
if [ -n "$openblas" ]; then
    section "gemm against cblas_sgemm in one process, in turn (ours/BLAS: median of 9 pairs)"
    run "gemm / cblas_sgemm in turn" env OPENBLAS_NUM_THREADS=1 "$openblas" bench matmul --repeats 9
    if has avx512f; then
        section "the AVX2 laptop's gemm: PATCHGRAD_ISA=avx2 against OpenBLAS's Haswell kernels, in turn"
        run "forced AVX2 gemm / cblas_sgemm in turn" env OPENBLAS_NUM_THREADS=1 PATCHGRAD_ISA=avx2 \
            OPENBLAS_CORETYPE=Haswell "$openblas" bench matmul --repeats 9
    fi
fi
section "one core's multiply-add ceiling and bf16 products"
"$binary" bench matmul --repeats 5
section "memory: the bytes per second that bound a pass over a step's tensors (1 and 2 threads)"
"$binary" bench memory --threads 1
"$binary" bench memory --threads 2
section "a step's share of this machine's gemm rate (threads chosen by --threads auto)"
for i in 1 2 3; do
    run "step / gemm, run $i" "$binary" bench --config cifar-tiny --steps 8 --warmup 2
done

if has avx512_bf16 || has amx_bf16 || { [ "$(uname -m)" = aarch64 ] && has bf16; }; then
    for config in cifar-tiny cifar-micro; do
        section "bf16, $config: patchgrad --precision bf16 against PyTorch's autocast and patchgrad's float32"
        run "bf16 $config" "${bench_torch[@]}" --patchgrad "$binary" --config "$config" --precision bf16
    done
    if has amx_bf16; then
        section "bf16 without AMX (PATCHGRAD_BF16=vdpbf16ps): what a CPU with AVX512_BF16 alone gets"
        run "bf16 vdpbf16ps cifar-tiny" env PATCHGRAD_BF16=vdpbf16ps \
            "${bench_torch[@]}" --patchgrad "$binary" --config cifar-tiny --precision bf16
    fi
else
    section "bf16: skipped, this CPU has no bf16 instructions (patchgrad would emulate them, not faster)"
fi

section "summary (each ratio under the command that produced it)"
printf '%s\n' "${summary[@]}"
echo
echo "log: $log"
