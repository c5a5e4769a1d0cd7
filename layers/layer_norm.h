// layer_norm.h — LayerNorm over the last dimension, the "LN" of the ViT paper's equations.
//
// Each token's D features are normalised to mean 0, variance 1, then scaled by `weight` and
// shifted by `bias` (initialised to 1 and 0, like torch.nn.LayerNorm).
#pragma once

#include "patchgrad/autograd/ops.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

class LayerNorm : public Layer {
public:
    explicit LayerNorm(int64_t dim, real eps = 1e-5);
    std::string type_name() const override { return "LayerNorm"; }
    // x [..., dim] -> [..., dim]
    Tensor forward(const Tensor& x) override;
    // This norm as the one in front of a fused op's first product (InputNorm, autograd/ops.h):
    // the same values, never stored.
    InputNorm in_front() const { return InputNorm{true, weight, bias, eps}; }

    Tensor weight;  // [dim]
    Tensor bias;    // [dim]
    int64_t dim;
    real eps;
};

}  // namespace patchgrad
