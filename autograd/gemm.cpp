#include "gemm.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "parallel.h"

#ifdef PATCHGRAD_USE_OPENBLAS
#include <cblas.h>
#endif

namespace patchgrad {

// ---- reference ---------------------------------------------------------------------------

void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha,
                    const real* A, int64_t lda, const real* B, int64_t ldb, real beta, real* C,
                    int64_t ldc, const real* bias) {
    // [snippet:gemm-reference]
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            real dot = 0;
            for (int64_t k = 0; k < K; ++k) {
                const real a = trans_a ? A[k * lda + i] : A[i * lda + k];
                const real b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                dot += a * b;
            }
            real& c = C[i * ldc + j];
            c = alpha * dot + (beta == 0 ? real(0) : beta * c) + (bias ? bias[j] : real(0));
        }
    // [/snippet:gemm-reference]
}

// ---- blocked -----------------------------------------------------------------------------
//
// The GotoBLAS / BLIS scheme. A multiply does 2MNK flops on only MK + KN + MN numbers, so
// it can run at the speed of the arithmetic units, not of memory, if every number loaded
// is reused many times while it sits in a register or a nearby cache:
//
//   for jc in steps of NC over N:                      op(B) panel  [KC, NC] -> L3 / L2
//     for pc in steps of KC over K:
//       pack op(B)[pc:pc+KC, jc:jc+NC] into Bp
//       for ic in steps of MC over M:                  op(A) block  [MC, KC] -> L2
//         pack op(A)[ic:ic+MC, pc:pc+KC] into Ap
//         for each NR-wide sliver of Bp (stays in L1) and MR-tall sliver of Ap:
//           micro-kernel: C[MR, NR] tile += Ap sliver @ Bp sliver, over KC
//
// Packing copies each block once into the exact order the micro-kernel reads it: for
// every k, the MR values of op(A) and then the NR values of op(B) are adjacent. The
// micro-kernel then streams through two contiguous arrays whatever the transposes and
// leading dimensions were, and slivers at the matrix edges are zero-padded to full MR x NR,
// so the one kernel handles every M, N, K (only the final write to C is clipped).
//
// Packing costs about as much per element as a whole vector of multiply-adds, and a packed
// A sliver is reused once per NR columns of C. For the narrow products of attention (N is
// head_dim = 32: one or two slivers of B), packing A would cost more than the arithmetic,
// so full MR-row slivers of A are then read in place (only edge slivers are packed).
//
// Threads split the rows of C (see parallel.h): each thread packs its own blocks of A and
// all share the packed panel of B.
//
// The micro-kernel keeps an MR x NR tile of C in registers: per k it loads NR values of B
// (NR / vector-width vector loads), and for each of the MR rows broadcasts one value of A
// and does NR / vector-width multiply-adds. MR * NR / width accumulators plus the B
// vectors must fit the register file, which is why the tile depends on the vector ISA the
// compiler targets (SSE2: 16 registers of 16 bytes, AVX2: 16 x 32, AVX-512: 32 x 64).
//
// Summation order: each C element adds k in increasing order within a KC block, and the
// blocks in increasing order, so the result depends only on the sizes and transposes.

