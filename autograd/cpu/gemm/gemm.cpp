// gemm.cpp — C = alpha * op(A) @ op(B) + beta * C (+ a bias row): the readable reference
// loop, the cache-blocked driver that calls the per-CPU micro-kernels (gemm_tile.h), and the
// dispatch to OpenBLAS when the build asks for it.
#include "patchgrad/autograd/cpu/gemm/gemm.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/aligned_vector.h"
#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/cpu/gemm/gemm_blocks.h"
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"
#include "patchgrad/autograd/cpu/prefetch.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"

#ifdef PATCHGRAD_USE_OPENBLAS
#include <cblas.h>
#endif

namespace patchgrad {

// ---- reference ---------------------------------------------------------------------------

void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A, int64_t lda,
                    const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias,
                    const GemmRowsDone* rows_done, const GemmSources* sources) {
    if (sources) {  // (each computed operand written whole first)
        GemmOperands o;
        gemm_operands(trans_a, trans_b, M, N, K, A, lda, B, ldb, sources, o);
        return gemm_reference(trans_a, trans_b, M, N, K, alpha, o.A, o.lda, o.B, o.ldb, beta, C, ldc, bias, rows_done);
    }
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
    if (rows_done && M > 0 && N > 0) (*rows_done)(0, M);
}

void gemm_operands(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const real* A, int64_t lda,
                   const real* B, int64_t ldb, const GemmSources* sources, GemmOperands& operands) {
    operands.A = A, operands.lda = lda, operands.B = B, operands.ldb = ldb;
    const auto whole = [](const GemmOperandSource* source, int64_t rows, int64_t cols, std::vector<real>& values,
                          const real*& matrix, int64_t& ld) {
        if (!source || rows <= 0 || cols <= 0) return;
        values.resize(static_cast<size_t>(rows * cols));
        (*source)(0, rows, 0, cols, values.data(), cols);
        matrix = values.data(), ld = cols;
    };
    if (!sources) return;
    whole(sources->a, trans_a ? K : M, trans_a ? M : K, operands.a_values, operands.A, operands.lda);
    whole(sources->b, trans_b ? N : K, trans_b ? K : N, operands.b_values, operands.B, operands.ldb);
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
// the tokens or head_dim: a few slivers of B), packing A would cost more than the
// arithmetic, so full MR-row slivers of A are then read in place (only edge slivers are
// packed); so are the rows of a row-major A, which are already contiguous runs: within one
// K block, or across several with 16-lane vectors (AVX2's kernel is faster on packed rows
// there). Such an A's MR rows then stay in L1 while they meet the slivers of Bp in turn (from
// L2, in groups that fit it), so that C is written a row of tiles at a time; and its K block
// is all of a K up to 2 KC.
//
// The packing and the micro-kernel depend on the CPU's vector registers, so they come from
// a table chosen at run time (gemm_kernels.h, gemm_tile.h); this driver is the same for all.
// Threads split the rows of C (see parallel.h): each thread packs its own blocks of A, and
// the panel of B is packed by all threads together or, for a weight gradient's many small K
// blocks, by each thread for itself (gemm_blocks.h).
//
// Summation order: each C element adds k in increasing order within a K block (KC; fewer for
// a transposed A read in place, all of a K up to 2 KC for a row-major A read in place: see
// k_block), and the blocks in increasing order, so the result depends only on the sizes, the
// leading dimension of A, the transposes and the instruction-set level, never on the threads.

namespace {

// Block sizes for a typical core (32-48 KB L1, 0.5-2 MB L2): a KC x NR sliver of B (32 KB
// in float with AVX-512's NR = 32) stays in L1 while the micro-kernel sweeps down an MC x KC
// block of A (147 KB) held in L2; the KC x NC panel of B (1.5 MB) lives in L2 / L3. MC and NC
// hold whole tiles of every table (MR 6, 8 or 12; NR 4 to 32). (A row-major A read in place
// turns this around, as above: its MR x kc rows stay in L1, kc up to 2 KC.)
constexpr int64_t KC = kGemmKC;
constexpr int64_t MC = 144;
constexpr int64_t NC = 1536;

// C = beta * C + bias, the whole answer when K == 0.
void scale_c(int64_t M, int64_t N, real beta, real* C, int64_t ldc, const real* bias) {
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            real& c = C[i * ldc + j];
            c = (beta == 0 ? real(0) : beta * c) + (bias ? bias[j] : real(0));  // beta == 0 never reads c
        }
}

}  // namespace

