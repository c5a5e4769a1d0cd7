// vision_transformer.h — the whole ViT (ViT from scratch §2-3 to §2-8), the paper's eqs.
// (1)-(4):
//
//   z_0  = [x_class; x_p^1 E; ...; x_p^N E] + E_pos      (1)  patch_embed, cls_token, pos_embed
//   z'_l = MSA(LN(z_{l-1})) + z_{l-1}                    (2)  blocks.l (vit_block.h)
//   z_l  = MLP(LN(z'_l)) + z'_l                          (3)
//   y    = LN(z_L^0)                                     (4)  norm
//   logits = head(y)
//
// Parameter names, shapes and order are timm's VisionTransformer, so a timm state_dict of a
// class-token model maps one to one (only patch_embed.proj.weight needs a reshape, see
// patch_embedding.h; timm's mean pooling leaves the class token out of the mean and names the
// final LayerNorm fc_norm, README "The Vision Transformer"):
//   cls_token [1, 1, D], pos_embed [1, N+1, D], patch_embed.proj.{weight [D, C*P*P], bias},
//   blocks.{l}.norm1, blocks.{l}.attn.qkv [3D, D], blocks.{l}.attn.proj, blocks.{l}.norm2,
//   blocks.{l}.mlp.fc1 [hidden, D], blocks.{l}.mlp.fc2, [attention_pool [1, D] (seq pooling,
//   named like Compact Transformers')], norm, [pre_logits.fc], head [K, D].
//
// It differs on purpose from ViT from scratch's VisionTransformer: an integer patch count
// (non-square images allowed), the LayerNorm of eq. (4), cls_token drawn like timm's, learned
// positions by default, a tanh pre-training head and ViT-H's MLP size 5120. Chapter 9 says why.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "patchgrad/autograd/enum_names.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/activation.h"
#include "patchgrad/layers/dropout.h"
#include "patchgrad/layers/feed_forward.h"
#include "patchgrad/layers/layer_norm.h"
#include "patchgrad/layers/linear.h"
#include "patchgrad/layers/module.h"
#include "patchgrad/layers/patch_dropout.h"
#include "patchgrad/vit/patch_embedding.h"
#include "patchgrad/vit/positional_encoding.h"
#include "patchgrad/vit/vit_block.h"

namespace patchgrad {

// [snippet:vit-config]
// How the tokens z_L become one vector per image, and what maps that vector to the logits.
// Checkpoints, describe() and error messages spell them "cls"/"mean"/"seq" and "linear"/"mlp".
enum class Pool {
    Cls,   // "cls": the class token z_L^0 (paper eq. 4)
    Mean,  // "mean": the mean of all N+1 tokens (ViT study notes)
    Seq,   // "seq": a learned weighted mean of the tokens, softmax(z_L w + b)^T z_L (Hassani et al.
           // 2021, Compact Transformers' sequence pooling). Compact Transformers apply the final
           // LayerNorm to the tokens before pooling; here it follows the pooling, as for cls and
           // mean, so their attention_pool weights score other inputs than ours.
};
enum class Head {
    Linear,  // "linear": one Linear D -> K, the fine-tuning head
    Mlp,     // "mlp": the pre-training head, a tanh hidden layer (PreLogits) and then that Linear
};

struct ViTConfig {
    std::string name = "custom";
    int64_t image_height = 224, image_width = 224;  // non-square allowed
    int64_t channels = 3;
    int64_t patch_size = 16;
    int64_t dim = 768;   // D, the hidden size
    int64_t depth = 12;  // L, the number of ViTBlocks
    int64_t heads = 12;
    int64_t mlp_dim = 0;   // the MLP's hidden size; 0 = dim * mlp_ratio
    double mlp_ratio = 4;  // a double, as in timm (mlp_hidden_dim says why)
    int64_t num_classes = 1000;
    Pool pool = Pool::Cls;
    Head head = Head::Linear;
    real dropout = 0;        // after the attention projection and inside the MLP
    real emb_dropout = 0;    // on z_0 (timm's pos_drop)
    real attn_dropout = 0;   // on the attention weights
    real drop_path = 0;      // stochastic depth of the last block; block l gets drop_path * l / (depth - 1)
    real patch_dropout = 0;  // training only: the fraction of patch tokens each image drops (PatchDropout)
    bool qkv_bias = true;
    bool lsa = false;                 // Locality Self-Attention in every block (layers/attention.h)
    bool learnable_pos_embed = true;  // false: fixed sinusoidal (ViT from scratch)
    GeluApproximation gelu = GeluApproximation::None;
    real layer_norm_eps = 1e-6;  // timm's ViT uses 1e-6 (PyTorch's LayerNorm default is 1e-5)

