#include "layers/layer_norm.h"

#include <stdexcept>
#include <string>

#include "autograd/ops.h"

namespace patchgrad {

LayerNorm::LayerNorm(int64_t dim, real eps) : dim(dim), eps(eps) {
    if (dim <= 0) throw std::invalid_argument("LayerNorm: dim must be positive, got " + std::to_string(dim));
    weight = register_parameter("weight", Tensor::ones({dim}));
    bias = register_parameter("bias", Tensor::zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, weight, bias, eps); }

}  // namespace patchgrad
