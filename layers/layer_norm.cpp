#include "patchgrad/layers/layer_norm.h"

#include <stdexcept>
#include <string>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

LayerNorm::LayerNorm(int64_t dim, real eps) : dim(dim), eps(eps) {
    check(dim > 0, "LayerNorm: dim must be positive, got ", dim);
    weight = register_parameter("weight", Tensor::ones({dim}));
    bias = register_parameter("bias", Tensor::zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, weight, bias, eps); }

}  // namespace patchgrad
