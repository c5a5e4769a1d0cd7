// gemm_bf16_avx512.cpp — the bf16 kernels for AVX512_BF16 (gemm_bf16.h, gemm_kernels.h), and
// the same packing for AMX's kernel. Compiled with -march=x86-64-v4 -mavx512bf16 (CMakeLists.txt)
// and used only on CPUs that have both (gemm_bf16.cpp). Everything but AMX's two packing
// functions is in an anonymous namespace, and nothing calls a standard-library template, for
// the reason gemm_tile.h gives.
//
// The instruction: vdpbf16ps acc, a, b (_mm512_dpbf16_ps) treats each 32-bit lane of a and b
// as a pair of bf16 values and does, per lane j,
//     acc[j] += a.hi[j] * b.hi[j] + a.lo[j] * b.lo[j]        (two multiply-adds, in float32)
// So one instruction is 32 multiply-adds where float32's vfmadd231ps is 16. The tile is the
// float32 one (12 x 32, 24 accumulators + 2 B + 1 A of the 32 registers); what changes is
// that each step of the loop consumes two values of k, packed as pairs: A's pair for row i is
// broadcast to every lane, B's pairs for 16 columns are one register.
//
// Packing is where the time goes besides the kernel, because every input is rounded on the
// way in. vcvtne2ps2bf16 rounds 32 floats to 32 bf16 values in order, i.e. 16 pairs of
// consecutive k: a row of a row-major matrix comes out as its pairs, ready to use. So
//  - an A sliver from a row-major A keeps its rows ([i][q], row i's pairs contiguous): one
//    conversion and one store per 16 pairs, and the kernel broadcasts row i's pair from
//    `pairs` words further on per row (micro_kernel<NB, true>);
//  - an A sliver from a transposed A, or a B sliver from a row-major B, needs rows k and k+1
//    of the matrix interleaved: converted together, one vpermw puts each pair in place;
//  - a B sliver from a transposed B (the linear layer's weights, attention's keys) needs the
//    converted rows transposed: 16 rows of 16 pairs at a time, in registers (transpose_16x16).
// (Scattering each converted row down its sliver's column instead takes 16 scattered stores
// per 16 pairs and makes packing a large part of a bf16 step: tutorials/12_speed/measurements.md#kernel-notes.)
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"

#if defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE)
#include "patchgrad/autograd/cpu/bf16/bf16_avx512.h"

