#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemm.h"
#include "ops.h"

namespace patchgrad {

namespace {

// The batch dimensions (all but the last two) of a and b broadcast against each other like
// NumPy's. For every matrix of the output batch, a_index / b_index say which matrix of a
// and of b it multiplies (flat indices into their own batches).
struct BatchPlan {
    Shape shape;
    std::vector<int64_t> a_index, b_index;
};

BatchPlan plan_batches(const Shape& a_shape, const Shape& b_shape) {
    const Shape a_batch(a_shape.begin(), a_shape.end() - 2);
    const Shape b_batch(b_shape.begin(), b_shape.end() - 2);
    const size_t ndim = std::max(a_batch.size(), b_batch.size());
    // Both batch shapes right-aligned and padded with leading 1s to ndim.
    Shape a_dims(ndim, 1), b_dims(ndim, 1);
    std::copy(a_batch.begin(), a_batch.end(), a_dims.end() - a_batch.size());
    std::copy(b_batch.begin(), b_batch.end(), b_dims.end() - b_batch.size());

    BatchPlan plan;
    plan.shape.resize(ndim);
    for (size_t d = 0; d < ndim; ++d) {
        if (a_dims[d] != b_dims[d] && a_dims[d] != 1 && b_dims[d] != 1)
            throw std::invalid_argument("matmul: batch dimensions of " + shape_str(a_shape) + " and " +
                                        shape_str(b_shape) + " cannot broadcast (" +
                                        std::to_string(a_dims[d]) + " vs " + std::to_string(b_dims[d]) + ")");
        plan.shape[d] = a_dims[d] == 1 ? b_dims[d] : a_dims[d];
    }

    const int64_t batch = shape_numel(plan.shape);
    plan.a_index.resize(batch);
    plan.b_index.resize(batch);
    std::vector<int64_t> index(ndim, 0);  // multi-index of the output matrix t
    for (int64_t t = 0; t < batch; ++t) {
        int64_t ai = 0, bi = 0;
        for (size_t d = 0; d < ndim; ++d) {
            ai = ai * a_dims[d] + (a_dims[d] == 1 ? 0 : index[d]);
            bi = bi * b_dims[d] + (b_dims[d] == 1 ? 0 : index[d]);
        }
        plan.a_index[t] = ai;
        plan.b_index[t] = bi;
        for (size_t d = ndim; d-- > 0;) {
            if (++index[d] < plan.shape[d]) break;
            index[d] = 0;
        }
    }
    return plan;
}

}  // namespace

// matmul: a [..., M, K] @ b [..., K, N] -> out [..., M, N], batch dimensions broadcast
//   dA = dOut @ B^T      dB = A^T @ dOut      (each summed over the batch matrices it met)
Tensor matmul(const Tensor& a, const Tensor& b) {
    if (a.dim() < 2 || b.dim() < 2)
        throw std::invalid_argument("matmul: both inputs need at least 2 dimensions, got " +
                                    shape_str(a.shape()) + " @ " + shape_str(b.shape()));
    if (a.size(-1) != b.size(-2))
        throw std::invalid_argument("matmul: inner dimensions differ in " + shape_str(a.shape()) + " @ " +
                                    shape_str(b.shape()) + " (" + std::to_string(a.size(-1)) + " vs " +
                                    std::to_string(b.size(-2)) + ")");
    BatchPlan plan = plan_batches(a.shape(), b.shape());
    int64_t M = a.size(-2);
    const int64_t K = a.size(-1), N = b.size(-1);

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

    const int64_t count = static_cast<int64_t>(plan.a_index.size());
    for (int64_t t = 0; t < count; ++t)
        gemm(false, false, M, N, K, 1, a.data() + plan.a_index[t] * M * K, K, b.data() + plan.b_index[t] * K * N,
             N, 0, out.data() + t * M * N, N);

    record(out, "matmul", {a, b}, [a, b, plan, count, M, K, N](Tensor& o) mutable {
        const real* dout = o.grad_data();
        if (a.requires_grad()) {
            real* da = a.grad_data();
            for (int64_t t = 0; t < count; ++t)
                gemm(false, true, M, K, N, 1, dout + t * M * N, N, b.data() + plan.b_index[t] * K * N, N, 1,
                     da + plan.a_index[t] * M * K, K);
        }
        if (b.requires_grad()) {
            real* db = b.grad_data();
            for (int64_t t = 0; t < count; ++t)
                gemm(true, false, K, N, M, 1, a.data() + plan.a_index[t] * M * K, K, dout + t * M * N, N, 1,
                     db + plan.b_index[t] * K * N, N);
        }
    });
    return out;
}

}  // namespace patchgrad