const GemmKernels& gemm_kernels(Isa isa) {
    switch (isa) {
#if defined(__x86_64__)
        case Isa::Avx512:
            return gemm_kernels_avx512;
        case Isa::Avx2:
            return gemm_kernels_avx2;
#endif
        default:
            return gemm_kernels_baseline;
    }
}

std::string gemm_kernel_description() {
    const GemmKernels& k = gemm_kernels(active_isa());
    return std::string(isa_name(k.isa)) + ", tile " + std::to_string(k.mr) + " x " + std::to_string(k.nr);
}

void gemm_blocked(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A, int64_t lda,
                  const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias,
                  const GemmRowsDone* rows_done, const GemmSources* sources) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        scale_c(M, N, beta, C, ldc, bias);
        return all_rows_done(rows_done, M, N);
    }
    const GemmKernels& kernels = gemm_kernels(active_isa());
    const int64_t MR = kernels.mr, NR = kernels.nr, V = kernels.vector;

    // A transposed A read in place (below) puts each of a sliver's kc values of k on a row of
    // its own, lda apart: with KC = 256 and a weight gradient's lda of 384 floats the sliver
    // spans 96 pages of 4 KiB, more than many cores' first-level TLB holds (Skylake's 64), so
    // each call of the kernel would miss it row after row. A K block that keeps the sliver
    // within 32 pages (kc = 85 there) costs one more pass over C per 85 values of k. Rows a
    // multiple of 4 KiB apart fall in the same few sets of L1, so such an A is packed.
    const bool set_conflict = lda * static_cast<int64_t>(sizeof(real)) % 4096 == 0;
    const bool transposed_in_place = trans_a && !set_conflict;
    // A row-major A's rows already are the kernel's runs: read in place within one K block, or
    // across several with 16-lane vectors (AVX2's 8-lane kernel was slower so) and no set
    // conflicts (tutorials/12_speed/measurements.md#kernel-notes).
    const bool rows_in_place = !trans_a && (K <= KC || (V >= 16 && !set_conflict));
    const int64_t sliver_pages = 32 * 4096 / (lda * static_cast<int64_t>(sizeof(real)));
    // A row-major A read in place takes K whole up to 2 KC (qkv's input gradient, K = 384), so
    // that C is written once rather than added to once more per K block.
    const int64_t k_block = transposed_in_place            ? std::clamp<int64_t>(sliver_pages, 64, KC)
                            : rows_in_place && K <= 2 * KC ? K
                                                           : KC;

    const GemmOperandSource* a_source = sources ? sources->a : nullptr;
    const GemmOperandSource* b_source = sources ? sources->b : nullptr;
    const auto column_words = [](int64_t kc) { return kc; };
    const auto pack_panel = [&](int64_t pc, int64_t kc, int64_t c0, int64_t cols, real* Bp) {
        if (!b_source) return kernels.pack_b(trans_b, B, ldb, pc, c0, kc, cols, Bp);
        thread_local AlignedVector<real> block;  // the panel's block of B, computed
        int64_t ld;
        const real* b = source_block(*b_source, !trans_b, c0, cols, pc, kc, block, ld);
        kernels.pack_b(trans_b, b, ld, 0, 0, kc, cols, Bp);
    };
    // C's slivers [s0, s1) += their block of op(A) @ the panel Bp, for K block pc.
    const auto multiply = [&](int64_t pc, int64_t kc, int64_t jc, int64_t nc, int64_t s0, int64_t s1, const real* Bp,
                              GemmTarget<real> target) {
        // Later K blocks add onto what the first one wrote (the bias included); a partial sum's
        // first block overwrites it.
        const real beta_block = target.first ? (target.partial ? real(0) : beta) : real(1);
        const real* bias_block = target.first && !target.partial && bias ? bias + jc : nullptr;
        real* const C = target.c;
        const int64_t ldc = target.ldc;
        // Packing A pays when each sliver meets many slivers of B. A is read in place for a narrow C
        // (attention's N), a row-major A as above and a transposed A without set conflicts.
        const bool direct = nc <= 64 || rows_in_place || transposed_in_place;
        // A row-major A is packed row by row (a copy of runs), a transposed one column by
        // column (its columns are the runs).
        const bool by_rows = !direct && !trans_a;
        const int64_t sliver_stride = by_rows ? KC : kc;  // between rows of Ap's slivers
        const MicroKernel* packed_kernels = by_rows ? kernels.row_packed : kernels.packed;
        thread_local AlignedVector<real> a_pack;
        a_pack.resize(static_cast<size_t>(std::max(KC, k_block) * MC));
        real* Ap = a_pack.data();
        const int64_t row_end = std::min(M, s1 * MR);
        for (int64_t ic = s0 * MR; ic < row_end; ic += MC) {
            const int64_t mc = std::min(MC, row_end - ic);
            // Where this block of op(A) is read: A itself at rows ic, k pc, or the block that A's
            // source computes, at 0, 0 (rows ld apart).
            const real* a = A;
            int64_t ld = lda, i0 = ic, k0 = pc;
            // (A row-major A read in place that meets the whole panel a row of tiles at a time has
            // each row of tiles' MR rows computed just before it, below: in L1 rather than L2.)
            const int64_t group = std::max<int64_t>(NR, (int64_t(256) << 10) / (kc * int64_t(sizeof(real))) / NR * NR);
            const bool source_by_rows_of_tiles = a_source && direct && !trans_a && nc <= group;
            if (a_source && !source_by_rows_of_tiles) {
                thread_local AlignedVector<real> block;
                a = source_block(*a_source, trans_a, ic, mc, pc, kc, block, ld);
                i0 = 0, k0 = 0;
            }
            if (by_rows)
                kernels.pack_a_rows(a, ld, i0, k0, mc, kc, Ap);
            else if (!direct)
                kernels.pack_a(trans_a, a, ld, i0, k0, mc, kc, Ap);
            // The next block of a row-major A, asked for a few lines a kernel call, so that all of
            // it is in cache long before it is read.
            BlockPrefetch<real> next = trans_a || !A
                                           ? BlockPrefetch<real>()
                                           : BlockPrefetch<real>::after(false, A, lda, ic, MC, row_end, pc, kc);
            const int64_t row_tiles = (mc + MR - 1) / MR, column_slivers = (nc + NR - 1) / NR;
            // C's tile at rows ic + ir, columns jc + jr: one kernel call.
            const auto tile = [&](int64_t ir, int64_t jr) {
                const int64_t mr = std::min(MR, mc - ir), nr = std::min(NR, nc - jr), r = ic + ir;
                const int64_t vectors = (nr + V - 1) / V;  // of the sliver's NR / V
                const real* bias_tile = bias_block ? bias_block + jr : nullptr;
                real* c = C + r * ldc + jc + jr;
                if (direct && mr == MR) {
                    const real* sliver = trans_a ? a + k0 * ld + i0 + ir : a + (i0 + ir) * ld + k0;
                    kernels.strided[vectors - 1](kc, sliver, trans_a ? ld : 1, trans_a ? 1 : ld, Bp + jr * kc, alpha,
                                                 beta_block, bias_tile, c, ldc, mr, nr);
                    return;
                }
                if (direct) kernels.pack_a(trans_a, a, ld, i0 + ir, k0, mr, kc, Ap + ir * kc);
                packed_kernels[vectors - 1](kc, Ap + ir * sliver_stride, 0, 0, Bp + jr * kc, alpha, beta_block,
                                            bias_tile, c, ldc, mr, nr);
            };
            if (direct && !trans_a) {
                // A row-major A read in place: MR rows of it stay in L1 while they meet every sliver
                // of the panel, so C is written a row of tiles at a time, left to right, an order
                // the hardware prefetchers follow (qkv's forward writes 12.8 MB of C that is out of
                // cache: tutorials/12_speed/measurements.md#kernel-notes). The slivers go in groups
                // of up to 256 KiB, which stay in any L2 while each row of tiles reads them. A's
                // next block is asked for over all of the block's calls.
                const int64_t lines_per_call = next.lines() / (row_tiles * column_slivers) + 1;
                for (int64_t j0 = 0; j0 < nc; j0 += group)
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        if (source_by_rows_of_tiles) {  // rows ic + ir .. at a
                            thread_local AlignedVector<real> rows;
                            a = source_block(*a_source, false, ic + ir, std::min(MR, mc - ir), pc, kc, rows, ld);
                            i0 = -ir, k0 = 0;
                        }
                        for (int64_t jr = j0; jr < std::min(nc, j0 + group); jr += NR) {
                            tile(ir, jr);
                            next.fetch(lines_per_call);
                        }
                    }
            } else {
                // A packed block (in L2), or a transposed A read in place, swept by one sliver of B
                // (in L1) after another; a row-major A's next block asked for during the first sweep.
                const int64_t lines_per_call = next.lines() / row_tiles + 1;
                for (int64_t jr = 0; jr < nc; jr += NR)
                    for (int64_t ir = 0; ir < mc; ir += MR, next.fetch(lines_per_call)) tile(ir, jr);
            }
            if (target.rows_done) (*target.rows_done)(ic, ic + mc);
        }
    };
    for_each_gemm_block<real>(M, N, K, MR, NR, NC, k_block, C, ldc, column_words, pack_panel, multiply, rows_done);
}

