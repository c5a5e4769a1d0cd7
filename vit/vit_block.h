// vit_block.h — one Transformer encoder layer of the ViT (ViT from scratch §2-5-2), the
// paper's equations (2) and (3) with pre-norm residual connections:
//
//   z'_l = MSA(LN(z_{l-1})) + z_{l-1}        (2)
//   z_l  = MLP(LN(z'_l))    + z'_l           (3)
//
// While training, stochastic depth (drop_path1, drop_path2) may drop either branch for a
// whole sample, leaving only its residual path.
//
// ViT from scratch's ViTBlock.forward computes the second line as
//   out = self.feedforward(self.layernorm2(x)) + out
// i.e. it normalises the block's input x instead of z'_l, so the MLP never sees what the
// attention just wrote; tests/vit/test_vit_block.cpp shows the two differ and that ours is
// the paper's. (Its constructor also passes `mlp_hidden_dim` rather than
// `self.mlp_hidden_dim` to nn.Linear, so the mlp_ratio path breaks; FeedForward's size comes
// from mlp_hidden_dim() in layers/feed_forward.h.)
//
// Children are named like timm's Block ("norm1", "attn", "norm2", "mlp"), so parameters read
// blocks.3.norm1.weight, blocks.3.attn.qkv.weight, blocks.3.mlp.fc1.weight, ...
#pragma once

#include <memory>
#include <vector>

#include "autograd/ops.h"
#include "autograd/rng.h"
#include "layers/attention.h"
#include "layers/drop_path.h"
#include "layers/feed_forward.h"
#include "layers/layer_norm.h"
#include "layers/module.h"

namespace patchgrad {

// [snippet:vit-block-class]
class ViTBlock : public Layer {
public:
    // dropout is applied after the attention's output projection and inside the MLP (timm's
    // proj_drop and drop1/drop2); attn_dropout to the attention weights.
    // drop_path is the stochastic-depth rate of both residual branches (drop_path1/2).
    ViTBlock(int64_t dim, int64_t heads, int64_t mlp_hidden_dim, Rng& rng, std::shared_ptr<Rng> dropout_rng,
             bool qkv_bias = true, real dropout = 0, real attn_dropout = 0,
             GeluApproximation gelu = GeluApproximation::None, real layer_norm_eps = 1e-6, real drop_path = 0);
    std::string type_name() const override { return "ViTBlock"; }

    // z [B, N+1, D] -> [B, N+1, D]. patch_mask: empty, or one entry per patch (true = visible),
    // see MultiHeadSelfAttention::forward.
    Tensor forward(const Tensor& z, const std::vector<bool>& patch_mask);
    Tensor forward(const Tensor& z) override { return forward(z, {}); }

    std::shared_ptr<LayerNorm> norm1;
    std::shared_ptr<MultiHeadSelfAttention> attn;
    std::shared_ptr<DropPath> drop_path1;
    std::shared_ptr<LayerNorm> norm2;
    std::shared_ptr<FeedForward> mlp;
    std::shared_ptr<DropPath> drop_path2;
};
// [/snippet:vit-block-class]

}  // namespace patchgrad