namespace patchgrad {
namespace {

constexpr int64_t MR = 12, NV = 2, L = 16, NR = NV * L;

inline int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

// Rows of a row-major A, 16 pairs (one conversion) at a time: row i's pairs q .. q + 15 go to
// word_at(i, q), `pairs` of them per row (zero pairs past kc); the rows past `rows`, up to a
// whole sliver of R, are zero. The A slivers of both layouts below.
template <int64_t R, class WordAt>
void pack_rows(const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc, int64_t pairs,
               WordAt word_at) {
    for (int64_t i = 0; i < (rows + R - 1) / R * R; ++i) {
        const bool inside = i < rows;
        const float* row = A + (inside ? r0 + i : 0) * lda + k0;  // (not read past the matrix)
        for (int64_t q = 0; q < pairs; q += L)
            _mm512_mask_storeu_epi32(
                word_at(i, q), first_lanes(pairs - q),
                inside && 2 * q < kc ? pairs_of_run(row + 2 * q, kc - 2 * q) : _mm512_setzero_si512());
    }
}

// An A sliver from a row-major A: word [i * pairs + q] is row i's pair q.
void pack_a_rows(const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc, uint32_t* Ap) {
    const int64_t pairs = (kc + 1) / 2;
    pack_rows<MR>(A, lda, r0, k0, rows, kc, pairs, [=](int64_t i, int64_t q) { return Ap + i * pairs + q; });
}

// P[s][q][i] = the pair X[k0 + 2q .. 2q+1, r0 + s*W + i] for slivers of W columns of X: rows
// k and k + 1 of X interleaved, zero-padded to whole slivers (and the second value of the
// last pair of an odd kc, and the pairs up to a multiple of PB). The packing of a transposed A
// (W = MR) and of a row-major B (W = NR). Pair row by pair row, each across all slivers: the two
// rows are read whole, in order, rather than a sliver's width of every row per sliver (a weight
// gradient's products faster: tutorials/12_speed/measurements.md#kernel-notes).
template <int64_t W, int64_t PB>
void pack_interleaved(const float* X, int64_t ld, int64_t r0, int64_t k0, int64_t cols, int64_t kc, uint32_t* P) {
    const int64_t pairs = bf16_pairs(kc, PB);
    for (int64_t q = 0; q < pairs; ++q) {
        // Past kc: zero pairs, nothing read; at an odd kc's end: the zero that pads it.
        const bool past_end = 2 * q >= kc, odd_end = 2 * q + 1 == kc;
        for (int64_t s = 0; s < cols; s += W) {
            const int64_t n = smaller(W, cols - s);
            uint32_t* dst = P + s * pairs;
            const float* lo = X + (k0 + (past_end ? 0 : 2 * q)) * ld + r0 + s;
            for (int64_t i = 0; i < W; i += L) {
                const __mmask16 valid = past_end ? 0 : first_lanes(n - i);
                const __m512 hi = odd_end ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(valid, lo + ld + i);
                _mm512_mask_storeu_epi32(dst + q * W + i, first_lanes(W - i),
                                         interleaved_pairs(_mm512_maskz_loadu_ps(valid, lo + i), hi));
            }
        }
    }
}

// AMX's A slivers of 32 rows, tile by tile: word [(q / 16) * 512 + i * 16 + q % 16] of a sliver
// is row i's pair q, so that each tile load reads 1 KB in one run (gemm_bf16_amx_tile.h).
constexpr int64_t kAmxRows = 32, kAmxTilePairs = 16;
inline uint32_t* amx_a_word(uint32_t* Ap, int64_t pairs, int64_t row, int64_t q0) {
    return Ap + row / kAmxRows * kAmxRows * pairs + q0 * kAmxRows + row % kAmxRows * kAmxTilePairs;
}

// From a row-major A: each row's 16 pairs of a tile are one conversion.
void amx_pack_a_rows(const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc, uint32_t* Ap) {
    const int64_t pairs = bf16_pairs(kc, kAmxTilePairs);
    pack_rows<kAmxRows>(A, lda, r0, k0, rows, kc, pairs,
                        [=](int64_t i, int64_t q) { return amx_a_word(Ap, pairs, i, q); });
}

// From a transposed A (op(A)[r, k] = A[k * lda + r]): rows k and k + 1 of A interleaved give 16
// rows' pair q in one register; 16 such registers (16 pairs) are transposed into 16 rows of 16 pairs.
void amx_pack_a_transposed(const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc,
                           uint32_t* Ap) {
    const int64_t pairs = bf16_pairs(kc, kAmxTilePairs), padded = (rows + kAmxRows - 1) / kAmxRows * kAmxRows;
    for (int64_t i0 = 0; i0 < padded; i0 += L) {
        const __mmask16 valid = first_lanes(rows - i0);  // (none: rows of zeros up to the sliver's end)
        for (int64_t q0 = 0; q0 < pairs; q0 += L) {
            __m512i r[16];
#pragma GCC unroll 16
            for (int64_t p = 0; p < L; ++p) {
                const int64_t k = 2 * (q0 + p);
                const float* lo = A + (k0 + smaller(k, kc - 1)) * lda + r0 + i0;  // (past kc: not read)
                const __m512 x0 = k < kc ? _mm512_maskz_loadu_ps(valid, lo) : _mm512_setzero_ps();
                const __m512 x1 = k + 1 < kc ? _mm512_maskz_loadu_ps(valid, lo + lda) : _mm512_setzero_ps();
                r[p] = interleaved_pairs(x0, x1);
            }
            transpose_16x16(r);
            for (int64_t i = 0; i < L; ++i) _mm512_storeu_si512(amx_a_word(Ap, pairs, i0 + i, q0), r[i]);
        }
    }
}

void pack_a(bool trans_a, const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc, uint32_t* Ap) {
    if (trans_a)  // op(A)[r, k] = A[k * lda + r]: A's rows k and k + 1 give the pairs
        pack_interleaved<MR, 1>(A, lda, r0, k0, rows, kc, Ap);
    else
        pack_a_rows(A, lda, r0, k0, rows, kc, Ap);
}

// A B sliver from a transposed B (op(B)[k, c] = B[c * ldb + k]): column c of op(B) is row c of
// B, whose pairs come out of the conversion in order; 16 such rows of 16 pairs are transposed
// in registers into 16 rows of the sliver (word [q * NR + j] is column j's pair q).
template <int64_t PB>
void pack_b_transposed(const float* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols, uint32_t* Bp) {
    const int64_t pairs = bf16_pairs(kc, PB);
    for (int64_t s = 0; s < cols; s += NR)
        for (int64_t half = 0; half < NR; half += L) {
            const int64_t n = cols - s - half;  // columns of B left from here (none: zeros)
            uint32_t* dst = Bp + s * pairs + half;
            for (int64_t q = 0; q < pairs; q += L) {
                __m512i r[16];
#pragma GCC unroll 16
                for (int64_t j = 0; j < L; ++j)
                    r[j] = j < n && 2 * q < kc ? pairs_of_run(B + (c0 + s + half + j) * ldb + k0 + 2 * q, kc - 2 * q)
                                               : _mm512_setzero_si512();
                transpose_16x16(r);
                for (int64_t p = 0; p < L && q + p < pairs; ++p) _mm512_storeu_si512(dst + (q + p) * NR, r[p]);
            }
        }
}

void pack_b(bool trans_b, const float* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols, uint32_t* Bp) {
    if (trans_b)
        pack_b_transposed<1>(B, ldb, k0, c0, kc, cols, Bp);
    else  // op(B)[k, c] = B[k * ldb + c]: B's rows k and k + 1 give the pairs
        pack_interleaved<NR, 1>(B, ldb, c0, k0, cols, kc, Bp);
}

// The A sliver's layout: [q][i] (pack_interleaved) or, `by_rows`, [i][q] (pack_a_rows).
template <int64_t NB, bool by_rows>
void micro_kernel(int64_t pairs, const uint32_t* a, const uint32_t* b, float alpha, float beta, const float* bias,
                  float* c, int64_t ldc, int64_t mr, int64_t nr) {
    for (int64_t i = 0; i < mr; ++i) __builtin_prefetch(c + i * ldc, 1);  // (why: gemm_tile.h)
    const int64_t a_k = by_rows ? 1 : MR, a_i = by_rows ? pairs : 1;
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
            const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[q * a_k + i * a_i]));  // row i's pair
#pragma GCC unroll 2
            for (int64_t v = 0; v < NB; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], ai, bv[v]);
        }
    }
    // Rows and vectors by constant indices, so that the tile stays in registers (a loop to mr
    // would index it at run time, from a copy in memory: a tenth of a call at K = 128); lanes
    // past nr are neither read nor written, since C may end there.
    const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
    __mmask16 mask[NB];
    __m512 bias_v[NB];