// ---- dispatch ----------------------------------------------------------------------------

namespace {

void gemm_untimed(bool allow_bf16, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha,
                  const real* A, int64_t lda, const real* B, int64_t ldb, real beta, real* C, int64_t ldc,
                  const real* bias, const GemmRowsDone* rows_done, const GemmSources* sources) {
#ifdef PATCHGRAD_DOUBLE
    (void)allow_bf16;  // (no bf16 in the float64 build)
#else
    if (allow_bf16 && matmul_precision() == MatmulPrecision::Bf16)
        return gemm_bf16(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done, sources);
#endif
#ifdef PATCHGRAD_USE_OPENBLAS
    if (M <= 0 || N <= 0) return;
    // BLAS rejects a leading dimension of 0, which an empty K would give.
    if (K <= 0) {
        scale_c(M, N, beta, C, ldc, bias);
        return all_rows_done(rows_done, M, N);
    }
    // CBLAS sizes are int; anything larger stays with our own kernel.
    const int64_t int_max = std::numeric_limits<int>::max();
    if (std::max({M, N, K, lda, ldb, ldc}) > int_max)
        return gemm_blocked(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done, sources);
    // BLAS has no bias: C = beta * C + bias first, then the product adds onto it.
    if (bias) {
        scale_c(M, N, beta, C, ldc, bias);
        beta = 1;
    }
    GemmOperands o;  // (BLAS reads whole matrices: a computed operand is written whole first)
    gemm_operands(trans_a, trans_b, M, N, K, A, lda, B, ldb, sources, o);
#ifdef PATCHGRAD_DOUBLE
    cblas_dgemm(
#else
    cblas_sgemm(
#endif
        CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(M),
        static_cast<int>(N), static_cast<int>(K), alpha, o.A, static_cast<int>(o.lda), o.B, static_cast<int>(o.ldb),
        beta, C, static_cast<int>(ldc));
    all_rows_done(rows_done, M, N);
#else
    gemm_blocked(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done, sources);
#endif
}

// gemm_untimed, and under bench --explain its time, its loops named by its shape, e.g.
// "gemm 8320 x 128 x 384 A^T".
void gemm_timed(bool allow_bf16, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A,
                int64_t lda, const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias,
                const GemmRowsDone* rows_done = nullptr, const GemmSources* sources = nullptr) {
    if (!recording_loops())
        return gemm_untimed(allow_bf16, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done,
                            sources);
    const std::string label = "gemm " + std::to_string(M) + " x " + std::to_string(N) + " x " + std::to_string(K) +
                              (trans_a ? " A^T" : "") + (trans_b ? " B^T" : "");
    const LoopLabel named(label);
    as_products([&] {
        gemm_untimed(allow_bf16, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done,
                     sources);
    });
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A, int64_t lda,
          const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias, const GemmRowsDone* rows_done,
          const GemmSources* sources) {
    gemm_timed(true, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done, sources);
}

bool gemm_small_is_float32() {
#ifdef PATCHGRAD_DOUBLE
    return true;
#else
    return matmul_precision() != MatmulPrecision::Bf16 || gemm_bf16_is_amx();
#endif
}

void gemm_small(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A, int64_t lda,
                const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias) {
    gemm_timed(!gemm_small_is_float32(), trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias);
}

}  // namespace patchgrad
