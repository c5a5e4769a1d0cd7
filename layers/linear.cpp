#include "patchgrad/layers/linear.h"

#include <stdexcept>
#include <string>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

Linear::Linear(int64_t in_features, int64_t out_features, Rng& init, bool bias)
    : in_features(in_features), out_features(out_features) {
    check(in_features > 0 && out_features > 0, "Linear: in_features and out_features must be positive, got ",
          in_features, " and ", out_features);
    weight = register_parameter("weight", Tensor::trunc_normal({out_features, in_features}, 0, 0.02, -2, 2, init));
    if (bias) this->bias = register_parameter("bias", Tensor::zeros({out_features}));
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

}  // namespace patchgrad