#pragma GCC unroll 2
    for (int64_t v = 0; v < NB; ++v) {
        mask[v] = first_lanes(nr - v * L);
        bias_v[v] = bias ? _mm512_maskz_loadu_ps(mask[v], bias + v * L) : _mm512_setzero_ps();
    }
#pragma GCC unroll 16
    for (int64_t i = 0; i < MR; ++i) {
        if (i >= mr) break;
#pragma GCC unroll 2
        for (int64_t v = 0; v < NB; ++v) {
            float* cv = c + i * ldc + v * L;
            __m512 out = _mm512_fmadd_ps(acc[i][v], alpha_v, bias_v[v]);
            if (beta != 0) out = _mm512_fmadd_ps(beta_v, _mm512_maskz_loadu_ps(mask[v], cv), out);
            _mm512_mask_storeu_ps(cv, mask[v], out);
        }
    }
}

}  // namespace

const Bf16Kernels gemm_bf16_kernels_avx512 = {"avx512_bf16 (vdpbf16ps)",
                                              MR,
                                              NR,
                                              L,
                                              1,
                                              144 / MR* MR,
                                              kGemmKC,
                                              false,
                                              0x1p-24,
                                              &pack_a,
                                              &pack_b,
                                              {&micro_kernel<1, false>, &micro_kernel<2, false>},
                                              {&micro_kernel<1, true>, &micro_kernel<2, true>}};

// AMX's slivers (gemm_bf16_amx_tile.h): A as above, B as the AVX-512 kernel's with NR = 32, AMX's
// width; pairs padded to whole tiles of 16.
static_assert(NR == 32, "AMX's B sliver is 32 columns, as this file's");

void gemm_bf16_amx_pack_a(bool trans_a, const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc,
                          uint32_t* Ap) {
    if (trans_a)
        amx_pack_a_transposed(A, lda, r0, k0, rows, kc, Ap);
    else
        amx_pack_a_rows(A, lda, r0, k0, rows, kc, Ap);
}

void gemm_bf16_amx_pack_b(bool trans_b, const float* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols,
                          uint32_t* Bp) {
    if (trans_b)
        pack_b_transposed<kAmxTilePairs>(B, ldb, k0, c0, kc, cols, Bp);
    else
        pack_interleaved<NR, kAmxTilePairs>(B, ldb, c0, k0, cols, kc, Bp);
}

}  // namespace patchgrad
#endif
