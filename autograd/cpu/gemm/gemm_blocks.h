// gemm_blocks.h — how the float32 and bf16 gemm drivers (gemm.cpp, gemm_bf16.cpp) walk a
// product's blocks and share them out to the threads. Included by those two drivers only: the
// kernel files, compiled with other instruction sets, must not instantiate its templates.
//
// Both walk C in NC-column panels (jc) and op(A) @ op(B) in K blocks (pc); per K block, op(B)'s
// block is packed once (the panel) and every MR-row sliver of C is multiplied by it. Threads
// split C's slivers, so each C element is summed by one thread, K blocks in increasing order,
// and the result never depends on the thread count. They can share the panel in two ways:
//
//  - together: all threads pack each panel, then all multiply by it. Two parallel_for calls
//    per K block, and a thread idles at each end until the other is done. Right for a large
//    product, whose K block is far more work per thread than that wait.
//  - each its own: every thread runs every K block for its own slivers, packing each panel by
//    itself. One parallel_for for the whole product, the panel's packing done once per thread.
//    Right for a weight gradient, dW = dOut^T x: K is the batch's tokens (8,320 for cifar-micro
//    at batch 128, so 33 to 74 K blocks), while M and N are the layer's sizes, a few slivers each.
//    Together, each small K block sits between two barriers and its panel of 3 slivers is packed
//    by one thread while the other waits, so two threads gain nothing over one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "patchgrad/autograd/cpu/aligned_vector.h"
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"  // GemmRowsDone
#include "patchgrad/autograd/cpu/threads/parallel.h"

