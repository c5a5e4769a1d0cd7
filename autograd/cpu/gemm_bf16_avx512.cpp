// gemm_bf16_avx512.cpp — the bf16 kernels for AVX512_BF16 (gemm_bf16.h, gemm_kernels.h).
// Compiled with -march=x86-64-v4 -mavx512bf16 (CMakeLists.txt) and used only on CPUs that have
// both (gemm_bf16.cpp). Everything is in an anonymous namespace and calls no standard-library
// template, for the reason gemm_tile.h gives.
//
// The instruction: vdpbf16ps acc, a, b (_mm512_dpbf16_ps) treats each 32-bit lane of a and b
// as a pair of bf16 values and does, per lane j,
//     acc[j] += a.hi[j] * b.hi[j] + a.lo[j] * b.lo[j]        (two multiply-adds, in float32)
// So one instruction is 32 multiply-adds where float32's vfmadd231ps is 16. The tile is the
// float32 one (12 x 32, 24 accumulators + 2 B + 1 A of the 32 registers); what changes is
// that each step of the loop consumes two values of k, packed as pairs: A's pair for row i is
// broadcast to every lane, B's pairs for 16 columns are one register.
#include "gemm_kernels.h"

#if defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE)
#include <immintrin.h>

namespace patchgrad {
namespace {

constexpr int64_t MR = 12, NV = 2, L = 16, NR = NV * L;

inline int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

inline __mmask16 first_lanes(int64_t n) {  // the lowest n of 16 lanes, n clamped to [0, 16]
    return static_cast<__mmask16>(n <= 0 ? 0u : n >= 16 ? 0xffffu : (1u << n) - 1);
}

// The pairs (lo[j], hi[j]) of two runs of 16 floats, each rounded to nearest even by the CPU's
// conversion (vcvtne2ps2bf16, which also flushes float32 denormals, below 1.2e-38, to zero:
// the one difference from round_to_bf16). The conversion gives lo's 16 bf16 values, then hi's;
// vpermw moves lo[j] to element 2j and hi[j] to 2j + 1.
inline __m512i interleaved_pairs(__m512 lo, __m512 hi) {
    alignas(64) static const uint16_t order[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                   8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    return _mm512_permutexvar_epi16(_mm512_load_si512(order), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

// P[s][q][i] = the pair op(X)[r0 + s*W + i, k0 + 2q .. 2q+1], for slivers of W rows, zero-padded
// to whole slivers (and the second value of the last pair of an odd kc). Packing A is this with
// W = MR; packing B is this for op(B)^T (whose rows are op(B)'s columns) with W = NR.
// Lanes past the matrix are masked off the loads (they read nothing and hold zero).
template <int64_t W>
void pack_pairs(bool trans, const float* X, int64_t ld, int64_t r0, int64_t k0, int64_t rows, int64_t kc, uint32_t* P) {
    const int64_t pairs = (kc + 1) / 2;
    for (int64_t s = 0; s < rows; s += W) {
        const int64_t n = smaller(W, rows - s);
        uint32_t* dst = P + s * pairs;
        if (trans) {
            // op(X)[r, k] = X[k * ld + r]: for each pair, rows k and k + 1 of X are runs along r.
            for (int64_t q = 0; q < pairs; ++q) {
                const float* lo = X + (k0 + 2 * q) * ld + r0 + s;
                const bool odd_end = 2 * q + 1 == kc;  // the zero that pads an odd kc
                for (int64_t i = 0; i < W; i += L) {
                    const __mmask16 valid = first_lanes(n - i);
                    const __m512 hi = odd_end ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(valid, lo + ld + i);
                    _mm512_mask_storeu_epi32(dst + q * W + i, first_lanes(W - i),
                                             interleaved_pairs(_mm512_maskz_loadu_ps(valid, lo + i), hi));
                }
            }
        } else {
            // op(X)[r, k] = X[r * ld + k]: a row's consecutive k are its pairs already; 16 of
            // them at a time are converted and scattered down the sliver's column i.
            const __m512i down =
                _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                   _mm512_set1_epi32(static_cast<int>(W)));
            for (int64_t i = 0; i < W; ++i) {
                const float* row = i < n ? X + (r0 + s + i) * ld + k0 : X;  // (not read past the matrix)
                for (int64_t q = 0; q < pairs; q += L) {
                    const int64_t floats = i < n ? kc - 2 * q : 0;  // a row past the matrix packs zeros
                    const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(floats), row + 2 * q);
                    const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(floats - L), row + 2 * q + L);
                    _mm512_mask_i32scatter_epi32(dst + q * W + i, first_lanes(pairs - q), down,
                                                 (__m512i)_mm512_cvtne2ps_pbh(hi, lo), 4);
                }
            }
        }
    }
}

void pack_a(bool trans_a, const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc, uint32_t* Ap) {
    pack_pairs<MR>(trans_a, A, lda, r0, k0, rows, kc, Ap);
}

void pack_b(bool trans_b, const float* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols, uint32_t* Bp) {
    pack_pairs<NR>(!trans_b, B, ldb, c0, k0, cols, kc, Bp);  // op(B)^T is stored transposed unless B is
}

template <int64_t NB>
void micro_kernel(int64_t pairs, const uint32_t* a, const uint32_t* b, float alpha, float beta, const float* bias,
                  float* c, int64_t ldc, int64_t mr, int64_t nr) {
    __m512 acc[MR][NB];
#pragma GCC unroll 16
    for (int64_t i = 0; i < MR; ++i)
#pragma GCC unroll 2
        for (int64_t v = 0; v < NB; ++v) acc[i][v] = _mm512_setzero_ps();
    for (int64_t q = 0; q < pairs; ++q) {
        __m512bh bv[NB];  // pair q of 16 columns per register
#pragma GCC unroll 2
        for (int64_t v = 0; v < NB; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + q * NR + v * L);
#pragma GCC unroll 16
        for (int64_t i = 0; i < MR; ++i) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[q * MR + i]));  // row i's pair
#pragma GCC unroll 2
            for (int64_t v = 0; v < NB; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], ai, bv[v]);
        }
    }
    const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
    for (int64_t i = 0; i < mr; ++i)
        for (int64_t v = 0; v < NB; ++v) {
            // Lanes past nr are neither read nor written: C may end there.
            const __mmask16 mask = first_lanes(nr - v * L);
            if (mask == 0) break;
            float* cv = c + i * ldc + v * L;
            __m512 out = _mm512_mul_ps(acc[i][v], alpha_v);
            if (beta != 0) out = _mm512_add_ps(out, _mm512_mul_ps(beta_v, _mm512_maskz_loadu_ps(mask, cv)));
            if (bias) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(mask, bias + v * L));
            _mm512_mask_storeu_ps(cv, mask, out);
        }
}

}  // namespace

const Bf16Kernels gemm_bf16_kernels_avx512 = {"avx512_bf16 (vdpbf16ps)",           MR, NR, L, 0x1p-24, &pack_a, &pack_b,
                                              {&micro_kernel<1>, &micro_kernel<2>}};

}  // namespace patchgrad
#endif
