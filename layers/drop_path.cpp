#include "patchgrad/layers/drop_path.h"

#include <stdexcept>
#include <string>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

DropPath::DropPath(real p, std::shared_ptr<Rng> rng) : p(p), rng(std::move(rng)) {
    check(p >= 0 && p < 1, "DropPath: p must be in [0, 1), got ", p);
    check(p == 0 || this->rng, "DropPath: p = ", p, " needs an Rng, got none");
}

// [snippet:drop-path-forward]
Tensor DropPath::forward(const Tensor& x) {
    if (!training() || p == 0) return x;
    return drop_path(x, p, true, *rng);
}
// [/snippet:drop-path-forward]

}  // namespace patchgrad
