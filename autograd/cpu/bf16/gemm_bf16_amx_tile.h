// gemm_bf16_amx_tile.h — the bf16 kernels for Intel's AMX tiles (gemm_bf16.h, gemm_kernels.h),
// written over a small set of tile operations so that the same code runs on the hardware
// (gemm_bf16_amx.cpp, the instructions) and on any CPU in the tests (an emulation of the
// instructions' arithmetic, tests/autograd/cpu/bf16/test_gemm_bf16_f32.cpp): the packing, the
// loop over K and the edges of C are checked everywhere, not only on a machine with AMX.
//
// The hardware. An AMX unit has eight tile registers tmm0..tmm7 of up to 16 rows x 64 bytes,
// and tdpbf16ps c, a, b multiplies a 16 x 32 bf16 tile by a 32 x 16 one into a 16 x 16 float32
// tile, C += A B: 8,192 multiply-adds in one instruction (vdpbf16ps does 32). Like vdpbf16ps it
// works on pairs: a row of A holds 16 pairs (k = 2q and 2q + 1 of one row of op(A)), a row of B
// holds one pair for each of 16 columns, and per element
//     c[m][n] += a[m][q].lo * b[q][n].lo,  then  c[m][n] += a[m][q].hi * b[q][n].hi
// for q = 0..15 in order, each sum rounded to nearest float32 (Intel's pseudo-code for
// TDPBF16PS; the products of bf16 values are exact in float32).
//
// The kernel: a 32 x 32 block of C in four tiles (tmm0..3), the A sliver's two 16-row halves
// in tmm4..5 and the B sliver's two 16-column halves in tmm6..7: all eight tiles, four
// instructions per 16 pairs of K, each tile loaded before the first instruction that needs it
// (tiles are not renamed: a load waits for the instructions reading the tile before). Packing
// puts each tile's rows where one load finds them: an A sliver tile by tile (16 rows of 16
// pairs, one run of 1 KB), a B sliver pair row by pair row (NR = 32 columns per row, so a
// step's two tiles share one run of 2 KB), as gemm_kernels.h's Bf16Kernels allows. The
// tiles are always whole: a K block's pairs are padded with zero pairs to a multiple of 16
// (pair_block, gemm_kernels.h), and an edge of C is written from a 32 x 32 float buffer.
// The packing here is the readable one, which the tests' emulation runs; the hardware's table
// packs the same words with AVX512_BF16's conversion (gemm_bf16_avx512.cpp), and a test holds
// the two to the same bits.
#pragma once

#include <cstdint>

#include "patchgrad/autograd/cpu/bf16/bf16.h"
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"

namespace patchgrad {
namespace {

inline int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

// What the kernel asks of the hardware (or of an emulation), with the tile numbers above:
//   Tiles::zero()                   C tiles 0..3 = 0
//   Tiles::multiply(a, lda, b, ldb) tiles 4, 5 = 16 rows each of A from a, a + 16 * lda (lda
//                                   in 32-bit words, each row 16 pairs); tiles 6, 7 = 16 rows
//                                   of 16 pairs from b, b + 16 (rows ldb words apart); then
//                                   C00 += A0 B0, C01 += A0 B1, C10 += A1 B0, C11 += A1 B1
//   Tiles::load(c, ldc)             C tiles = c[32][32], rows ldc floats apart (ldc 0: every row
//                                   the same 32 floats, a bias)
//   Tiles::store(c, ldc)            c[32][32], rows ldc floats apart, = the four C tiles
template <class Tiles>
struct AmxKernel {
    static constexpr int64_t MR = 32, NR = 32, KP = 16;  // KP: pairs per tile row
    static constexpr int64_t kKC = 512;                  // K values per block (Bf16Kernels::kc)

    // A pair of bf16 values, k = 2q in the low half and 2q + 1 in the high half.
    static uint32_t pair(float lo, float hi) {
        return uint32_t(round_to_bf16(lo)) | (uint32_t(round_to_bf16(hi)) << 16);
    }

    // A sliver of MR rows, tile by tile: word [s * pairs + (q / KP) * MR * KP + i * KP + q % KP]
    // is row i's pair q, so that a tile load reads one run of 1 KB; an odd kc's last pair (its
    // high half zero) and the zero pairs up to a whole tile are written after.
    static void pack_a(bool trans_a, const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc,
                       uint32_t* Ap) {
        const int64_t pairs = bf16_pairs(kc, KP), whole = kc / 2;
        const int64_t step = trans_a ? lda : 1;  // from op(A)[r, k] to op(A)[r, k + 1]
        for (int64_t s = 0; s < rows; s += MR)
            for (int64_t i = 0; i < MR; ++i) {
                uint32_t* dst = Ap + s * pairs + i * KP;  // pair q at dst[(q / KP) * MR * KP + q % KP]
                const auto at = [&](int64_t q) -> uint32_t& { return dst[q / KP * MR * KP + q % KP]; };
                if (s + i >= rows) {  // a row past the matrix packs zeros
                    for (int64_t q = 0; q < pairs; ++q) at(q) = 0;
                    continue;
                }
                const int64_t r = r0 + s + i;
                const float* x = trans_a ? A + k0 * lda + r : A + r * lda + k0;  // op(A)[r, k0]
                for (int64_t q = 0; q < whole; ++q) at(q) = pair(x[2 * q * step], x[(2 * q + 1) * step]);
                if (kc % 2) at(whole) = pair(x[2 * whole * step], 0.0f);
                for (int64_t q = (kc + 1) / 2; q < pairs; ++q) at(q) = 0;
            }
    }

