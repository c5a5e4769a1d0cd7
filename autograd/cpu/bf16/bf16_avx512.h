// bf16_avx512.h — AVX512_BF16's conversions shared by the code that packs bf16 pairs for the
// kernels: gemm_bf16_avx512.cpp (the AVX-512 and AMX gemm packing) and
// autograd/cpu/rows/attention_heads_amx.cpp. Include it only from files compiled for
// AVX512_BF16 (CMakeLists.txt), and only on x86-64. Everything here has internal linkage, so
// that each such file gets its own copy compiled with its own flags.
#pragma once

#include <cstdint>

// GCC 12's AVX-512 header starts some shuffles from a deliberately undefined register
// (`__m512i __Y = __Y;`), which -Wmaybe-uninitialized reports once they are inlined (GCC bug
// 105593, fixed in GCC 12.3); the warning's location is the header, so the pragma covers it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

namespace patchgrad {
namespace {

inline __mmask16 first_lanes(int64_t n) {  // the lowest n of 16 lanes, n clamped to [0, 16]
    return static_cast<__mmask16>(n <= 0 ? 0u : n >= 16 ? 0xffffu : (1u << n) - 1);
}

// The 16 pairs of the floats x[0 .. n), n clamped to [0, 32], rounded to nearest even by the
// CPU's conversion (which also flushes float32 denormals, below 1.2e-38, to zero: the one
// difference from round_to_bf16); floats past n read nothing and are zero.
inline __m512i pairs_of_run(const float* x, int64_t n) {
    const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(n), x);
    const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(n - 16), x + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

// The pairs (lo[j], hi[j]) of two runs of 16 floats: the conversion gives lo's 16 bf16 values,
// then hi's; vpermw moves lo[j] to element 2j and hi[j] to 2j + 1.
inline __m512i interleaved_pairs(__m512 lo, __m512 hi) {
    alignas(64) static const uint16_t order[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                   8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    return _mm512_permutexvar_epi16(_mm512_load_si512(order), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

// r[j] lane q  ->  r[q] lane j, for 16 x 16 words: rows interleaved by 32 bits, then by 64
// bits, then by 128-bit quarters twice (the usual four rounds, 64 shuffles).
inline void transpose_16x16(__m512i (&r)[16]) {
    __m512i t[16];
#pragma GCC unroll 8
    for (int j = 0; j < 16; j += 2) {
        t[j] = _mm512_unpacklo_epi32(r[j], r[j + 1]);
        t[j + 1] = _mm512_unpackhi_epi32(r[j], r[j + 1]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 16; j += 4) {
        r[j] = _mm512_unpacklo_epi64(t[j], t[j + 2]);
        r[j + 1] = _mm512_unpackhi_epi64(t[j], t[j + 2]);
        r[j + 2] = _mm512_unpacklo_epi64(t[j + 1], t[j + 3]);
        r[j + 3] = _mm512_unpackhi_epi64(t[j + 1], t[j + 3]);
    }
    // Now quarter c of r[4g + m] is lane 4c + m of rows 4g .. 4g + 3, and row 4c + m of the
    // result is quarter c of r[m], r[4 + m], r[8 + m], r[12 + m]: two rounds gather them.
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
        t[m] = _mm512_shuffle_i32x4(r[m], r[4 + m], 0x88);      // quarters 0, 2 of each
        t[4 + m] = _mm512_shuffle_i32x4(r[m], r[4 + m], 0xdd);  // quarters 1, 3
        t[8 + m] = _mm512_shuffle_i32x4(r[8 + m], r[12 + m], 0x88);
        t[12 + m] = _mm512_shuffle_i32x4(r[8 + m], r[12 + m], 0xdd);
    }
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
        r[m] = _mm512_shuffle_i32x4(t[m], t[8 + m], 0x88);
        r[8 + m] = _mm512_shuffle_i32x4(t[m], t[8 + m], 0xdd);
        r[4 + m] = _mm512_shuffle_i32x4(t[4 + m], t[12 + m], 0x88);
        r[12 + m] = _mm512_shuffle_i32x4(t[4 + m], t[12 + m], 0xdd);
    }
}

}  // namespace
}  // namespace patchgrad
