// vit_block.h — one Transformer encoder layer of the ViT (ViT from scratch §2-5-2), the
// paper's equations (2) and (3) with pre-norm residual connections:
//
//   z'_l = MSA(LN(z_{l-1})) + z_{l-1}        (2)
//   z_l  = MLP(LN(z'_l))    + z'_l           (3)
//
// While training, stochastic depth (drop_path1, drop_path2) may drop either branch for a
// whole sample, leaving only its residual path.
//
// This differs from ViT from scratch's ViTBlock.forward, whose MLP reads LN of the block's
// input instead of LN(z'_l): chapter 8 shows why, and tests/vit/test_vit_block.cpp
// ("[documents]") that the two differ.
//
// Children are named like timm's Block ("norm1", "attn", "norm2", "mlp"), so parameters read
// blocks.3.norm1.weight, blocks.3.attn.qkv.weight, blocks.3.mlp.fc1.weight, ...
#pragma once

#include <memory>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/attention.h"
#include "patchgrad/layers/drop_path.h"
#include "patchgrad/layers/feed_forward.h"
#include "patchgrad/layers/layer_norm.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

// [snippet:vit-block-class]
// The sizes and rates of one block (like llm.c's GPT2Config, one struct instead of a long
// argument list). ViTConfig::block(l) fills it in for block l of a model.
struct BlockConfig {
    int64_t dim = 768;              // D
    int64_t heads = 12;             // D must be divisible by heads
    int64_t mlp_hidden_dim = 3072;  // the MLP's hidden size
    bool qkv_bias = true;
    real dropout = 0;       // after the attention's output projection and inside the MLP (timm's proj_drop, drop1/2)
    real attn_dropout = 0;  // on the attention weights
    real drop_path = 0;     // stochastic depth of both residual branches (drop_path1/2)
    bool lsa = false;       // Locality Self-Attention: a learned scale per head, no self-attention (attention.h)
    GeluApproximation gelu = GeluApproximation::None;
    real layer_norm_eps = 1e-6;
};

class ViTBlock : public Module {
public:
    // Weights are drawn from `init`; the dropout and drop-path layers keep `dropout_rng`
    // (null is allowed when every rate is 0), see module.h.
    ViTBlock(const BlockConfig& config, Rng& init, std::shared_ptr<Rng> dropout_rng);
    std::string type_name() const override { return "ViTBlock"; }

    // z [B, N+1, D] -> [B, N+1, D]. patch_mask: empty, or one entry per patch (true = visible),
    // see MultiHeadSelfAttention::forward.
    Tensor forward(const Tensor& z, const std::vector<bool>& patch_mask = {});

    std::shared_ptr<LayerNorm> norm1;
    std::shared_ptr<MultiHeadSelfAttention> attn;
    std::shared_ptr<DropPath> drop_path1;
    std::shared_ptr<LayerNorm> norm2;
    std::shared_ptr<FeedForward> mlp;
    std::shared_ptr<DropPath> drop_path2;
    // While no drop path is active, forward adds each skip connection inside its branch's last
    // product, and computes the branch's LayerNorm inside its first, where that branch's fused op
    // runs with no dropout after it (forward_plus in attention.h and feed_forward.h): the same
    // bits with fewer passes over memory (chapter 12), unless this is false.
    bool fused = true;

private:
    Tensor forward_fused(const Tensor& z, const std::vector<bool>& patch_mask);
};
// [/snippet:vit-block-class]

}  // namespace patchgrad
