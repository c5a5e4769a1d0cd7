// gemm_avx512.cpp — gemm's kernels for AVX-512 (x86-64-v4: 32 registers of 64 bytes).
// Compiled with -march=x86-64-v4 (CMakeLists.txt) and used only on CPUs that have it (cpu_isa.h).
#include "patchgrad/autograd/cpu/gemm/gemm_tile.h"

#if defined(__x86_64__)
// 12 x 2 accumulators + 2 vectors of B + 1 broadcast of A = 27 of 32 registers.
const patchgrad::GemmKernels patchgrad::gemm_kernels_avx512 = Tile<Vector512, 12, 2>::table(Isa::Avx512);
#endif
