// linear.h — y = x W^T + b, the affine map every ViT projection is made of.
//
// The weight is stored [out_features, in_features] like torch.nn.Linear, so a PyTorch
// state_dict loads without transposing. Initialisation follows timm and ViTs Explained:
// weight ~ truncated normal (std 0.02, cut at ±2), bias = 0.
#pragma once

#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

class Linear : public Layer {
public:
    Linear(int64_t in_features, int64_t out_features, Rng& init, bool bias = true);
    std::string type_name() const override { return "Linear"; }
    // x [..., in_features] -> [..., out_features]
    Tensor forward(const Tensor& x) override;

    Tensor weight;  // [out_features, in_features]
    Tensor bias;    // [out_features]; undefined when constructed with bias = false
    int64_t in_features, out_features;
};

}  // namespace patchgrad
