#include "patchgrad/vit/vision_transformer.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace patchgrad {

namespace {

// The paper's Table 1 at 224 x 224 and 1000 classes, as timm's vit_*_224 (the paper pre-trains at 224
// and fine-tunes at higher resolutions).
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

using NamedShapes = std::vector<std::pair<std::string, Shape>>;

// The parameters of a VisionTransformer in three short lists, whatever the depth: those
// before the blocks, those of one block (named inside "blocks.<l>."), and those after.
// Mirrors the constructor below; tests/vit/test_vision_transformer.cpp compares the two.
struct ParameterLayout {
    NamedShapes before, block, after;
};

ParameterLayout parameter_layout(const ViTConfig& c) {
    const int64_t D = c.dim, H = c.mlp_hidden(), K = c.num_classes;
    const int64_t tokens = checked_mul(c.patches_high(), c.patches_wide(), "patches (rows x columns)") + 1;
    const int64_t patch_dim = checked_mul(checked_mul(c.channels, c.patch_size, "patch size (channels x P x P)"),
                                          c.patch_size, "patch size (channels x P x P)");
    const int64_t qkv = checked_mul(3, D, "qkv size (3 x dim)");
    ParameterLayout p;
    p.before = {{"cls_token", {1, 1, D}}};
    if (c.learnable_pos_embed) p.before.push_back({"pos_embed", {1, tokens, D}});
    p.before.insert(p.before.end(), {{"patch_embed.proj.weight", {D, patch_dim}}, {"patch_embed.proj.bias", {D}}});
    p.block = {{"norm1.weight", {D}}, {"norm1.bias", {D}}};
    if (c.lsa) p.block.push_back({"attn.scale", {c.heads}});  // the attention's own, before its children's
    p.block.push_back({"attn.qkv.weight", {qkv, D}});
    if (c.qkv_bias) p.block.push_back({"attn.qkv.bias", {qkv}});
    p.block.insert(p.block.end(), {{"attn.proj.weight", {D, D}},
                                   {"attn.proj.bias", {D}},
                                   {"norm2.weight", {D}},
                                   {"norm2.bias", {D}},
                                   {"mlp.fc1.weight", {H, D}},
                                   {"mlp.fc1.bias", {H}},
                                   {"mlp.fc2.weight", {D, H}},
                                   {"mlp.fc2.bias", {D}}});
    if (c.pool == Pool::Seq) p.after = {{"attention_pool.weight", {1, D}}, {"attention_pool.bias", {1}}};
    p.after.insert(p.after.end(), {{"norm.weight", {D}}, {"norm.bias", {D}}});
    if (c.head == Head::Mlp)
        p.after.insert(p.after.end(), {{"pre_logits.fc.weight", {D, D}}, {"pre_logits.fc.bias", {D}}});
    p.after.insert(p.after.end(), {{"head.weight", {K, D}}, {"head.bias", {K}}});
    return p;
}

// The numbers the listed parameters hold.
int64_t numbers_in(const NamedShapes& shapes) {
    int64_t total = 0;
    for (const auto& [name, shape] : shapes) total = checked_add(total, shape_numel(shape), "parameters up to " + name);
    return total;
}

int64_t count_parameters(const ViTConfig& c) {
    const ParameterLayout p = parameter_layout(c);
    const int64_t blocks = checked_mul(c.depth, numbers_in(p.block), "parameters of the blocks (depth x per block)");
    return checked_add(checked_add(numbers_in(p.before), blocks, "parameters"), numbers_in(p.after), "parameters");
}

// Throws std::invalid_argument for the first count of the model (as it would be built and
// run on one image) that overflows int64_t.
void check_sizes(const ViTConfig& c) {
    const int64_t patches = checked_mul(c.patches_high(), c.patches_wide(), "patches (rows x columns)");
    // Bounds `patches` far below 2^63 before the token count (patches + 1) is formed.
    checked_mul(checked_mul(patches, patches, "attention weights (heads x tokens x tokens)"), c.heads,
                "attention weights (heads x tokens x tokens)");
    const int64_t tokens = patches + 1;
    checked_mul(checked_mul(c.heads, tokens, "attention weights (heads x tokens x tokens)"), tokens,
                "attention weights (heads x tokens x tokens)");
    checked_mul(tokens, std::max(c.mlp_hidden(), checked_mul(3, c.dim, "qkv size (3 x dim)")),
                "the largest activation (tokens x max(3 dim, MLP size))");
    count_parameters(c);
}

}  // namespace

