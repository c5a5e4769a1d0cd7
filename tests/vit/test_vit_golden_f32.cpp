// Golden values from PyTorch: patchgrad's VisionTransformer in float32 against an
// independent timm-style ViT in PyTorch (vit/scripts/make_golden.py, whose header describes
// the files). Each file holds the config (metadata), the weights under timm's names, a
// batch of images and labels, and PyTorch's logits, loss and d loss / d parameter, computed
// in float64 and stored as float32.
//
// The tolerances: logits and loss to 1e-5 relative, every parameter gradient to 1e-4
// relative, measured per tensor as max |ours - golden| / max |golden| (relative to the
// tensor's scale, so an element that happens to be near zero does not demand more than
// float32 can give).
#include <cmath>
#include <string>

#include "catch.h"
#include "patchgrad/autograd/io/safetensors.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/layers/state_dict.h"
#include "patchgrad/vit/vision_transformer.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

std::string golden_path(const std::string& name) { return std::string(PATCHGRAD_TEST_DATA) + "/" + name; }

int64_t meta_int(const NamedTensors& g, const std::string& key) { return std::stoll(g.metadata.at(key)); }
bool meta_bool(const NamedTensors& g, const std::string& key) {
    const std::string& v = g.metadata.at(key);
    REQUIRE((v == "true" || v == "false"));
    return v == "true";
}

ViTConfig config_from_metadata(const NamedTensors& g) {
    ViTConfig c;
    c.name = "golden";
    c.image_height = meta_int(g, "image_height");
    c.image_width = meta_int(g, "image_width");
    c.channels = meta_int(g, "channels");
    c.patch_size = meta_int(g, "patch_size");
    c.dim = meta_int(g, "dim");
    c.depth = meta_int(g, "depth");
    c.heads = meta_int(g, "heads");
    c.mlp_dim = meta_int(g, "mlp_dim");
    c.num_classes = meta_int(g, "num_classes");
    c.pool = parse_enum<Pool>(g.metadata.at("pool"), "golden pool");
    c.head = parse_enum<Head>(g.metadata.at("head"), "golden head");
    c.qkv_bias = meta_bool(g, "qkv_bias");
    c.lsa = g.metadata.count("lsa") > 0 && meta_bool(g, "lsa");  // the files before LSA lack the key
    c.learnable_pos_embed = meta_bool(g, "learnable_pos_embed");
    c.layer_norm_eps = static_cast<real>(std::stod(g.metadata.at("layer_norm_eps")));
    const std::string& gelu = g.metadata.at("gelu");
    REQUIRE((gelu == "none" || gelu == "tanh"));
    c.gelu = gelu == "tanh" ? GeluApproximation::Tanh : GeluApproximation::None;
    return c;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

double max_abs(const Tensor& t) {
    double m = 0;
    for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(double(t.data()[i])));
    return m;
}

// max |actual - expected| / max |expected|
double relative_error(const Tensor& actual, const Tensor& expected) {
    REQUIRE(actual.shape() == expected.shape());
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < actual.numel(); ++i) {
        diff = std::max(diff, std::abs(double(actual.data()[i]) - double(expected.data()[i])));
        scale = std::max(scale, std::abs(double(expected.data()[i])));
    }
    REQUIRE(scale > 0);
    return diff / scale;
}

void check_golden(const std::string& file) {
    const NamedTensors golden = load_safetensors(golden_path(file));
    const ViTConfig config = config_from_metadata(golden);
    VisionTransformer model(config, 0);

    // The weights: every tensor that is not an input, output or gradient. Strict, so the
    // file and the model must have exactly the same parameter names and shapes.
    NamedTensors weights;
    for (const auto& [name, t] : golden.tensors)
        if (!starts_with(name, "input.") && !starts_with(name, "output.") && !starts_with(name, "grad."))
            weights.tensors.emplace_back(name, t);
    load_state_dict(model, weights, true);

    const Tensor images = golden.get("input.images");
    std::vector<int64_t> labels;
    for (real v : golden.get("input.labels").to_vector()) labels.push_back(static_cast<int64_t>(v));
    std::vector<bool> patch_mask;
    if (golden.contains("input.patch_mask"))
        for (real v : golden.get("input.patch_mask").to_vector()) patch_mask.push_back(v != 0);
    REQUIRE(images.size(0) == meta_int(golden, "batch"));

    const Tensor logits = model.forward(images, patch_mask);
    Tensor loss = cross_entropy(logits, labels);
    loss.backward();

    const double logits_err = relative_error(logits, golden.get("output.logits"));
    const double loss_err = relative_error(loss, golden.get("output.loss"));
    CHECK(logits_err <= 1e-5);
    CHECK(loss_err <= 1e-5);

    double worst = 0;
    std::string worst_name;
    for (const auto& [name, p] : model.named_parameters()) {
        INFO("gradient of " << name);
        REQUIRE(p.has_grad());
        const Tensor& expected = golden.get("grad." + name);
        if (max_abs(expected) < 1e-12) {
            // Zero in exact arithmetic, so no relative error exists: attention_pool.bias adds
            // the same number to every token's score, which the softmax ignores. Ours must be
            // as small as float32's rounding of a sum of O(1) terms.
            CHECK(max_abs(p.grad()) <= 1e-6);
            continue;
        }
        const double err = relative_error(p.grad(), expected);
        CHECK(err <= 1e-4);
        if (err > worst) worst = err, worst_name = name;
    }
    // Shown with -s: the observed errors, for comparison with the tolerances.
    INFO(file << ": logits " << logits_err << ", loss " << loss_err << ", worst gradient " << worst << " ("
              << worst_name << ")");
    CHECK(worst <= 1e-4);
}

TEST_CASE("vit golden: cls pooling, linear head, learnable pos_embed match PyTorch in float32", "[vit][golden]") {
    check_golden("vit_golden.safetensors");
}

TEST_CASE(
    "vit golden: mean pooling, tanh pre-training head, sinusoidal positions, no qkv bias, tanh GELU and a "
    "patch mask match PyTorch in float32",
    "[vit][golden]") {
    check_golden("vit_golden_mean_mlp.safetensors");
}

TEST_CASE("vit golden: sequence pooling (attention_pool), LSA and a patch mask match PyTorch in float32",
          "[vit][golden]") {
    check_golden("vit_golden_seq_lsa.safetensors");
}

TEST_CASE("vit golden: the golden file is a timm state dict up to the patch projection reshape", "[vit][golden]") {
    const NamedTensors golden = load_safetensors(golden_path("vit_golden.safetensors"));
    const ViTConfig config = config_from_metadata(golden);
    const int64_t D = config.dim, C = config.channels, P = config.patch_size;
    // timm's Conv2d weight [D, C, P, P], flattened: ours is [D, C*P*P].
    CHECK(golden.get("patch_embed.proj.weight").shape() == Shape{D, C * P * P});
    CHECK(golden.get("pos_embed").shape() == Shape{1, config.num_patches() + 1, D});
    CHECK(golden.get("cls_token").shape() == Shape{1, 1, D});
    CHECK(golden.get("blocks.1.attn.qkv.weight").shape() == Shape{3 * D, D});
    CHECK(golden.get("blocks.1.mlp.fc1.weight").shape() == Shape{config.mlp_dim, D});
    CHECK(golden.get("head.weight").shape() == Shape{config.num_classes, D});
}

}  // namespace
}  // namespace patchgrad