    int64_t patches_high() const { return image_height / patch_size; }
    int64_t patches_wide() const { return image_width / patch_size; }
    int64_t num_patches() const { return patches_high() * patches_wide(); }  // N
    int64_t mlp_hidden() const { return mlp_hidden_dim(dim, mlp_dim, mlp_ratio); }
    BlockConfig block(int64_t l) const;  // block l's sizes and rates, its drop path grown linearly
};
// [/snippet:vit-config]

// Their names (autograd/enum_names.h: enum_name, parse_enum).
template <>
struct EnumNames<Pool> {
    static constexpr std::pair<Pool, const char*> table[] = {
        {Pool::Cls, "cls"}, {Pool::Mean, "mean"}, {Pool::Seq, "seq"}};
};
template <>
struct EnumNames<Head> {
    static constexpr std::pair<Head, const char*> table[] = {{Head::Linear, "linear"}, {Head::Mlp, "mlp"}};
};

// Throws std::invalid_argument ("ViTConfig '<name>': ...") naming the offending sizes if a
// size is not positive, the image is not divisible into patches, dim is not divisible by
// heads, a dropout is outside [0, 1), or a count the model multiplies out (patches, one
// image's attention weights, a parameter's elements, the total) is more than a 64-bit
// integer holds.
void validate(const ViTConfig& config);

// Calls f(name, shape) for every parameter VisionTransformer(config) registers, in the order
// of its named_parameters(), from the sizes alone: no weight is allocated. One at a time, so
// a caller comparing them with a file stops at the first difference even when the config
// asks for millions of blocks. Validates the config first.
void for_each_parameter(const ViTConfig& config, const std::function<void(const std::string&, const Shape&)>& f);
// How many numbers those parameters hold, without visiting the blocks one by one (instant
// for any depth). Validates the config first.
int64_t parameter_count(const ViTConfig& config);
// Throws std::invalid_argument naming the config and both sizes when `copies` copies of its
// parameters need more memory than the machine has (1: the weights alone; 4 to train with
// AdamW: weights, gradients and two moments). The constructor checks 1 copy, so an
// impossible model is refused at once instead of allocating until the system gives up.
void check_memory(const ViTConfig& config, int64_t copies);
// One line for headers of printed output: "cifar-tiny: 32x32 images, 3 channels, patch 4
// (64 patches), dim 128, depth 6, heads 4, MLP 256, 10 classes, pool cls, head linear".
std::string describe(const ViTConfig& config);

// The named configurations:
//   vit-b16, vit-b32, vit-l16, vit-h14   the paper's Table 1 at 224x224, 1000 classes
//   cifar-micro                          32x32, patch 4, dim 96, depth 4, heads 4, MLP 192
//   cifar-tiny                           32x32, patch 4, dim 128, depth 6, heads 4, MLP 256
//   cifar-small                          32x32, patch 4, dim 192, depth 6, heads 3, MLP 384
// cifar-tiny is what `patchgrad train` trains by default, cifar-micro what its quick preset
// trains. Throws listing the known names for any other name.
ViTConfig vit_config(const std::string& name);
std::vector<std::string> vit_config_names();

// The encoder: L ViTBlocks applied in turn, z_l = block_l(z_{l-1}) (ViT from scratch's
// nn.ModuleList `layers`, timm's `blocks`). Children are named "0".."L-1": blocks.3.attn.qkv.weight.
class TransformerEncoder : public Module {
public:
    std::string type_name() const override { return "TransformerEncoder"; }
    void add(std::shared_ptr<ViTBlock> block);
    // z_0 [B, N+1, D] -> z_L [B, N+1, D]; the mask goes to every block.
    Tensor forward(const Tensor& z, const std::vector<bool>& patch_mask = {});

    std::vector<std::shared_ptr<ViTBlock>> layers;
};

// The pre-training head's hidden layer, "an MLP with one hidden layer" (paper §3.1): Linear
// then tanh, named like timm's pre_logits (fc, act) for the ImageNet-21k checkpoints, whose
// hidden size (representation_size) is D. (ViT from scratch's is_pretrain head has no
// nonlinearity between its layers: chapter 9, section 6.)
// [snippet:pre-logits]
class PreLogits : public Layer {
public:
    PreLogits(int64_t dim, int64_t hidden_dim, Rng& init);
    std::string type_name() const override { return "PreLogits"; }
    Tensor forward(const Tensor& x) override;  // [B, dim] -> [B, hidden_dim]

    std::shared_ptr<Linear> fc;
    std::shared_ptr<Tanh> act;
};
// [/snippet:pre-logits]

class VisionTransformer : public Module {
public:
    // Validates `config`, refuses a model whose weights alone exceed the machine's memory
    // (check_memory), and initialises every weight from `seed` (timm's 2020 scheme: Linear and
    // cls_token/pos_embed trunc_normal std 0.02, biases 0, LayerNorm 1 and 0). Dropout masks
    // come from a generator of the model's own, also seeded from `seed`.
    VisionTransformer(const ViTConfig& config, uint64_t seed);
    std::string type_name() const override { return "VisionTransformer"; }

    // images [B, C, H, W] -> logits [B, num_classes]. patch_mask: empty, or one entry per
    // patch (true = visible); hidden patches cannot be attended to (the ViT notebook's mask).
    // Mean pooling still averages every token. In training, a config with patch_dropout
    // drops patch tokens after the position encoding (layers/patch_dropout.h); a patch mask
    // is then refused, since the two would disagree about which patches are there.
    Tensor forward(const Tensor& images, const std::vector<bool>& patch_mask = {});

    // While on, every block's attention keeps its weights A [B, heads, N+1, N+1] of the last
    // forward; attention_maps() returns them, one per block (undefined before a forward).
    void record_attention(bool on);
    std::vector<Tensor> attention_maps() const;

    const ViTConfig config;
    std::shared_ptr<Rng> dropout_rng;

    Tensor cls_token;  // x_class [1, 1, D]
    // E_pos: a member, not a named child, so that its table is the top-level parameter
    // "pos_embed" (registered by the constructor) when learnable, as in timm.
    std::shared_ptr<PositionalEncoding> pos_encoding;
    std::shared_ptr<PatchEmbedding> patch_embed;
    std::shared_ptr<Dropout> pos_drop;
    std::shared_ptr<PatchDropout> patch_drop;  // null when config.patch_dropout is 0
    std::shared_ptr<TransformerEncoder> blocks;
    std::shared_ptr<Linear> attention_pool;  // "seq" pooling's token scores, D -> 1; else null
    std::shared_ptr<LayerNorm> norm;
    std::shared_ptr<PreLogits> pre_logits;  // null for the linear head
    std::shared_ptr<Linear> head;

private:
    void check_input(const Tensor& images, const std::vector<bool>& patch_mask) const;
};

}  // namespace patchgrad
