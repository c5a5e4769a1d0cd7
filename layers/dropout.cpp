#include "patchgrad/layers/dropout.h"

#include <stdexcept>
#include <string>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

Dropout::Dropout(real p, std::shared_ptr<Rng> rng) : p(p), rng(std::move(rng)) {
    check(p >= 0 && p < 1, "Dropout: p must be in [0, 1), got ", p);
    check(p == 0 || this->rng, "Dropout: p = ", p, " needs an Rng, got none");
}

Tensor Dropout::forward(const Tensor& x) {
    if (!training() || p == 0) return x;
    return dropout(x, p, true, *rng);
}

}  // namespace patchgrad
