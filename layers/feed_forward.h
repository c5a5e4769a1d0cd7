// feed_forward.h — the Transformer's MLP: Linear -> GELU -> Dropout -> Linear -> Dropout.
//
// "The MLP contains two layers with a GELU non-linearity" (ViT paper, eq. 3); ViT from
// scratch's ViTBlock and the ViT notebook's FeedForward. Children are named like timm's Mlp ("fc1", "act",
// "drop1", "fc2", "drop2") so the parameters are blocks.N.mlp.fc1.weight etc.
#pragma once

#include <memory>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/activation.h"
#include "patchgrad/layers/dropout.h"
#include "patchgrad/layers/layer_norm.h"
#include "patchgrad/layers/linear.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

// The MLP's hidden size as ViT from scratch's ViTBlock takes it: `mlp_dim` when given (> 0),
// otherwise dim * mlp_ratio (timm's convention, e.g. 768 * 4 = 3072).
int64_t mlp_hidden_dim(int64_t dim, int64_t mlp_dim, double mlp_ratio);

class FeedForward : public Layer {
public:
    FeedForward(int64_t dim, int64_t hidden_dim, Rng& init, std::shared_ptr<Rng> dropout_rng, real dropout = 0,
                GeluApproximation approximation = GeluApproximation::None);
    std::string type_name() const override { return "FeedForward"; }
    // x [..., dim] -> [..., dim]
    Tensor forward(const Tensor& x) override;
    // residual + forward(x), or forward(norm(x)) with a norm: where forward takes the fused op
    // and drop2 is inactive, fc2 adds the residual as it writes its rows (mlp's residual) and
    // fc1 computes the norm's rows as it reads them (mlp's norm), the same bits with no passes
    // of their own; otherwise one op after another. A block's skip connection and its
    // LayerNorm (vit_block.h).
    Tensor forward_plus(const Tensor& x, const Tensor& residual, LayerNorm* norm = nullptr);

    std::shared_ptr<Linear> fc1;  // dim -> hidden_dim
    std::shared_ptr<GELU> act;
    std::shared_ptr<Dropout> drop1;
    std::shared_ptr<Linear> fc2;  // hidden_dim -> dim
    std::shared_ptr<Dropout> drop2;
    // forward runs fc1, act and fc2 as one op, mlp (autograd/ops.h), the same values with fewer
    // passes over memory, unless this is false or drop1 is active (it sits between act and fc2).
    bool fused = true;
};

}  // namespace patchgrad