void validate(const ViTConfig& c) {
    const std::string who = "ViTConfig '" + c.name + "': ";
    auto positive = [&](int64_t value, const char* what) {
        check(value > 0, who, what, " must be positive, got ", value);
    };
    positive(c.image_height, "image height");
    positive(c.image_width, "image width");
    positive(c.channels, "channels");
    positive(c.patch_size, "patch size");
    positive(c.dim, "dim");
    positive(c.depth, "depth");
    positive(c.heads, "heads");
    positive(c.num_classes, "num_classes");
    check(c.mlp_dim >= 0, who, "mlp_dim must be positive (or 0 to use mlp_ratio), got ", c.mlp_dim);
    check(c.mlp_dim != 0 || c.mlp_ratio > 0, who, "mlp_ratio must be positive when mlp_dim is 0, got ", c.mlp_ratio);
    check(c.image_height % c.patch_size == 0 && c.image_width % c.patch_size == 0, who, "image size ", c.image_height,
          "x", c.image_width, " is not divisible by the patch size ", c.patch_size);
    check(c.dim % c.heads == 0, who, "dim ", c.dim, " is not divisible by heads ", c.heads);
    for (auto [p, what] : {std::pair<real, const char*>{c.dropout, "dropout"},
                           {c.emb_dropout, "emb_dropout"},
                           {c.attn_dropout, "attn_dropout"},
                           {c.drop_path, "drop_path"},
                           {c.patch_dropout, "patch_dropout"}})
        check(p >= 0 && p < 1, who, what, " must be in [0, 1), got ", p);
    // mlp_hidden() converts dim * mlp_ratio to an integer, which must not overflow.
    check(c.mlp_dim != 0 || double(c.dim) * c.mlp_ratio < 0x1p62, who, "the MLP size dim ", c.dim, " x mlp_ratio ",
          c.mlp_ratio, " is more than a 64-bit integer holds");
    // Every count the model multiplies out must fit int64_t: wrapped around, a size of 2^64
    // patches reads as 0 and the model as tiny (ViT from scratch's sizes never get near this,
    // but a flag or a checkpoint's metadata can ask for anything).
    try {
        check_sizes(c);
    } catch (const std::invalid_argument& e) {
        fail(who, e.what());
    }
}

void for_each_parameter(const ViTConfig& config, const std::function<void(const std::string&, const Shape&)>& f) {
    validate(config);
    const ParameterLayout p = parameter_layout(config);
    for (const auto& [name, shape] : p.before) f(name, shape);
    for (int64_t l = 0; l < config.depth; ++l)
        for (const auto& [name, shape] : p.block) f("blocks." + std::to_string(l) + "." + name, shape);
    for (const auto& [name, shape] : p.after) f(name, shape);
}

int64_t parameter_count(const ViTConfig& config) {
    validate(config);
    return count_parameters(config);
}

void check_memory(const ViTConfig& config, int64_t copies) {
    const int64_t parameters = parameter_count(config);  // validates the config, whatever the machine
    const int64_t machine = physical_memory_bytes();
    if (machine == 0) return;  // the system does not say: nothing to compare with
    const double needed = double(parameters) * double(copies) * sizeof(real);
    if (needed > double(machine))
        fail("ViTConfig '", config.name, "' (dim ", config.dim, ", depth ", config.depth, ", MLP ", config.mlp_hidden(),
             "): ", parameters, " parameters", copies > 1 ? " x " + std::to_string(copies) + " copies" : "", " need ",
             format_bytes(needed), ", more than this machine's ", format_bytes(double(machine)), " of memory");
}

