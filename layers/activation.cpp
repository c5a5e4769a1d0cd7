#include "patchgrad/layers/activation.h"

namespace patchgrad {

Tensor GELU::forward(const Tensor& x) { return gelu(x, approximation); }

Tensor Tanh::forward(const Tensor& x) { return tanh(x); }

}  // namespace patchgrad