    // A sliver of NR columns: word [s * pairs + q * NR + j] is column j's pair q.
    static void pack_b(bool trans_b, const float* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols,
                       uint32_t* Bp) {
        const int64_t pairs = bf16_pairs(kc, KP);
        const int64_t along_k = trans_b ? 1 : ldb, along_col = trans_b ? ldb : 1;  // strides of op(B) in B
        for (int64_t s = 0; s < cols; s += NR) {
            const int64_t n = smaller(NR, cols - s);
            for (int64_t q = 0; q < pairs; ++q) {
                uint32_t* dst = Bp + s * pairs + q * NR;
                for (int64_t j = 0; j < NR; ++j) dst[j] = 0;  // zero pairs past kc and past the columns
                if (2 * q >= kc) continue;
                const float* lo = B + (k0 + 2 * q) * along_k + (c0 + s) * along_col;  // op(B)[k0 + 2q, c0 + s]
                if (2 * q + 1 < kc)
                    for (int64_t j = 0; j < n; ++j) dst[j] = pair(lo[j * along_col], lo[j * along_col + along_k]);
                else
                    for (int64_t j = 0; j < n; ++j) dst[j] = pair(lo[j * along_col], 0.0f);
            }
        }
    }

    // C tiles += A sliver @ B sliver. Tile loads are fast from L1 only, and the driver's next
    // call multiplies the next B sliver, which follows this one: each step asks for its part.
    // Stores to C wait for memory unless C's lines are already in cache, and at K = 128 a call's
    // four steps take less than one trip to memory: so each step also asks for a few rows of
    // the block of C 32 rows down (below_c, rows ldc floats apart; 0 for none), which the
    // driver writes when it reaches the next sliver of A, once this row of blocks is done.
    // (Addresses, not pointers: after the panel's last sliver or C's last rows they point past
    // the buffers, and a prefetch of them is harmless, but forming such a pointer is not allowed
    // in C++.)
    static void multiply_all(int64_t pairs, const uint32_t* a, const uint32_t* b, uintptr_t below_c = 0,
                             int64_t ldc = 0) {
        const uintptr_t next = reinterpret_cast<uintptr_t>(b) + NR * pairs * sizeof(uint32_t);
        const int64_t c_rows = (MR * KP + pairs - 1) / pairs;  // of below_c per step
        for (int64_t q = 0; q < pairs; q += KP) {
            Tiles::multiply(a + q * MR, KP, b + q * NR, NR);
            for (int64_t byte = 0; byte < KP * NR * 4; byte += 64)
                __builtin_prefetch(reinterpret_cast<const void*>(next + (q * NR * 4 + byte)));
            for (int64_t i = q / KP * c_rows; below_c && i < smaller(MR, (q / KP + 1) * c_rows); ++i) {
                const uintptr_t row = below_c + i * ldc * sizeof(float);
                __builtin_prefetch(reinterpret_cast<const void*>(row), 1);
                __builtin_prefetch(reinterpret_cast<const void*>(row + NR * sizeof(float) - 1), 1);
            }
        }
    }

    // C[mr, nr] = alpha * (A sliver @ B sliver) + beta * C + bias, for any mr, nr <= 32; pairs
    // is a multiple of KP (the packing's zero pairs).
    static void micro_kernel(int64_t pairs, const uint32_t* a, const uint32_t* b, float alpha, float beta,
                             const float* bias, float* c, int64_t ldc, int64_t mr, int64_t nr) {
        // A whole block with alpha 1 (every product of a training step but attention's scores)
        // starts its sums from what C must add, C itself or the bias, and stores them straight
        // into C: no pass over a buffer.
        if (mr == MR && nr == NR && alpha == 1 && (beta == 0 || (beta == 1 && !bias))) {
            if (beta == 1)
                Tiles::load(c, ldc);
            else if (bias)
                Tiles::load(bias, 0);
            else
                Tiles::zero();
            multiply_all(pairs, a, b, reinterpret_cast<uintptr_t>(c) + MR * ldc * sizeof(float), ldc);
            Tiles::store(c, ldc);
            return;
        }
        Tiles::zero();
        multiply_all(pairs, a, b);
        float tile[MR * NR];
        Tiles::store(tile, NR);
        for (int64_t i = 0; i < mr; ++i)
            for (int64_t j = 0; j < nr; ++j) {
                float& out = c[i * ldc + j];
                out = alpha * tile[i * NR + j] + (beta == 0 ? 0.0f : beta * out) + (bias ? bias[j] : 0.0f);
            }
    }

    using PackA = decltype(Bf16Kernels::pack_a);
    using PackB = decltype(Bf16Kernels::pack_b);

    // One kernel for any width (a narrow edge still multiplies whole tiles) and both transposes;
    // the packing above, or another that writes the same words.
    static constexpr Bf16Kernels table(const char* name, PackA packs_a = &pack_a, PackB packs_b = &pack_b) {
        return Bf16Kernels{name,
                           MR,
                           NR,
                           NR,
                           KP,
                           MR,
                           kKC,
                           true,
                           0x1p-24,
                           packs_a,
                           packs_b,
                           {&micro_kernel, &micro_kernel},
                           {&micro_kernel, &micro_kernel}};
    }
};

}  // namespace
}  // namespace patchgrad
