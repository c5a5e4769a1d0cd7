// activation.h — parameter-free elementwise layers: GELU (the ViT MLP's nonlinearity),
// Tanh (the pre-training head's) and Identity (a placeholder, like torch.nn.Identity).
#pragma once

#include "patchgrad/autograd/ops.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

// GELU(x) = x Phi(x). `None` is the exact erf form (torch.nn.GELU(), the ViT paper);
// `Tanh` is the tanh approximation (torch.nn.GELU(approximate="tanh"), BERT/GPT-2).
class GELU : public Layer {
public:
    explicit GELU(GeluApproximation approximation = GeluApproximation::None) : approximation(approximation) {}
    std::string type_name() const override { return "GELU"; }
    Tensor forward(const Tensor& x) override;

    GeluApproximation approximation;
};

class Tanh : public Layer {
public:
    std::string type_name() const override { return "Tanh"; }
    Tensor forward(const Tensor& x) override;
};

// Returns its input unchanged (the same tensor, no copy).
class Identity : public Layer {
public:
    std::string type_name() const override { return "Identity"; }
    Tensor forward(const Tensor& x) override { return x; }
};

}  // namespace patchgrad
