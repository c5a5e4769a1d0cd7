#include "vit/vision_transformer.h"

#include <sstream>
#include <stdexcept>

namespace patchgrad {

namespace {

std::string size_str(int64_t h, int64_t w) { return std::to_string(h) + "x" + std::to_string(w); }

// The paper's Table 1 at the resolution and label count of ImageNet fine-tuning.
ViTConfig paper_config(const std::string& name, int64_t patch_size, int64_t dim, int64_t depth, int64_t heads,
                       int64_t mlp_dim) {
    ViTConfig c;
    c.name = name;
    c.image_height = c.image_width = 224;
    c.patch_size = patch_size;
    c.dim = dim;
    c.depth = depth;
    c.heads = heads;
    c.mlp_dim = mlp_dim;
    c.num_classes = 1000;
    return c;
}

ViTConfig cifar_config(const std::string& name, int64_t dim, int64_t depth, int64_t heads, int64_t mlp_dim) {
    ViTConfig c = paper_config(name, 4, dim, depth, heads, mlp_dim);
    c.image_height = c.image_width = 32;
    c.num_classes = 10;
    return c;
}

}  // namespace

void validate(const ViTConfig& c) {
    const std::string who = "ViTConfig '" + c.name + "': ";
    auto positive = [&](int64_t value, const char* what) {
        if (value <= 0) throw std::invalid_argument(who + what + " must be positive, got " + std::to_string(value));
    };
    positive(c.image_height, "image height");
    positive(c.image_width, "image width");
    positive(c.channels, "channels");
    positive(c.patch_size, "patch size");
    positive(c.dim, "dim");
    positive(c.depth, "depth");
    positive(c.heads, "heads");
    positive(c.num_classes, "num_classes");
    if (c.mlp_dim < 0) throw std::invalid_argument(who + "mlp_dim must be positive (or 0 to use mlp_ratio), got " +
                                                   std::to_string(c.mlp_dim));
    if (c.mlp_dim == 0 && !(c.mlp_ratio > 0))
        throw std::invalid_argument(who + "mlp_ratio must be positive when mlp_dim is 0, got " +
                                    std::to_string(c.mlp_ratio));
    if (c.image_height % c.patch_size != 0 || c.image_width % c.patch_size != 0)
        throw std::invalid_argument(who + "image size " + size_str(c.image_height, c.image_width) +
                                    " is not divisible by the patch size " + std::to_string(c.patch_size));
    if (c.dim % c.heads != 0)
        throw std::invalid_argument(who + "dim " + std::to_string(c.dim) + " is not divisible by heads " +
                                    std::to_string(c.heads));
    for (auto [p, what] : {std::pair<real, const char*>{c.dropout, "dropout"},
                           {c.emb_dropout, "emb_dropout"},
                           {c.attn_dropout, "attn_dropout"},
                           {c.drop_path, "drop_path"}})
        if (!(p >= 0 && p < 1)) throw std::invalid_argument(who + what + " must be in [0, 1), got " + std::to_string(p));
    if (c.pool != "cls" && c.pool != "mean")
        throw std::invalid_argument(who + "pool must be \"cls\" or \"mean\", got \"" + c.pool + "\"");
    if (c.head != "linear" && c.head != "mlp")
        throw std::invalid_argument(who + "head must be \"linear\" or \"mlp\", got \"" + c.head + "\"");
}

std::vector<std::string> vit_config_names() {
    return {"vit-b16", "vit-b32", "vit-l16", "vit-h14", "cifar-micro", "cifar-tiny", "cifar-small"};
}

std::string describe(const ViTConfig& c) {
    std::ostringstream os;
    os << c.name << ": " << c.image_height << "x" << c.image_width << " images, " << c.channels << " channels, patch "
       << c.patch_size << " (" << c.num_patches() << " patches), dim " << c.dim << ", depth " << c.depth << ", heads "
       << c.heads << ", MLP " << c.mlp_hidden() << ", " << c.num_classes << " classes, pool " << c.pool << ", head "
       << c.head;
    return os.str();
}

ViTConfig vit_config(const std::string& name) {
    // [snippet:named-configs]
    if (name == "vit-b16") return paper_config(name, 16, 768, 12, 12, 3072);
    if (name == "vit-b32") return paper_config(name, 32, 768, 12, 12, 3072);
    if (name == "vit-l16") return paper_config(name, 16, 1024, 24, 16, 4096);
    if (name == "vit-h14") return paper_config(name, 14, 1280, 32, 16, 5120);
    if (name == "cifar-micro") return cifar_config(name, 96, 4, 4, 192);
    if (name == "cifar-tiny") return cifar_config(name, 128, 6, 4, 256);
    if (name == "cifar-small") return cifar_config(name, 192, 6, 3, 384);
    // [/snippet:named-configs]
    std::string known;
    for (const std::string& n : vit_config_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("vit_config: unknown configuration '" + name + "' (known: " + known + ")");
}

void TransformerEncoder::add(std::shared_ptr<ViTBlock> block) {
    layers.push_back(register_module(std::to_string(layers.size()), std::move(block)));
}

// [snippet:encoder-forward]
Tensor TransformerEncoder::forward(const Tensor& z, const std::vector<bool>& patch_mask) {
    Tensor out = z;
    for (auto& block : layers) out = block->forward(out, patch_mask);
    return out;
}
// [/snippet:encoder-forward]

PreLogits::PreLogits(int64_t dim, int64_t hidden_dim, Rng& rng)
    : fc(register_module("fc", std::make_shared<Linear>(dim, hidden_dim, rng))),
      act(register_module("act", std::make_shared<Tanh>())) {}

Tensor PreLogits::forward(const Tensor& x) { return act->forward(fc->forward(x)); }

namespace {
const ViTConfig& validated(const ViTConfig& config) {
    validate(config);
    return config;
}
}  // namespace

// [snippet:vit-constructor]
VisionTransformer::VisionTransformer(const ViTConfig& cfg, uint64_t seed) : config(validated(cfg)) {
    Rng rng(seed);
    dropout_rng = std::make_shared<Rng>(rng.next_u64());
    const int64_t D = config.dim;

    cls_token = register_parameter("cls_token", Tensor::trunc_normal({1, 1, D}, 0, 0.02, -2, 2, rng));
    pos_encoding = PositionalEncoding(config.num_patches() + 1, D, config.learnable_pos_embed, rng);
    if (pos_encoding.learnable) register_parameter("pos_embed", pos_encoding.table);
    patch_embed = register_module("patch_embed", std::make_shared<PatchEmbedding>(config.channels, config.patch_size, D, rng));
    pos_drop = register_module("pos_drop", std::make_shared<Dropout>(config.emb_dropout, dropout_rng));
    blocks = register_module("blocks", std::make_shared<TransformerEncoder>());
    for (int64_t l = 0; l < config.depth; ++l) {
        // Stochastic depth grows linearly with depth, 0 for the first block (timm's dpr).
        const real drop_path = config.depth > 1 ? config.drop_path * real(l) / real(config.depth - 1) : config.drop_path;
        blocks->add(std::make_shared<ViTBlock>(D, config.heads, config.mlp_hidden(), rng, dropout_rng, config.qkv_bias,
                                               config.dropout, config.attn_dropout, config.gelu,
                                               config.layer_norm_eps, drop_path));
    }
    norm = register_module("norm", std::make_shared<LayerNorm>(D, config.layer_norm_eps));
    if (config.head == "mlp") pre_logits = register_module("pre_logits", std::make_shared<PreLogits>(D, D, rng));
    head = register_module("head", std::make_shared<Linear>(D, config.num_classes, rng));
}
// [/snippet:vit-constructor]

void VisionTransformer::check_input(const Tensor& images, const std::vector<bool>& patch_mask) const {
    const std::string want = "[B, " + std::to_string(config.channels) + ", " + std::to_string(config.image_height) +
                             ", " + std::to_string(config.image_width) + "]";
    const Shape& s = images.shape();
    if (s.size() != 4 || s[0] <= 0)
        throw std::invalid_argument("VisionTransformer: expected images " + want + ", got shape " + shape_str(s));
    if (s[1] != config.channels)
        throw std::invalid_argument("VisionTransformer: expected " + std::to_string(config.channels) +
                                    " channels (images " + want + "), got shape " + shape_str(s));
    if (s[2] != config.image_height || s[3] != config.image_width)
        throw std::invalid_argument("VisionTransformer: expected image size " +
                                    size_str(config.image_height, config.image_width) + " (images " + want +
                                    "), got shape " + shape_str(s));
    const int64_t N = config.num_patches();
    if (!patch_mask.empty() && static_cast<int64_t>(patch_mask.size()) != N)
        throw std::invalid_argument("VisionTransformer: patch mask has " + std::to_string(patch_mask.size()) +
                                    " entries, expected one per patch: " + std::to_string(N) + " (" +
                                    size_str(config.patches_high(), config.patches_wide()) + " patches of " +
                                    size_str(config.patch_size, config.patch_size) + ")");
}

// [snippet:vit-forward]
Tensor VisionTransformer::forward(const Tensor& images, const std::vector<bool>& patch_mask) {
    check_input(images, patch_mask);
    const int64_t B = images.size(0), D = config.dim;
    Tensor x = patch_embed->forward(images);                 // [B, N, D]: x_p^i E
    x = concat({broadcast_to(cls_token, {B, 1, D}), x}, 1);  // [B, N+1, D]: [x_class; x_p^1 E; ...]
    x = pos_drop->forward(pos_encoding.forward(x));          // z_0, eq. (1)
    x = blocks->forward(x, patch_mask);                      // z_L, eqs. (2) and (3)
    // Pooling, then LN: for "cls" this is eq. (4), y = LN(z_L^0) (timm normalises every token
    // and then picks token 0, which is the same since LN acts on each token alone). "mean"
    // averages all N+1 tokens, the class token included, like seed 001's formula and
    // lucidrains' x.mean(dim=1) (timm's global_pool="avg" leaves the class token out), and
    // normalises the mean, like seeds 002/003's heads and timm's fc_norm.
    // [exercise:vit-pooling]
    x = config.pool == "mean" ? mean(x, 1) : select(x, 1, 0);  // [B, D]
    // [/exercise:vit-pooling]
    x = norm->forward(x);
    if (pre_logits) x = pre_logits->forward(x);
    return head->forward(x);  // [B, num_classes]
}
// [/snippet:vit-forward]

void VisionTransformer::record_attention(bool on) {
    for (auto& block : blocks->layers) block->attn->record_attention(on);
}

std::vector<Tensor> VisionTransformer::attention_maps() const {
    std::vector<Tensor> maps;
    for (const auto& block : blocks->layers) maps.push_back(block->attn->attention());
    return maps;
}

}  // namespace patchgrad