namespace patchgrad {

// Whether each thread packs its own panels (the header's second way) for a product of M rows
// and nc columns of C in K blocks of k_block: when there are several K blocks of fewer than
// 2^26 multiply-adds each: every weight gradient of the presets at batch 128 (2.4 to 28 million
// per K block) runs faster so, while 1024^3 (268 million) and the linear layers' other products
// (one K block each) share (tutorials/12_speed/measurements.md#kernel-notes).
inline bool each_thread_packs_panels(int64_t M, int64_t nc, int64_t K, int64_t k_block) {
    return K > k_block && M * nc * k_block < (int64_t(1) << 26);
}

// The tasks a weight gradient should offer the threads, whatever their number: it is also split
// across K into groups of consecutive K values (the more, the fewer its slivers: 128 output
// features are 11 slivers of 12 rows), each summed into a partial C of its own, the partials
// then added in group order. The groups depend on the shape only, so the result never depends
// on the thread count.
constexpr int64_t kGemmTargetTasks = 32;

// Group boundaries fall on whole granules of K, so that a group's K blocks stay whole pairs
// and whole tiles of pairs (64 values is two AMX tiles' worth).
constexpr int64_t kGemmKGranule = 64;
inline int64_t gemm_k_granules(int64_t K) { return (K + kGemmKGranule - 1) / kGemmKGranule; }

// How many groups a product of `slivers` row slivers and K values in blocks of k_block is split
// into across K: enough for kGemmTargetTasks tasks and at least two, at most one per K block
// and per granule. (With one group, every thread would pack every panel of B for its own
// slivers; with two or more, a thread packs only its groups' panels:
// tutorials/12_speed/measurements.md#kernel-notes.)
inline int64_t gemm_k_groups(int64_t slivers, int64_t K, int64_t k_block) {
    const int64_t blocks = (K + k_block - 1) / k_block;
    const int64_t wanted = std::max<int64_t>(2, (kGemmTargetTasks + slivers - 1) / slivers);
    return std::clamp<int64_t>(wanted, 1, std::min(blocks, gemm_k_granules(K)));
}

// Where group g of `groups` starts in [0, K) (g = groups gives K): granule g * G / groups of
// the G = gemm_k_granules(K) granules, so that groups differ by at most one granule and
// any run of consecutive groups carries its share of K to within two granules (one for the
// rounding, one for a last granule cut short by K). Groups of whole K blocks would leave the
// remainder to the last: 8,320 tokens in blocks of 512 would make five groups of 1,536 K values
// and one of 640, and the first of two threads would do 55% of the work. Needs 1 <= groups <= G.
inline int64_t gemm_k_group_start(int64_t g, int64_t groups, int64_t K) {
    return std::min(K, g * gemm_k_granules(K) / groups * kGemmKGranule);
}

// Where multiply() puts a K block's product: C itself (`first`: the caller's beta and bias
// apply, pc == 0), or a partial sum of a group of K blocks (c = its [M, N] buffer, ldc = N;
// `first`: the group's first block, which overwrites it). `rows_done` (gemm.h) is set when this
// block leaves C's rows final: multiply() calls it on each block of rows it finishes.
template <class Real>
struct GemmTarget {
    Real* c;
    int64_t ldc;
    bool first, partial;
    const GemmRowsDone* rows_done = nullptr;
};

// The block of an operand that gemm.h's `sources` computes: n rows (of op(A); columns, of op(B))
// from i0 and kc values of k from k0, as the matrix stores them: k along its rows where
// `k_rows` (a transposed A, a B that is not), else along its columns. Written into buf, which it
// returns, with ld the distance between its stored rows.
inline const real* source_block(const GemmOperandSource& source, bool k_rows, int64_t i0, int64_t n, int64_t k0,
                                int64_t kc, AlignedVector<real>& buf, int64_t& ld) {
    buf.resize(std::max(buf.size(), static_cast<size_t>(n * kc)));
    ld = k_rows ? n : kc;
    if (k_rows)
        source(k0, k0 + kc, i0, i0 + n, buf.data(), ld);
    else
        source(i0, i0 + n, k0, k0 + kc, buf.data(), ld);
    return buf.data();
}

// rows_done on all M rows, on the threads: after a product that has no blocks of its own (BLAS,
// an empty K).
inline void all_rows_done(const GemmRowsDone* rows_done, int64_t M, int64_t N) {
    if (rows_done && M > 0)
        parallel_for(M, grain_for_elements(N), [&](int64_t i0, int64_t i1) { (*rows_done)(i0, i1); });
}

// Calls, for each panel jc (nc columns of C) and K block pc (kc values of k), on the threads:
//   pack(pc, kc, jc + c0, cols, panel + c0 * words_per_column(kc)): packs op(B)'s block of
//       those columns (c0 a multiple of NR), each column's kc values in words_per_column(kc) Words
//   multiply(pc, kc, jc, nc, s0, s1, panel, target): C's MR-row slivers [s0, s1) of `target`
//       (+)= op(A) @ the panel, as GemmTarget says
template <class Word, class Real, class ColumnWords, class Pack, class Multiply>
void for_each_gemm_block(int64_t M, int64_t N, int64_t K, int64_t MR, int64_t NR, int64_t NC, int64_t k_block, Real* C,
                         int64_t ldc, const ColumnWords& words_per_column, const Pack& pack, const Multiply& multiply,
                         const GemmRowsDone* rows_done = nullptr) {
    const int64_t slivers = (M + MR - 1) / MR;
    // The largest panel (the buffers are reused across calls, and per thread, so that the many
    // small products of attention do not each allocate).
    const size_t panel_words =
        static_cast<size_t>(words_per_column(std::min(k_block, K)) * std::min(NC, (N + NR - 1) / NR * NR));
    for (int64_t jc = 0; jc < N; jc += NC) {
        const int64_t nc = std::min(NC, N - jc);
        const GemmRowsDone* done = jc + nc == N ? rows_done : nullptr;  // rows are final in the last panel
        if (each_thread_packs_panels(M, nc, K, k_block)) {
            // Each its own, in tasks (group g, sliver s), t = g * slivers + s: a thread's chunk
            // of tasks packs each group's panels once. Group g covers K values [start(g),
            // start(g + 1)) in blocks of up to k_block. Group 0 sums into C, the others into
            // partials of their own, added to C below in group order.
            const int64_t groups = gemm_k_groups(slivers, K, k_block);
            const auto start = [&](int64_t g) { return gemm_k_group_start(g, groups, K); };
            // The partials: this thread's buffer, kept from call to call like the panels below. A
            // fresh vector would be zero-filled by this thread alone while the others wait, and
            // each group's first K block overwrites its partial anyway. (Nothing run by the loops
            // below calls gemm on this thread, which would reuse the buffer.)
            thread_local AlignedVector<Real> partial_buffer;
            partial_buffer.resize(std::max(partial_buffer.size(), static_cast<size_t>((groups - 1) * M * N)));
            Real* const partials = partial_buffer.data();
            const auto target = [&](int64_t g, int64_t pc, int64_t kc) {
                const bool final = groups == 1 && pc + kc == K;
                return g == 0 ? GemmTarget<Real>{C, ldc, pc == 0, false, final ? done : nullptr}
                              : GemmTarget<Real>{partials + (g - 1) * M * N, N, pc == start(g), true};
            };
            parallel_for(groups * slivers, grain_for_multiply_adds(MR * nc * ((K + groups - 1) / groups)),
                         [&](int64_t t0, int64_t t1) {
                             thread_local AlignedVector<Word> own;
                             own.resize(panel_words);
                             for (int64_t g = t0 / slivers; g * slivers < t1; ++g) {
                                 const int64_t s0 = std::max(t0, g * slivers) - g * slivers;
                                 const int64_t s1 = std::min(t1, (g + 1) * slivers) - g * slivers;
                                 for (int64_t pc = start(g); pc < start(g + 1); pc += k_block) {
                                     const int64_t kc = std::min(k_block, start(g + 1) - pc);
                                     pack(pc, kc, jc, nc, own.data());
                                     multiply(pc, kc, jc, nc, s0, s1, own.data(), target(g, pc, kc));
                                 }
                             }
                         });
            if (groups > 1)
                parallel_for(M, grain_for_elements(nc * (groups - 1)), [&](int64_t i0, int64_t i1) {
                    for (int64_t i = i0; i < i1; ++i)
                        for (int64_t g = 1; g < groups; ++g) {
                            const Real* p = partials + (g - 1) * M * N + i * N;
                            for (int64_t j = jc; j < jc + nc; ++j) C[i * ldc + j] += p[j];
                        }
                    if (done) (*done)(i0, i1);
                });
            continue;
        }
        // Together. (Chunks of 2^13 words: a panel of 128 columns still packs on two threads.)
        // (The pointer is taken here: a worker that named the thread_local would get its own.)
        thread_local AlignedVector<Word> shared_buffer;
        shared_buffer.resize(panel_words);
        Word* shared = shared_buffer.data();
        for (int64_t pc = 0; pc < K; pc += k_block) {
            const int64_t kc = std::min(k_block, K - pc);
            parallel_for((nc + NR - 1) / NR, grain_for(kc * NR, int64_t(1) << 13), [&](int64_t s0, int64_t s1) {
                const int64_t c0 = s0 * NR, cols = std::min(nc, s1 * NR) - c0;
                pack(pc, kc, jc + c0, cols, shared + c0 * words_per_column(kc));
            });
            parallel_for(slivers, grain_for_multiply_adds(MR * nc * kc), [&](int64_t s0, int64_t s1) {
                multiply(pc, kc, jc, nc, s0, s1, shared,
                         GemmTarget<Real>{C, ldc, pc == 0, false, pc + kc == K ? done : nullptr});
            });
        }
    }
}

}  // namespace patchgrad
