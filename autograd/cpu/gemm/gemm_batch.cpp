// gemm_batch.cpp — the batch of products behind matmul (gemm.h, "a batch of products").
#include <algorithm>
#include <unordered_set>
#include <vector>

#include "patchgrad/autograd/cpu/gemm/gemm.h"

namespace patchgrad {

BatchPlan plan_batches(const Shape& a_shape, const Shape& b_shape, const char* op) {
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
        check(a_dims[d] == b_dims[d] || a_dims[d] == 1 || b_dims[d] == 1, op, ": batch dimensions of ", a_shape,
              " and ", b_shape, " cannot broadcast (", a_dims[d], " vs ", b_dims[d], ")");
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

bool all_different(std::vector<int64_t> index) {
    std::sort(index.begin(), index.end());
    return std::adjacent_find(index.begin(), index.end()) == index.end();
}

std::vector<real> first_use_beta(const std::vector<int64_t>& index, real beta) {
    std::vector<real> out(index.size(), real(1));
    std::unordered_set<int64_t> seen;
    for (size_t t = 0; t < index.size(); ++t)
        if (seen.insert(index[t]).second) out[t] = beta;
    return out;
}

}  // namespace patchgrad
