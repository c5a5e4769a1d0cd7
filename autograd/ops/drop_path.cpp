// drop_path.cpp — stochastic depth: drops a residual branch for whole samples.
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "autograd/ops.h"

namespace patchgrad {

// x [B, ...] -> y [B, ...]. Training: y[b] = x[b] * keep_b / (1 - p), one keep_b ~
// Bernoulli(1 - p) per sample b, so a dropped sample's branch contributes nothing and the
// block is the identity for it (Huang et al. 2016; timm's drop_path).
//   dx[b] = dy[b] * keep_b / (1 - p)
// Evaluation (or p == 0) returns x itself without drawing from `rng`.
Tensor drop_path(const Tensor& x, real p, bool training, Rng& rng) {
    if (!(p >= 0 && p < 1)) {
        std::ostringstream msg;
        msg << "drop_path: p must be in [0, 1), got " << p << " (input " << shape_str(x.shape()) << ")";
        throw std::invalid_argument(msg.str());
    }
    check(x.dim() > 0, "drop_path: input must have a batch dimension, got shape ", x.shape());
    if (!training || p == 0) return x;

    const int64_t B = x.size(0), per_sample = B > 0 ? x.numel() / B : 0;
    std::vector<real> scale(B);
    for (auto& s : scale) s = rng.uniform() >= p ? 1 / (1 - p) : 0;
    Tensor out = Tensor::empty(x.shape());
    const real* xd = x.data();
    real* y = out.data();
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < per_sample; ++i) y[b * per_sample + i] = xd[b * per_sample + i] * scale[b];

    record(out, "drop_path", {x}, [x, B, per_sample, scale = std::move(scale)](Tensor& o) mutable {
        const real* dy = o.grad_data();
        real* dx = x.grad_data();
        for (int64_t b = 0; b < B; ++b)
            for (int64_t i = 0; i < per_sample; ++i) dx[b * per_sample + i] += dy[b * per_sample + i] * scale[b];
    });
    return out;
}

}  // namespace patchgrad
