// gemm_baseline.cpp — gemm's kernels for what every CPU of the architecture has: SSE2 on
// x86-64 (16 registers of 16 bytes, no fused multiply-add), NEON on ARM64 (32 of 16 bytes).
// Compiled with the build's ordinary flags (x86-64: -march=x86-64, CMakeLists.txt).
#include "patchgrad/autograd/cpu/gemm/gemm_tile.h"

#if defined(__aarch64__)
// 8 x 3 accumulators + 3 vectors of B + 1 broadcast of A = 28 of 32 registers.
const patchgrad::GemmKernels patchgrad::gemm_kernels_baseline = Tile<Vector128, 8, 3>::table(Isa::Baseline);
#else
// 6 x 2 accumulators + 2 vectors of B + 1 broadcast of A = 15 of 16 registers.
const patchgrad::GemmKernels patchgrad::gemm_kernels_baseline = Tile<Vector128, 6, 2>::table(Isa::Baseline);
#endif
