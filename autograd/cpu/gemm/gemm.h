// gemm.h — general matrix multiply, the kernel under matmul and linear.
//
//     C[M, N] = alpha * op(A)[M, K] @ op(B)[K, N] + beta * C
//
// All matrices are row-major. op(A) is A, or A^T when trans_a: then A is stored as [K, M].
// The leading dimension lda is the distance between consecutive stored rows of A (the
// stored row length for a dense matrix: K for A [M, K], M for A^T stored as [K, M]); the
// same for B and C. Transposes are read in place, never materialised. As in BLAS, beta == 0
// means C is only written, never read (so garbage in C does not leak into the result).
//
// `bias`, when given, is an [N] vector added to every row of C, as in torch.addmm:
//     C = alpha * op(A) @ op(B) + beta * C + bias
// The fast kernel adds it while it writes the tile (linear's bias costs no pass of its own).
//
// `rows_done`, when given, is called on rows [i0, i1) of C as soon as they hold their final
// values (every column), while they are still in cache; on several threads at once, for
// disjoint rows, so it must treat each row on its own. An op fuses what follows its product
// there: the MLP op (mlp.cpp) computes GELU on the first product's rows and multiplies the
// rows of dOut W2 by GELU's derivative; linear and mlp add a block's skip connection (their
// residual) to the rows of their result.
//
// `sources`, when given, computes A or B (or both) as gemm reads them, a block at a time, in
// place of reading the matrix: an op fuses what precedes its product there (layer_norm_linear
// and mlp normalise their input's rows as the first product reads them, so that LayerNorm's
// output is never stored). A and B still point to a matrix of the operand's shape that the
// source reads (LayerNorm's input), which gemm only asks the memory for ahead of time.
//
// Every version is deterministic: each C element is summed over k in a fixed order that
// depends only on M, N, K and the transposes, never on timing or threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"  // GemmRowsDone
#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

// The readable definition: one dot product per C element, k in increasing order.
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A, int64_t lda,
                    const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias = nullptr,
                    const GemmRowsDone* rows_done = nullptr, const GemmSources* sources = nullptr);

// patchgrad's own fast kernel: cache blocking, packed panels and a register-tiled
// micro-kernel in plain C++ that the compiler vectorises (see gemm.cpp).
void gemm_blocked(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A, int64_t lda,
                  const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias = nullptr,
                  const GemmRowsDone* rows_done = nullptr, const GemmSources* sources = nullptr);

// The gemm kernel in use (cpu_isa.h's active level) and its tile, e.g. "avx512, tile 12 x 32".
std::string gemm_kernel_description();

// What the ops call: gemm_bf16 while the matmul precision is bf16 (gemm_bf16.h); otherwise
// cblas_sgemm / cblas_dgemm when built with PATCHGRAD_USE_OPENBLAS, gemm_blocked if not.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A, int64_t lda,
          const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias = nullptr,
          const GemmRowsDone* rows_done = nullptr, const GemmSources* sources = nullptr);

// The operands as gemm reads them, for the paths that have no blocks to compute a source's by
// (the reference, BLAS, the bf16 emulation): A and B themselves, or each that `sources` computes
// written whole, as stored, into a_values or b_values (lda, ldb its row length).
struct GemmOperands {
    const real *A, *B;
    int64_t lda, ldb;
    std::vector<real> a_values, b_values;
};
void gemm_operands(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const real* A, int64_t lda,
                   const real* B, int64_t ldb, const GemmSources* sources, GemmOperands& operands);

// gemm for small products, attention's per head (65 x 65 x 32 in cifar-tiny). Under the bf16
// precision they stay float32 where the bf16 kernel is AMX's, whose gemm tiles pay only over a
// long K (in the step they were slower than float32: chapter 12.9; attention's heads of 32 or
// 64 go to a tile kernel of their own there, attention_heads_amx.h); the other bf16 kernels
// (vdpbf16ps, BFDOT, the emulation) multiply them in bf16, as gemm does.
void gemm_small(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha, const real* A, int64_t lda,
                const real* B, int64_t ldb, real beta, real* C, int64_t ldc, const real* bias = nullptr);

// Whether gemm_small multiplies in float32 now (the precision and the bf16 kernel above).
bool gemm_small_is_float32();

// ---- a batch of products (matmul's batch dimensions) ---------------------------------------
// The batch dimensions (all but the last two) of a and b broadcast against each other like
// NumPy's. For every matrix of the output batch, a_index / b_index say which matrix of a
// and of b it multiplies (flat indices into their own batches).
struct BatchPlan {
    Shape shape;
    std::vector<int64_t> a_index, b_index;
};
// Throws "op: batch dimensions of [..] and [..] cannot broadcast (..)".
BatchPlan plan_batches(const Shape& a_shape, const Shape& b_shape, const char* op);

// Whether no two products of the batch reach one matrix: then they may run on several threads.
bool all_different(std::vector<int64_t> index);

// gemm's beta for the t-th product into gradient matrix index[t]: `beta` (0 when the
// gradient is fresh, uninitialised memory) for the first product that reaches a matrix, 1 (add)
// for later ones. Every matrix of a broadcast input is reached at least once when the output
// has elements (an empty output never runs its backward: it has no gradient).
std::vector<real> first_use_beta(const std::vector<int64_t>& index, real beta);

}  // namespace patchgrad
