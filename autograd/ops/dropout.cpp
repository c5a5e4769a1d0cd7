// dropout.cpp — inverted dropout.
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

// x [...] -> y [...]. Training: y = x * keep / (1 - p) with keep ~ Bernoulli(1 - p) per
// element, so E[y] = x and evaluation needs no rescaling.
// [hide:dropout-backward]
//   dx = dy * keep / (1 - p)
// [/hide:dropout-backward]
// Evaluation (or p == 0) returns x itself, like PyTorch, without drawing from `rng`. With
// p == 1 nothing is kept and the scale is 0, not 1/0.
Tensor dropout(const Tensor& x, real p, bool training, Rng& rng) {
    if (!(p >= 0 && p <= 1)) {
        std::ostringstream msg;
        msg << "dropout: p must be in [0, 1], got " << p << " (input " << shape_str(x.shape()) << ")";
        throw std::invalid_argument(msg.str());
    }
    if (!training || p == 0) return x;

    Tensor out = Tensor::empty(x.shape());
    // [exercise:dropout-backward]
    const int64_t n = x.numel();
    // One draw per element, in index order: the tests and checkpoints rely on the stream.
    const real scale = p < 1 ? 1 / (1 - p) : 0;
    std::vector<uint8_t> keep(n);
    for (int64_t i = 0; i < n; ++i) keep[i] = rng.uniform() >= p;
    const real* xd = x.data();
    real* y = out.data();
    for (int64_t i = 0; i < n; ++i) y[i] = xd[i] * scale * keep[i];  // y = x keep / (1 - p)

    // The backward needs the very mask of the forward, so the closure owns it (moved, n bytes).
    record(out, "dropout", {x}, [x, n, scale, keep = std::move(keep)](Tensor& o) mutable {
        const real* dy = o.grad_data();
        real* dx = x.grad_data();
        for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * scale * keep[i];  // dx = dy keep / (1 - p)
    });
    // [/exercise:dropout-backward]
    return out;
}

}  // namespace patchgrad