namespace {

// The tile, MR x NR elements of C, per instruction set; the register counts below are for
// float (a row of doubles takes twice the registers, so with AVX there are fewer rows). NR
// is a whole number of vectors and more than 16 elements: GCC then vectorises the j loop of
// the micro-kernel (a row of the tile) instead of unrolling it and vectorising across rows,
// which needs shuffles and ran ~20x slower. The numbers were picked by measurement with
// `patchgrad bench matmul M N K` (vit/cli/bench.cpp).
// [snippet:gemm-tile]
#if defined(__AVX512F__)
// 32 registers of 16 floats: 12 x 2 accumulators + 2 for B + 1 broadcast of A.
constexpr int64_t MR = sizeof(real) == 4 ? 12 : 6;
constexpr int64_t NR = 32;
#elif defined(__AVX2__)
// 16 registers of 8 floats: 4 x 3 accumulators + 3 for B + 1 broadcast of A.
constexpr int64_t MR = sizeof(real) == 4 ? 4 : 2;
constexpr int64_t NR = 24;
#else
// The portable baseline (SSE2 on x86-64, NEON on ARM64): 16 or more registers of 4
// floats, 2 x 6 accumulators.
constexpr int64_t MR = 2;
constexpr int64_t NR = 24;
#endif
// [/snippet:gemm-tile]

// Block sizes for a typical core (32-48 KB L1, 0.5-2 MB L2): a KC x NR sliver of B (32 KB
// in float) stays in L1 while the micro-kernel sweeps down an MC x KC block of A (147 KB)
// held in L2; the KC x NC panel of B (1.5 MB) lives in L2 / L3.
constexpr int64_t KC = 256;
constexpr int64_t MC = 144;
constexpr int64_t NC = 1536;
static_assert(MC % MR == 0 && NC % NR == 0, "blocks must hold whole tiles");

// Ap[s][p][i] = op(A)[ic + s*MR + i, pc + p] for the mc x kc block, zero-padded to
// whole MR-row slivers.
// [snippet:gemm-pack-a]
void pack_a(bool trans_a, const real* A, int64_t lda, int64_t ic, int64_t pc, int64_t mc,
            int64_t kc, real* Ap) {
    for (int64_t s = 0; s < mc; s += MR) {
        const int64_t rows = std::min(MR, mc - s);
        for (int64_t p = 0; p < kc; ++p) {
            real* dst = Ap + s * kc + p * MR;
            for (int64_t i = 0; i < rows; ++i) {
                const int64_t r = ic + s + i, k = pc + p;
                dst[i] = trans_a ? A[k * lda + r] : A[r * lda + k];
            }
            for (int64_t i = rows; i < MR; ++i) dst[i] = 0;
        }
    }
}
// [/snippet:gemm-pack-a]

// Bp[s][p][j] = op(B)[pc + p, jc + s*NR + j] for the kc x nc panel, zero-padded to whole
// NR-column slivers.
void pack_b(bool trans_b, const real* B, int64_t ldb, int64_t pc, int64_t jc, int64_t kc,
            int64_t nc, real* Bp) {
    for (int64_t s = 0; s < nc; s += NR) {
        const int64_t cols = std::min(NR, nc - s);
        for (int64_t p = 0; p < kc; ++p) {
            real* dst = Bp + s * kc + p * NR;
            const int64_t k = pc + p;
            if (trans_b)
                for (int64_t j = 0; j < cols; ++j) dst[j] = B[(jc + s + j) * ldb + k];
            else
                for (int64_t j = 0; j < cols; ++j) dst[j] = B[k * ldb + jc + s + j];
            for (int64_t j = cols; j < NR; ++j) dst[j] = 0;
        }
    }
}

// What the fast kernel writes into C[i, j] for the product `ab` (alpha * op(A) @ op(B) there),
// by the same formula as gemm_reference (kept separate there: it is the independent
// definition the tests compare against). beta == 0 never reads c, which may hold garbage.
inline real c_update(real ab, real beta, const real& c, const real* bias, int64_t j) {
    return ab + (beta == 0 ? real(0) : beta * c) + (bias ? bias[j] : real(0));
}

// C[mr, nr] = alpha * (A sliver @ Bp sliver) + beta * C + bias, with mr <= MR, nr <= W.
// Element (i, p) of the A sliver is a[p * a_k + i * a_i]: packed (a_k = MR, a_i = 1), or read
// in place from op(A) when it has all MR rows (then packing would cost more than it saves).
// The packed form is its own instantiation: with the strides known at compile time the
// compiler keeps the whole tile in registers (runtime strides cost the kernel a third).
// W is NR, or NR / 2 for an edge sliver at most half full: attention's 65th column would
// otherwise cost as much as 32 columns.
template <bool packed, int64_t W>
void micro_kernel(int64_t kc, const real* A, int64_t a_k, int64_t a_i, const real* Bp, real alpha, real beta,
                  const real* bias, real* C, int64_t ldc, int64_t mr, int64_t nr) {
    if (packed) a_k = MR, a_i = 1;
    // [snippet:gemm-micro-kernel]
    real acc[MR][W] = {};
    for (int64_t p = 0; p < kc; ++p) {
        const real* a = A + p * a_k;
        const real* b = Bp + p * NR;
        // Unrolled rows let the tile live in registers: -O3 unrolls them by itself, -O2 not.
#pragma GCC unroll 16
        for (int64_t i = 0; i < MR; ++i)
            for (int64_t j = 0; j < W; ++j) acc[i][j] += a[i * a_i] * b[j];
    }
    // [/snippet:gemm-micro-kernel]
    const auto store = [&](int64_t rows, int64_t cols) {
        for (int64_t i = 0; i < rows; ++i) {
            real* c = C + i * ldc;
            for (int64_t j = 0; j < cols; ++j)
                c[j] = c_update(alpha * acc[i][j], beta, c[j], bias, j);
        }
    };
    if (mr == MR && nr == W) store(MR, W);  // compile-time trip counts: vectorised
    else store(mr, nr);
}

// C = beta * C + bias, the whole answer when K == 0.
void scale_c(int64_t M, int64_t N, real beta, real* C, int64_t ldc, const real* bias) {
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            real& c = C[i * ldc + j];
            c = c_update(0, beta, c, bias, j);
        }
}

}  // namespace

