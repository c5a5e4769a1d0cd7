// gradcheck_softplus.cpp — chapter 3's exercise softplus-gradcheck: a gradient check that
// tells a right softplus backward from wrong ones (gradcheck.h).
#include <vector>

#include "patchgrad/autograd/gradcheck.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/rng.h"

namespace patchgrad {

bool softplus_gradient_is_right(const std::function<Tensor(const Tensor&)>& softplus_op) {
    // [exercise:softplus-gradcheck]
    // Both signs and zero, more elements than a loop that stops early reaches, a random weight
    // per output (so that dy differs per element), and x used twice (so that a backward must add).
    Rng rng(3);
    Tensor x = Tensor::uniform({3, 50}, -5, 5, rng, true);
    x.data()[0] = 0;
    const Tensor w = Tensor::uniform({3, 50}, -1, 1, rng);
    const ScalarFunction f = [&](const std::vector<Tensor>& in) {
        return sum(softplus_op(in[0]) * w + softplus_op(in[0]));
    };
    // Where exp overflows (|x| > 709), on their own: their size would drown the differences above.
    Tensor far = Tensor::from_vector({2}, {720, -720}, true);
    const ScalarFunction g = [&](const std::vector<Tensor>& in) { return sum(softplus_op(in[0])); };
    return gradcheck(f, {x}).passed() && gradcheck(g, {far}).passed();
    // [/exercise:softplus-gradcheck]
}

}  // namespace patchgrad