BlockConfig ViTConfig::block(int64_t l) const {
    BlockConfig b;
    b.dim = dim;
    b.heads = heads;
    b.mlp_hidden_dim = mlp_hidden();
    b.qkv_bias = qkv_bias;
    b.lsa = lsa;
    b.dropout = dropout;
    b.attn_dropout = attn_dropout;
    // Stochastic depth grows linearly with depth, from 0 at the first block to drop_path at the
    // last (timm's dpr). A single block gets drop_path itself: timm's linspace would give it 0,
    // and the flag would do nothing.
    b.drop_path = depth > 1 ? drop_path * real(l) / real(depth - 1) : drop_path;
    b.gelu = gelu;
    b.layer_norm_eps = layer_norm_eps;
    return b;
}

std::vector<std::string> vit_config_names() {
    return {"vit-b16", "vit-b32", "vit-l16", "vit-h14", "cifar-micro", "cifar-tiny", "cifar-small"};
}

std::string describe(const ViTConfig& c) {
    std::ostringstream os;
    os << c.name << ": " << c.image_height << "x" << c.image_width << " images, " << c.channels << " channels, patch "
       << c.patch_size << " (" << c.num_patches() << " patches), dim " << c.dim << ", depth " << c.depth << ", heads "
       << c.heads << ", MLP " << c.mlp_hidden() << ", " << c.num_classes << " classes, pool " << enum_name(c.pool)
       << ", head " << enum_name(c.head) << (c.lsa ? ", LSA" : "");
    return os.str();
}

// [snippet:named-configs]
ViTConfig vit_config(const std::string& name) {
    if (name == "vit-b16") return paper_config(name, 16, 768, 12, 12, 3072);
    if (name == "vit-b32") return paper_config(name, 32, 768, 12, 12, 3072);
    if (name == "vit-l16") return paper_config(name, 16, 1024, 24, 16, 4096);
    if (name == "vit-h14") return paper_config(name, 14, 1280, 32, 16, 5120);
    if (name == "cifar-micro") return cifar_config(name, 96, 4, 4, 192);
    if (name == "cifar-tiny") return cifar_config(name, 128, 6, 4, 256);
    if (name == "cifar-small") return cifar_config(name, 192, 6, 3, 384);
    std::string known;
    for (const std::string& n : vit_config_names()) known += (known.empty() ? "" : ", ") + n;
    fail("vit_config: unknown configuration '", name, "' (known: ", known, ")");
}
// [/snippet:named-configs]

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

PreLogits::PreLogits(int64_t dim, int64_t hidden_dim, Rng& init)
    : fc(register_module("fc", std::make_shared<Linear>(dim, hidden_dim, init))),
      act(register_module("act", std::make_shared<Tanh>())) {}

Tensor PreLogits::forward(const Tensor& x) { return act->forward(fc->forward(x)); }

namespace {
const ViTConfig& validated(const ViTConfig& config) {
    check_memory(config, 1);  // validates it first
    return config;
}
}  // namespace

// [snippet:vit-constructor]
VisionTransformer::VisionTransformer(const ViTConfig& cfg, uint64_t seed) : config(validated(cfg)) {
    Rng rng(seed);
    dropout_rng = std::make_shared<Rng>(rng.next_u64());
    const int64_t D = config.dim;

    cls_token = register_parameter("cls_token", Tensor::trunc_normal({1, 1, D}, 0, 0.02, -2, 2, rng));
    pos_encoding = std::make_shared<PositionalEncoding>(config.num_patches() + 1, D, config.learnable_pos_embed, rng);
    if (pos_encoding->learnable) register_parameter("pos_embed", pos_encoding->table);
    patch_embed =
        register_module("patch_embed", std::make_shared<PatchEmbedding>(config.channels, config.patch_size, D, rng));
    pos_drop = register_module("pos_drop", std::make_shared<Dropout>(config.emb_dropout, dropout_rng));
    if (config.patch_dropout > 0)
        patch_drop =
            register_module("patch_drop", std::make_shared<PatchDropout>(config.patch_dropout, 1, dropout_rng));
    blocks = register_module("blocks", std::make_shared<TransformerEncoder>());
    for (int64_t l = 0; l < config.depth; ++l)
        blocks->add(std::make_shared<ViTBlock>(config.block(l), rng, dropout_rng));
    if (config.pool == Pool::Seq)
        attention_pool = register_module("attention_pool", std::make_shared<Linear>(D, 1, rng));
    norm = register_module("norm", std::make_shared<LayerNorm>(D, config.layer_norm_eps));
    if (config.head == Head::Mlp) pre_logits = register_module("pre_logits", std::make_shared<PreLogits>(D, D, rng));
    head = register_module("head", std::make_shared<Linear>(D, config.num_classes, rng));
}
// [/snippet:vit-constructor]

