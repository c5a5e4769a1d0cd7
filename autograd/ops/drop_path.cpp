// drop_path.cpp — stochastic depth: drops a residual branch for whole samples.
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

// x [B, ...] -> y [B, ...]. Training: y[b] = x[b] * keep_b / (1 - p), one keep_b ~
// Bernoulli(1 - p) per sample b, so a dropped sample's branch contributes nothing and the
// block is the identity for it (Huang et al. 2016; timm's drop_path).
// Evaluation (or p == 0) returns x itself without drawing from `rng`.
Tensor drop_path(const Tensor& x, real p, bool training, Rng& rng) {
    if (!(p >= 0 && p < 1)) {
        std::ostringstream msg;
        msg << "drop_path: p must be in [0, 1), got " << p << " (input " << shape_str(x.shape()) << ")";
        throw std::invalid_argument(msg.str());
    }
    check(x.dim() > 0, "drop_path: input must have a batch dimension, got shape ", x.shape());
    if (!training || p == 0) return x;

    // One draw per sample, in order: dropout of a [B, 1, ..., 1] tensor of ones is 0 or 1 / (1 - p)
    // per sample, and the product broadcasts it over the sample's elements.
    Shape mask_shape(static_cast<size_t>(x.dim()), 1);
    mask_shape[0] = x.size(0);
    return x * dropout(Tensor::ones(mask_shape), p, true, rng);
}

}  // namespace patchgrad
