#include "vit/vit_block.h"

namespace patchgrad {

ViTBlock::ViTBlock(int64_t dim, int64_t heads, int64_t mlp_hidden_dim, Rng& rng, std::shared_ptr<Rng> dropout_rng,
                   bool qkv_bias, real dropout, real attn_dropout, GeluApproximation gelu, real layer_norm_eps,
                   real drop_path)
    : norm1(register_module("norm1", std::make_shared<LayerNorm>(dim, layer_norm_eps))),
      attn(register_module("attn", std::make_shared<MultiHeadSelfAttention>(dim, heads, rng, dropout_rng, qkv_bias,
                                                                            attn_dropout, dropout))),
      drop_path1(register_module("drop_path1", std::make_shared<DropPath>(drop_path, dropout_rng))),
      norm2(register_module("norm2", std::make_shared<LayerNorm>(dim, layer_norm_eps))),
      mlp(register_module("mlp", std::make_shared<FeedForward>(dim, mlp_hidden_dim, dropout, rng, dropout_rng, gelu))),
      drop_path2(register_module("drop_path2", std::make_shared<DropPath>(drop_path, dropout_rng))) {}

// [snippet:block-forward]
Tensor ViTBlock::forward(const Tensor& z, const std::vector<bool>& patch_mask) {
    // [exercise:vit-block-forward]
    Tensor z_prime = drop_path1->forward(attn->forward(norm1->forward(z), patch_mask)) + z;  // (2)
    return drop_path2->forward(mlp->forward(norm2->forward(z_prime))) + z_prime;             // (3)
    // [/exercise:vit-block-forward]
}
// [/snippet:block-forward]

}  // namespace patchgrad