void VisionTransformer::check_input(const Tensor& images, const std::vector<bool>& patch_mask) const {
    const std::string want = "[B, " + std::to_string(config.channels) + ", " + std::to_string(config.image_height) +
                             ", " + std::to_string(config.image_width) + "]";
    const Shape& s = images.shape();
    check(s.size() == 4 && s[0] > 0, "VisionTransformer: expected images ", want, ", got shape ", s);
    check(s[1] == config.channels, "VisionTransformer: expected ", config.channels, " channels (images ", want,
          "), got shape ", s);
    check(s[2] == config.image_height && s[3] == config.image_width, "VisionTransformer: expected image size ",
          config.image_height, "x", config.image_width, " (images ", want, "), got shape ", s);
    const int64_t N = config.num_patches();
    check(patch_mask.empty() || static_cast<int64_t>(patch_mask.size()) == N, "VisionTransformer: patch mask has ",
          patch_mask.size(), " entries, expected one per patch: ", N, " (", config.patches_high(), "x",
          config.patches_wide(), " patches of ", config.patch_size, "x", config.patch_size, ")");
    check(patch_mask.empty() || !patch_drop || !training(), "VisionTransformer: a patch mask and patch dropout (",
          config.patch_dropout,
          ") in training: the dropped tokens would not match the mask (use eval mode, or no mask)");
}

// [snippet:vit-forward]
Tensor VisionTransformer::forward(const Tensor& images, const std::vector<bool>& patch_mask) {
    check_input(images, patch_mask);
    // After the blocks: pooling, then LN. For "cls" this is eq. (4), y = LN(z_L^0) (timm
    // normalises every token and then picks token 0, which is the same since LN acts on each
    // token alone). "mean" averages all N+1 tokens, the class token included, like the ViT study
    // notes' formula and lucidrains' x.mean(dim=1) (timm's global_pool="avg" leaves the class
    // token out), and normalises the mean, like the heads of Visual Transformer in CV and the
    // ViT notebook and timm's fc_norm. "seq" scores each token with a Linear D -> 1, turns the
    // scores into weights that sum to 1 with a softmax over the tokens, and takes the weighted
    // mean: mean pooling whose weights are learned, per image (Compact Transformers).
    // [exercise:vit-pooling]
    const int64_t B = images.size(0), D = config.dim;
    Tensor x = patch_embed->forward(images);                 // [B, N, D]: x_p^i E
    x = concat({broadcast_to(cls_token, {B, 1, D}), x}, 1);  // [B, N+1, D]: [x_class; x_p^1 E; ...]
    x = pos_drop->forward(pos_encoding->forward(x));         // z_0, eq. (1)
    if (patch_drop) x = patch_drop->forward(x);              // training: [B, 1+K, D]
    x = blocks->forward(x, patch_mask);                      // z_L, eqs. (2) and (3)
    if (config.pool == Pool::Seq) {
        const Tensor weights = softmax(attention_pool->forward(x), 1);  // [B, T, 1], each column sums to 1
        x = reshape(matmul(transpose(weights, 1, 2), x), {B, D});       // [B, 1, T] @ [B, T, D] -> [B, D]
    } else {
        x = config.pool == Pool::Mean ? mean(x, 1) : select(x, 1, 0);  // [B, D]
    }
    x = norm->forward(x);
    if (pre_logits) x = pre_logits->forward(x);
    return head->forward(x);  // [B, num_classes]
    // [/exercise:vit-pooling]
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
