#!/usr/bin/env bash
# tests/scripts/arm64.sh — patchgrad on ARM64 without an ARM64 machine: cross-compiles with
# Debian's g++-aarch64-linux-gnu and runs the float32 tests (gemm at the NEON level, every op with a
# per-level kernel, the golden ViT, bf16 products with and without ARM's BF16, PATCHGRAD_BF16=bfdot
# on both) and the float64 gemm, matmul and gradient-check tests of the ops under
# qemu-user-static. CI runs the float32 half; run the whole after touching the kernels
# (autograd/cpu/gemm/gemm_tile.h, cpu_isa.h, fast_math.h, gemm_bf16_neon.cpp):
#
#   bash tests/scripts/arm64.sh                # build in build-arm64/, run the tests
#   BUILD_DIR=/tmp/arm bash tests/scripts/arm64.sh
#   bash tests/scripts/arm64.sh --float32      # the float32 build and tests only (what CI runs)
#   CXX=clang++ bash tests/scripts/arm64.sh    # built by clang (Apple's compiler is one), not GCC
#
# The float64 half costs the most (minutes of emulation, and a build of its own); CI's 30
# minutes do not hold it.
set -euo pipefail
cd "$(dirname "$0")/../.."

float64=1
case "${1:-}" in
  "") ;;
  --float32) float64=0 ;;
  *) echo "tests/scripts/arm64.sh: unknown argument '$1' (the only one is --float32)" >&2; exit 2 ;;
esac

# The toolchain file makes the same choice from CXX.
compiler=gcc
[[ "${CXX:-}" != *clang* ]] || compiler=clang

need=()
# (clang too needs the GCC cross compiler's ARM64 libraries and headers.)
command -v aarch64-linux-gnu-g++ >/dev/null || need+=(g++-aarch64-linux-gnu)
[ "$compiler" = gcc ] || command -v "$CXX" >/dev/null || need+=(clang)
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v cmake >/dev/null || need+=(cmake)
[ -e /usr/include/catch2/catch.hpp ] || [ -e /usr/include/catch2/catch_all.hpp ] || need+=(catch2)
if ((${#need[@]})); then
  command -v apt-get >/dev/null || { echo "tests/scripts/arm64.sh: please install ${need[*]}" >&2; exit 1; }
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${need[@]}"
fi

default_build="build-arm64"
[ "$compiler" = gcc ] || default_build="build-arm64-clang"
build=${BUILD_DIR:-$default_build}
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE="$PWD/tests/scripts/aarch64-linux-gnu.cmake" -DCMAKE_BUILD_TYPE=Release \
  -DPATCHGRAD_BUILD_TUTORIALS=OFF -DPATCHGRAD_WERROR=ON
targets=(patchgrad_tests32 patchgrad)
((float64)) && targets+=(patchgrad_tests64)
cmake --build "$build" -j "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)" --target "${targets[@]}"

run() { qemu-aarch64-static -L /usr/aarch64-linux-gnu "$@"; }
# Each heading names the seconds since the script started: the build and the emulated runs
# take minutes each, and CI's log should show which.
step() { echo "== [$SECONDS s] $*"; }
step "the CPU as the binary sees it"
run "$build/patchgrad" bench matmul 96 96 96 --repeats 1 | grep "^cpu: \|^gemm_bf16: "
step "float32: every test"
run "$build/tests/patchgrad_tests32"
# qemu's default CPU has the BF16 extension, so the run above tested the BFDOT kernel; a
# Cortex-A72 has not, and gets the emulation.
step "bf16 on a CPU without BF16 (qemu -cpu cortex-a72)"
run -cpu cortex-a72 "$build/patchgrad" bench matmul 96 96 96 --repeats 1 | grep "^gemm_bf16: bf16 emulated"
run -cpu cortex-a72 "$build/tests/patchgrad_tests32" "[bf16]"
step "PATCHGRAD_BF16=bfdot: BFDOT where the CPU has it, refused in words where it has not"
PATCHGRAD_BF16=bfdot run "$build/patchgrad" bench matmul 96 96 96 --repeats 1 |
  grep "^gemm_bf16: bf16 neon_bf16 (bfdot), tile .* (PATCHGRAD_BF16=bfdot)$"
refusal=$(PATCHGRAD_BF16=bfdot run -cpu cortex-a72 "$build/patchgrad" bench matmul 96 96 96 --repeats 1 2>&1 || true)
grep "PATCHGRAD_BF16=bfdot: that kernel cannot run here (this CPU has no ARM BF16" <<<"$refusal"
if ((float64)); then
  step "float64: gemm, matmul, the ops' gradient checks, threads"
  run "$build/tests/patchgrad_tests64" "[op:gemm],[op:matmul],[gradcheck],[parallel]"
fi
echo "tests/scripts/arm64.sh: all passed in $SECONDS s"
