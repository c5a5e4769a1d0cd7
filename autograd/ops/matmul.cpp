// matmul.cpp — batched matrix products, matmul and matmul_transposed, with broadcasting over
// the batch dimensions.
//
// Every product, forward and backward, is one call of gemm (autograd/cpu/gemm/gemm.h) per matrix
// of the batch (one tall call for the whole batch when b has none); a gradient matrix that
// several products reach (a broadcast input) gets the first with beta 0 and adds the others,
// so no buffer is zero-filled first.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/ops.h"

namespace patchgrad {

namespace {

// matrix(t) for t in [0, count): on several threads when `independent`, else in order.
template <class F>
void for_each_matrix(int64_t count, int64_t grain, bool independent, F&& matrix) {
    if (!independent || count == 1) {  // one matrix: gemm splits it across the threads itself
        for (int64_t t = 0; t < count; ++t) matrix(t);
        return;
    }
    parallel_for(count, grain, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) matrix(t);
    });
}

// The one implementation behind matmul and matmul_transposed: out = alpha * a @ op(b), with
// op(b) = b^T read in place when trans_b (b stored [..., N, K]).
Tensor batched_matmul(const Tensor& a, const Tensor& b, bool trans_b, real alpha, const char* op) {
    check(a.dim() >= 2 && b.dim() >= 2, op, ": both inputs need at least 2 dimensions, got ", a.shape(), " and ",
          b.shape());
    const int64_t b_inner = trans_b ? b.size(-1) : b.size(-2);
    check(a.size(-1) == b_inner, op, ": inner dimensions differ in ", a.shape(), trans_b ? " @ transpose of " : " @ ",
          b.shape(), " (", a.size(-1), " vs ", b_inner, ")");
    BatchPlan plan = plan_batches(a.shape(), b.shape(), op);
    int64_t M = a.size(-2);
    const int64_t K = a.size(-1), N = trans_b ? b.size(-2) : b.size(-1);
    const int64_t ldb = trans_b ? K : N;

    Shape out_shape = plan.shape;
    out_shape.push_back(M);
    out_shape.push_back(N);
    Tensor out = Tensor::empty(out_shape);

    // One b for the whole batch (x [B, T, D] @ W [D, E]): a's matrices are consecutive rows
    // of one tall [batch * M, K] matrix, and one big multiply is much faster than many
    // small ones.
    if (shape_numel(Shape(b.shape().begin(), b.shape().end() - 2)) == 1) {
        M *= static_cast<int64_t>(plan.a_index.size());
        plan.a_index = plan.b_index = {0};
    }

    // The batch's matrices go to the threads whole (attention's many small multiplies),
    // unless several of them add into one gradient matrix (a broadcast input): then they run
    // in order, so the sum's order never depends on the threads.
    const int64_t count = static_cast<int64_t>(plan.a_index.size());
    const int64_t grain = grain_for_multiply_adds(M * N * K);
    // [snippet:matmul-forward]
    for_each_matrix(count, grain, true, [&](int64_t t) {
        gemm(false, trans_b, M, N, K, alpha, a.data() + plan.a_index[t] * M * K, K, b.data() + plan.b_index[t] * K * N,
             ldb, 0, out.data() + t * M * N, N);
    });
    // [/snippet:matmul-forward]

    record(out, op, {a, b}, [a, b, plan, count, grain, M, K, N, ldb, trans_b, alpha](Tensor& o) mutable {
        // [exercise:matmul-backward]
        const real* dout = o.grad_data();
        // The first gradient to reach a matrix of a or b is written, later ones are added
        // (grad_for_overwrite's beta; a broadcast matrix meets several).
        if (a.requires_grad()) {  // dA = alpha dOut @ op(b)^T
            const GradOverwrite da = grad_for_overwrite(a);
            std::vector<real> beta = first_use_beta(plan.a_index, da.beta);
            for_each_matrix(count, grain, all_different(plan.a_index), [&](int64_t t) {
                gemm(false, !trans_b, M, K, N, alpha, dout + t * M * N, N, b.data() + plan.b_index[t] * K * N, ldb,
                     beta[t], da.data + plan.a_index[t] * M * K, K);
            });
        }
        if (b.requires_grad()) {  // dB = alpha A^T @ dOut, or its transpose alpha dOut^T @ A
            const GradOverwrite db = grad_for_overwrite(b);
            std::vector<real> beta = first_use_beta(plan.b_index, db.beta);
            for_each_matrix(count, grain, all_different(plan.b_index), [&](int64_t t) {
                const real* at = a.data() + plan.a_index[t] * M * K;
                const real* dt = dout + t * M * N;
                real* dbt = db.data + plan.b_index[t] * K * N;
                if (trans_b)
                    gemm(true, false, N, K, M, alpha, dt, N, at, K, beta[t], dbt, K);
                else
                    gemm(true, false, K, N, M, alpha, at, K, dt, N, beta[t], dbt, N);
            });
        }
        // [/exercise:matmul-backward]
    });
    return out;
}

}  // namespace

// matmul: a [..., M, K] @ b [..., K, N] -> out [..., M, N], batch dimensions broadcast
// [hide:matmul-backward]
//   dA = dOut @ B^T      dB = A^T @ dOut      (each summed over the batch matrices it met)
// [/hide:matmul-backward]
Tensor matmul(const Tensor& a, const Tensor& b) { return batched_matmul(a, b, false, 1, "matmul"); }

// matmul_transposed: alpha * a [..., M, K] @ b[..., N, K]^T -> out [..., M, N], without
// materialising b^T (attention's q @ k^T / sqrt(d)).
// [hide:matmul-backward]
//   dA = alpha dOut @ B      dB = alpha dOut^T @ A
// [/hide:matmul-backward]
Tensor matmul_transposed(const Tensor& a, const Tensor& b, real alpha) {
    return batched_matmul(a, b, true, alpha, "matmul_transposed");
}

}  // namespace patchgrad
