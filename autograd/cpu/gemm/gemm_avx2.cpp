// gemm_avx2.cpp — gemm's kernels for AVX2 + FMA (x86-64-v3: 16 registers of 32 bytes).
// Compiled with -march=x86-64-v3 (CMakeLists.txt) and used only on CPUs that have it (cpu_isa.h).
#include "patchgrad/autograd/cpu/gemm/gemm_tile.h"

#if defined(__x86_64__)
// 6 x 2 accumulators + 2 vectors of B + 1 broadcast of A = 15 of 16 registers.
const patchgrad::GemmKernels patchgrad::gemm_kernels_avx2 = Tile<Vector256, 6, 2>::table(Isa::Avx2);
#endif