void gemm_blocked(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha,
                  const real* A, int64_t lda, const real* B, int64_t ldb, real beta, real* C,
                  int64_t ldc, const real* bias) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) return scale_c(M, N, beta, C, ldc, bias);

    // Reused across calls (and per thread), so the many small multiplies of attention do not
    // each allocate.
    thread_local std::vector<real> b_pack;
    const int64_t kc_max = std::min(KC, K);
    b_pack.resize(static_cast<size_t>(kc_max * std::min(NC, (N + NR - 1) / NR * NR)));
    real* Bp = b_pack.data();
    const int64_t slivers = (M + MR - 1) / MR;  // MR-row slivers of C

    for (int64_t jc = 0; jc < N; jc += NC) {
        const int64_t nc = std::min(NC, N - jc);
        for (int64_t pc = 0; pc < K; pc += KC) {
            const int64_t kc = std::min(KC, K - pc);
            // Later K blocks add onto what the first one wrote (the bias included).
            const real beta_block = pc == 0 ? beta : real(1);
            const real* bias_block = pc == 0 && bias ? bias + jc : nullptr;
            pack_b(trans_b, B, ldb, pc, jc, kc, nc, Bp);
            // Threads take disjoint row ranges of C: each C element is still summed by one
            // thread in the same order, so the thread count cannot change the result. A chunk
            // gets at least ~2^19 multiply-adds, or waking a thread costs more than it saves.
            const int64_t grain = (int64_t(1) << 19) / (MR * nc * kc) + 1;
            // Packing A pays when each sliver of it meets many slivers of B; a narrow C
            // (attention's N = tokens or head_dim) reads A in place instead.
            const bool direct = nc <= 2 * NR;
            parallel_for(slivers, grain, [&](int64_t s0, int64_t s1) {
                thread_local std::vector<real> a_pack;
                a_pack.resize(static_cast<size_t>(kc * MC));
                real* Ap = a_pack.data();
                const int64_t row_end = std::min(M, s1 * MR);
                for (int64_t ic = s0 * MR; ic < row_end; ic += MC) {
                    const int64_t mc = std::min(MC, row_end - ic);
                    if (!direct) pack_a(trans_a, A, lda, ic, pc, mc, kc, Ap);
                    for (int64_t jr = 0; jr < nc; jr += NR)
                        for (int64_t ir = 0; ir < mc; ir += MR) {
                            const int64_t mr = std::min(MR, mc - ir), r = ic + ir;
                            real* c = C + r * ldc + jc + jr;
                            const int64_t nr = std::min(NR, nc - jr);
                            const real* bias_tile = bias_block ? bias_block + jr : nullptr;
                            const bool half = 2 * nr <= NR;
                            if (direct && mr == MR) {
                                const real* a = trans_a ? A + pc * lda + r : A + r * lda + pc;
                                const int64_t a_k = trans_a ? lda : 1, a_i = trans_a ? 1 : lda;
                                (half ? micro_kernel<false, NR / 2> : micro_kernel<false, NR>)(
                                    kc, a, a_k, a_i, Bp + jr * kc, alpha, beta_block, bias_tile, c, ldc, mr, nr);
                                continue;
                            }
                            if (direct) pack_a(trans_a, A, lda, r, pc, mr, kc, Ap + ir * kc);
                            (half ? micro_kernel<true, NR / 2> : micro_kernel<true, NR>)(
                                kc, Ap + ir * kc, MR, 1, Bp + jr * kc, alpha, beta_block, bias_tile, c, ldc, mr, nr);
                        }
                }
            });
        }
    }
}

// ---- dispatch ----------------------------------------------------------------------------

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A,
          int64_t lda, const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias) {
#ifdef PATCHGRAD_USE_OPENBLAS
    if (M <= 0 || N <= 0) return;
    // BLAS rejects a leading dimension of 0, which an empty K would give.
    if (K <= 0) return scale_c(M, N, beta, C, ldc, bias);
    // CBLAS sizes are int; anything larger stays with our own kernel.
    const int64_t int_max = std::numeric_limits<int>::max();
    if (std::max({M, N, K, lda, ldb, ldc}) > int_max)
        return gemm_blocked(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias);
    // BLAS has no bias: C = beta * C + bias first, then the product adds onto it.
    if (bias) {
        scale_c(M, N, beta, C, ldc, bias);
        beta = 1;
    }
#ifdef PATCHGRAD_DOUBLE
    cblas_dgemm(
#else
    cblas_sgemm(
#endif
        CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
        static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda),
        B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
#else
    gemm_blocked(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias);
#endif
}

}  // namespace patchgrad
