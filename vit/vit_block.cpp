#include "patchgrad/vit/vit_block.h"

namespace patchgrad {

ViTBlock::ViTBlock(const BlockConfig& c, Rng& init, std::shared_ptr<Rng> dropout_rng)
    : norm1(register_module("norm1", std::make_shared<LayerNorm>(c.dim, c.layer_norm_eps))),
      attn(register_module("attn",
                           std::make_shared<MultiHeadSelfAttention>(c.dim, c.heads, init, dropout_rng, c.qkv_bias,
                                                                    c.attn_dropout, c.dropout, c.lsa))),
      drop_path1(register_module("drop_path1", std::make_shared<DropPath>(c.drop_path, dropout_rng))),
      norm2(register_module("norm2", std::make_shared<LayerNorm>(c.dim, c.layer_norm_eps))),
      mlp(register_module(
          "mlp", std::make_shared<FeedForward>(c.dim, c.mlp_hidden_dim, init, dropout_rng, c.dropout, c.gelu))),
      drop_path2(register_module("drop_path2", std::make_shared<DropPath>(c.drop_path, dropout_rng))) {}

// [snippet:block-forward]
Tensor ViTBlock::forward(const Tensor& z, const std::vector<bool>& patch_mask) {
    // [hide:vit-block-forward]
    if (fused && !drop_path1->active() && !drop_path2->active()) return forward_fused(z, patch_mask);
    // [/hide:vit-block-forward]
    // [exercise:vit-block-forward]
    Tensor z_prime = drop_path1->forward(attn->forward(norm1->forward(z), patch_mask)) + z;  // (2)
    return drop_path2->forward(mlp->forward(norm2->forward(z_prime))) + z_prime;             // (3)
    // [/exercise:vit-block-forward]
}
// [/snippet:block-forward]

// [hide:vit-block-forward]
// The add of each skip connection runs inside the product before it, and each LayerNorm inside
// the product after it: no passes of their own over [B, N, D], and dOut goes to z (and z') as
// it is, where the add would copy it for one side.
Tensor ViTBlock::forward_fused(const Tensor& z, const std::vector<bool>& patch_mask) {
    const Tensor z_prime = attn->forward_plus(z, z, patch_mask, norm1.get());  // (2)
    return mlp->forward_plus(z_prime, z_prime, norm2.get());                   // (3)
}
// [/hide:vit-block-forward]

}  // namespace patchgrad
