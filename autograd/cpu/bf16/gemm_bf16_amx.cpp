// gemm_bf16_amx.cpp — the AMX instructions under gemm_bf16_amx_tile.h's kernel. Compiled with
// -march=x86-64-v4 -mavx512bf16 -mamx-tile -mamx-bf16 where the compiler knows AMX (CMakeLists.txt
// then defines PATCHGRAD_AMX), and used only after
// gemm_bf16.cpp has found AMX in the CPU, obtained the operating system's permission to use it
// (Linux: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) and checked the kernel's
// results on a small product against float64.
//
// The tile registers' shapes are thread state, set by ldtilecfg from a 64-byte description:
// here all eight tiles are 16 rows x 64 bytes, loaded once per thread. (Loading it also
// zeroes every tile, so it happens before a kernel's first tile, never between two.) The tile
// numbers are part of each instruction's encoding, so they are written out, not passed in.
//
// GCC's _tile_loadd and _tile_loadconfig are asm statements that take the address but do not
// name the memory behind it, so the compiler may drop or delay stores that only they read (the
// configuration on the stack, a packing inlined before the load). compiler_fence() before them
// makes every earlier store happen first; clang's builtins need none, harmlessly.
#include "patchgrad/autograd/cpu/bf16/gemm_bf16_amx_tile.h"

#if defined(PATCHGRAD_AMX) && !defined(PATCHGRAD_DOUBLE)
#include <immintrin.h>

namespace patchgrad {
namespace {

// A compiler-only barrier: no instruction, but memory is assumed read and written here.
inline void compiler_fence() { asm volatile("" ::: "memory"); }

struct AmxTiles {
    static void load(const float* c, int64_t ldc) {  // ldc in floats; 0 repeats one row
        amx_configure_tiles();
        compiler_fence();
        _tile_loadd(0, c, ldc * 4);
        _tile_loadd(1, c + 16, ldc * 4);
        _tile_loadd(2, c + 16 * ldc, ldc * 4);
        _tile_loadd(3, c + 16 * ldc + 16, ldc * 4);
    }
    static void zero() {
        amx_configure_tiles();
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    static void multiply(const uint32_t* a, int64_t lda, const uint32_t* b, int64_t ldb) {
        compiler_fence();
        _tile_loadd(4, a, lda * 4);
        _tile_loadd(6, b, ldb * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b + 16, ldb * 4);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a + 16 * lda, lda * 4);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    static void store(float* c, int64_t ldc) {  // c[32][32], rows ldc floats apart
        _tile_stored(0, c, ldc * 4);
        _tile_stored(1, c + 16, ldc * 4);
        _tile_stored(2, c + 16 * ldc, ldc * 4);
        _tile_stored(3, c + 16 * ldc + 16, ldc * 4);
        compiler_fence();  // (the edge's copy out of a buffer reads what the stores wrote)
    }
};

}  // namespace

void amx_configure_tiles() {
    thread_local bool configured = false;
    if (configured) return;
    alignas(64) uint8_t config[64] = {};
    config[0] = 1;  // palette 1: eight tiles of up to 16 rows x 64 bytes
    for (int t = 0; t < 8; ++t) {
        config[16 + 2 * t] = 64;  // bytes per row (colsb, a 16-bit field)
        config[48 + t] = 16;      // rows
    }
    compiler_fence();
    _tile_loadconfig(config);
    configured = true;
}

// Packed by AVX512_BF16's conversion (gemm_bf16_avx512.cpp), which every CPU with AMX-BF16 has.
const Bf16Kernels gemm_bf16_kernels_amx =
    AmxKernel<AmxTiles>::table("amx (tdpbf16ps)", &gemm_bf16_amx_pack_a, &gemm_bf16_amx_pack_b);

}  // namespace patchgrad
#endif
