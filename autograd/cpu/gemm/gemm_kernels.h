// gemm_kernels.h — the per-CPU pieces of gemm_blocked, as a table chosen at run time.
//
// gemm_blocked (gemm.cpp) does the blocking and the threads once, in portable code, and calls
// three kernels through this table: pack a block of op(A), pack a panel of op(B), and the
// micro-kernel that multiplies one packed MR-row sliver of A by one NR-column sliver of B
// into a tile of C. Those three are compiled once per instruction-set level (cpu_isa.h), each
// in its own file with its own compiler flags (gemm_baseline.cpp, gemm_avx2.cpp,
// gemm_avx512.cpp), from the one template in gemm_tile.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/storage.h"

namespace patchgrad {

// What gemm calls on rows [i0, i1) of C once they are final (gemm.h).
using GemmRowsDone = std::function<void(int64_t i0, int64_t i1)>;

// An operand that gemm computes as it reads it (gemm.h): writes rows [r0, r1) and columns
// [c0, c1) of the matrix as stored (A [M, K], or [K, M] when transposed; B likewise) into out,
// its rows ld apart.
using GemmOperandSource = std::function<void(int64_t r0, int64_t r1, int64_t c0, int64_t c1, real* out, int64_t ld)>;
struct GemmSources {
    const GemmOperandSource* a = nullptr;
    const GemmOperandSource* b = nullptr;
};

// C[mr, nr] = alpha * (A sliver @ B sliver) + beta * C + bias[0 .. nr), over kc terms, for
// mr <= MR and nr <= the columns the kernel covers. Element (i, p) of the A sliver is
// a[p * a_k + i * a_i] (packed: a_k = MR, a_i = 1); row p of the B sliver is b[p * NR ...].
// beta == 0 never reads C; bias may be null.
// The K block: how many terms of each dot product a micro-kernel call sums (gemm.cpp; up to
// twice that for a row-major A read in place).
constexpr int64_t kGemmKC = 256;

using MicroKernel = void (*)(int64_t kc, const real* a, int64_t a_k, int64_t a_i, const real* b, real alpha, real beta,
                             const real* bias, real* c, int64_t ldc, int64_t mr, int64_t nr);

struct GemmKernels {
    Isa isa;
    int64_t mr;      // rows of the C tile
    int64_t nr;      // columns of the C tile: a whole number of vectors
    int64_t vector;  // reals per vector register
    // Ap[s][p][i] = op(A)[r0 + s*MR + i, k0 + p] for `rows` rows and kc columns, zero-padded
    // to whole MR-row slivers.
    void (*pack_a)(bool trans_a, const real* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc,
                   real* Ap);
    // The same block of a row-major A (no transpose) packed row by row: Ap[s][i][p] =
    // A[r0 + s*MR + i, k0 + p], each row kGemmKC long (kc used). A copy of runs of A, where the
    // column-wise packing above would transpose element by element.
    void (*pack_a_rows)(const real* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc, real* Ap);
    // Bp[s][p][j] = op(B)[k0 + p, c0 + s*NR + j] for kc rows and `cols` columns, zero-padded
    // to whole NR-column slivers.
    void (*pack_b)(bool trans_b, const real* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols,
                   real* Bp);
    // Micro-kernels by how many vectors of the B sliver they use (index v - 1, up to 3), so a
    // narrow edge sliver costs only its width; null beyond nr / vector. `packed` reads the A
    // sliver as pack_a writes it, `row_packed` as pack_a_rows does (in both the strides are
    // compile-time constants, so the tile stays in registers), `strided` in place from op(A).
    MicroKernel packed[3];
    MicroKernel row_packed[3];
    MicroKernel strided[3];
};

// The bf16 kernels (gemm_bf16.h), for the same driver shape with bf16 pairs instead of
// floats: element k = 2q (low half) and k = 2q + 1 (high half) of a row or column share one
// 32-bit word, `pairs` = bf16_pairs(kc, pair_block) words per K block: ceil(kc / 2), an odd kc
// padded with a zero, and rounded up to whole tiles with zero pairs where the kernel has tiles.
//   Ap[s][q][i] = pair of op(A)[r0 + s*MR + i, k0 + 2q .. 2q+1], zero-padded to whole MR slivers
//   Bp[s][q][j] = pair of op(B)[k0 + 2q .. 2q+1, c0 + s*NR + j], zero-padded to whole NR slivers
// (the driver needs only that a sliver's MR * pairs or NR * pairs words are contiguous: the AMX
// kernel orders an A sliver's words [i][q], as its tile loads want them, and the AVX-512 one
// does so for a row-major A, whose rows convert straight into their pairs).
// C[mr, nr] = alpha * (A sliver @ B sliver) + beta * C + bias as for MicroKernel, all in float32.
using Bf16MicroKernel = void (*)(int64_t pairs, const uint32_t* a, const uint32_t* b, float alpha, float beta,
                                 const float* bias, float* c, int64_t ldc, int64_t mr, int64_t nr);

// The pairs a K block of kc values packs into: ceil(kc / 2), rounded up to a multiple of
// pair_block (AMX: 16, its tiles' rows; 1 for the others).
constexpr int64_t bf16_pairs(int64_t kc, int64_t pair_block) {
    return ((kc + 1) / 2 + pair_block - 1) / pair_block * pair_block;
}

struct Bf16Kernels {
    const char* name;  // the instruction that multiplies
    int64_t mr, nr, vector;
    int64_t pair_block;  // bf16_pairs' rounding: whole tiles, so that the kernel has no K tail
    // Rows of A packed at a time, whole slivers: 144 for the 12-row kernels, one 32-row sliver
    // for AMX, which then stays in L1 for its whole row of C (tile loads are slow from L2).
    int64_t mc;
    // K values per block (the kc of pack_a and pack_b at most): kGemmKC, or 512 for AMX, whose
    // tiles then keep C through a whole K up to 512 (cifar-tiny's largest, qkv's input gradient,
    // is 384) instead of storing it and loading it back between blocks (figures: chapter 12's
    // measurements, kernel notes).
    int64_t kc;
    // Whether C = A^T B with more rows than columns, without bias or rows_done (a weight gradient
    // dOut^T x of a layer with more outputs than inputs), runs as C^T = B^T A, added transposed:
    // the packing of a transposed A (16 x 16 transposes) then reads the narrower matrix. Faster
    // for AMX, slower for the vdpbf16ps kernel (chapter 12's measurements).
    bool transpose_wide_weight_gradients;
    // The relative error of one float32 addition in the kernel's sums: 2^-24 where it rounds
    // to nearest (vdpbf16ps), 2^-23 where it rounds to odd (ARM's BFDOT).
    double sum_roundoff;
    void (*pack_a)(bool trans_a, const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc,
                   uint32_t* Ap);
    void (*pack_b)(bool trans_b, const float* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols,
                   uint32_t* Bp);
    Bf16MicroKernel micro[2];       // by vectors of the B sliver used, as GemmKernels::packed
    Bf16MicroKernel micro_rows[2];  // the same for an A sliver pack_a wrote from a row-major A
};

// Defined in gemm_bf16_avx512.cpp (x86-64 only); use only where the CPU has AVX512_BF16.
extern const Bf16Kernels gemm_bf16_kernels_avx512;
// AMX's packing (gemm_bf16_amx_tile.h's layout: 32-row A slivers word [i][q], 32-column B
// slivers, pair_block 16) by AVX512_BF16's conversion, defined in gemm_bf16_avx512.cpp (x86-64
// only; use only where the CPU has AVX512_BF16, as every CPU with AMX-BF16 does).
void gemm_bf16_amx_pack_a(bool trans_a, const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc,
                          uint32_t* Ap);
void gemm_bf16_amx_pack_b(bool trans_b, const float* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols,
                          uint32_t* Bp);
// Defined in gemm_bf16_amx.cpp where the compiler knows AMX (the build defines PATCHGRAD_AMX
// then); use only where the CPU has AMX-BF16 and the operating system allows it.
extern const Bf16Kernels gemm_bf16_kernels_amx;
// Loads, once per thread, the tile configuration every AMX kernel here uses: palette 1, all
// eight tiles 16 rows of 64 bytes (loading it zeroes the tiles, so it comes before a kernel's
// first tile, never between two). Defined in gemm_bf16_amx.cpp, with the same conditions.
void amx_configure_tiles();
// gemm_bf16 (gemm_bf16.h) with the given kernels, whatever the CPU: the dispatch's own
// driver, for the tests (an emulation of AMX runs through it) and AMX's first-use check.
void gemm_bf16_with(const Bf16Kernels& kernels, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                    float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                    int64_t ldc, const float* bias = nullptr, const GemmRowsDone* rows_done = nullptr,
                    const GemmSources* sources = nullptr);
// AMX's check on first use (gemm_bf16.cpp): four small products through gemm_bf16_with, one
// per transpose pair, within a loose multiple of the bf16 error bound. "" when `kernels` pass,
// else the kernel, the shape, the transposes and the worst element, for a user to report.
std::string bf16_kernel_check(const Bf16Kernels& kernels);
// The AMX kernel where the CPU has AMX and the operating system grants its state, whether or
// not it passed the first-use check (the native AMX test runs it either way); else null, and
// `why_not` says what is missing.
const Bf16Kernels* amx_kernels_on_this_cpu(std::string& why_not);
// Defined in gemm_bf16_neon.cpp where the compiler targets ARM64 with BF16 (the build defines
// PATCHGRAD_NEON_BF16 then); use only where the CPU has BF16.
extern const Bf16Kernels gemm_bf16_kernels_neon;

// The table for `isa` (which the CPU must support: see active_isa()).
const GemmKernels& gemm_kernels(Isa isa);

// Defined in gemm_baseline.cpp, gemm_avx2.cpp and gemm_avx512.cpp (the last two on x86-64).
extern const GemmKernels gemm_kernels_baseline;
extern const GemmKernels gemm_kernels_avx2;
extern const GemmKernels gemm_kernels_avx512;

}  // namespace patchgrad
