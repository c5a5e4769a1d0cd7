#include <algorithm>
#include <map>
#include <set>

#include "catch.h"
#include "patchgrad/vit/summary.h"
#include "patchgrad/vit/vision_transformer.h"
#include "test_util.h"
#include "vit_test_util.h"

namespace patchgrad::test {

namespace {

void check_contains(const std::string& text, const std::string& part) {
    INFO("looking for \"" << part << "\" in\n" << text);
    CHECK(text.find(part) != std::string::npos);
}

// The parameters a module owns itself (not its children's).
int64_t own_parameters(const Module& m) {
    int64_t n = 0;
    for (const auto& [name, p] : m.named_parameters())
        if (name.find('.') == std::string::npos) n += p.numel();
    return n;
}

// The output shape of every step of the real model for one image (eval mode: patch_drop keeps
// every token), obtained by running its children one after the other (block rows are compared
// with block 0's). The tokens z_0 entering the blocks are counted by the attention's rows.
std::map<std::string, Shape> actual_shapes(VisionTransformer& model) {
    const ViTConfig& c = model.config;
    Rng rng(1);
    Tensor image = rand_tensor({1, c.channels, c.image_height, c.image_width}, rng, -1, 1, false);
    std::map<std::string, Shape> s;
    model.eval();
    model.record_attention(true);
    s["head"] = model.forward(image).shape();  // [1, classes]: the head read one vector [1, D]
    s["pool"] = s["norm"] = Shape{1, c.dim};
    s["patch_embed.patcher"] = model.patch_embed->patcher->forward(image).shape();
    s["patch_embed.proj"] = model.patch_embed->forward(image).shape();
    const Shape tokens{1, model.attention_maps()[0].size(2), c.dim};  // [1, N + 1, D]
    s["cls_token"] = s["pos_embed"] = s["pos_drop"] = s["patch_drop"] = tokens;
    Tensor z = rand_tensor(tokens, rng, -1, 1, false);
    auto& block = *model.blocks->layers[0];
    Tensor ln1 = block.norm1->forward(z);
    s["norm1"] = ln1.shape();
    s["attn.qkv"] = block.attn->qkv->forward(ln1).shape();
    s["attn"] = s["attn.proj"] = s["attn.proj_drop"] = s["drop_path1"] = block.attn->forward(ln1).shape();
    s["attn.attn_drop"] = block.attn->attention().shape();
    Tensor ln2 = block.norm2->forward(z);
    s["norm2"] = ln2.shape();
    Tensor h = block.mlp->fc1->forward(ln2);
    s["mlp.fc1"] = h.shape();
    s["mlp.act"] = s["mlp.drop1"] = block.mlp->act->forward(h).shape();
    s["mlp.fc2"] = s["mlp.drop2"] = s["drop_path2"] = block.mlp->forward(ln2).shape();
    if (model.attention_pool) s["attention_pool"] = model.attention_pool->forward(z).shape();
    if (model.pre_logits)
        s["pre_logits.fc"] = s["pre_logits.act"] =
            model.pre_logits->forward(rand_tensor({1, c.dim}, rng, -1, 1, false)).shape();
    return s;
}

// The summary, computed from the configuration, describes the model VisionTransformer builds:
// every row is one of its modules (same type, same own parameters) or parameters, every leaf
// module and every parameter has a row, and the output shapes are the real ones.
void require_summary_matches_model(const ViTConfig& c) {
    const ModelSummary summary = summarize(c);
    VisionTransformer model(c, 3);
    REQUIRE(summary.total_parameters() == model.num_parameters());

    std::map<std::string, const Module*> modules;
    for (const auto& [name, m] : model.named_modules()) modules[name] = m;
    std::map<std::string, Tensor> params;
    for (const auto& [name, p] : model.named_parameters()) params[name] = p;
    const std::map<std::string, Shape> shapes = actual_shapes(model);

    std::set<std::string> rows;
    for (const SummaryRow& r : summary.rows) {
        INFO("row " << r.name << " (" << r.type << ")");
        REQUIRE(rows.insert(r.name).second);
        if (modules.count(r.name)) {
            CHECK(modules[r.name]->type_name() == r.type);
            CHECK(own_parameters(*modules[r.name]) == r.parameters);
        } else if (params.count(r.name)) {
            CHECK(r.type == "Parameter");
            CHECK(params[r.name].numel() == r.parameters);
        } else {
            CHECK(r.parameters == 0);
        }
        std::string key = r.name;
        if (key.rfind("blocks.", 0) == 0) key = key.substr(key.find('.', 7) + 1);
        REQUIRE(shapes.count(key));
        CHECK(shapes.at(key) == r.output_shape);
    }
    for (const auto& [name, m] : modules) {
        INFO("module " << name);
        if (m->children().empty() || own_parameters(*m) > 0) CHECK(rows.count(name));
    }
    for (const auto& [name, p] : params) {
        const std::string owner = name.substr(0, name.rfind('.'));
        INFO("parameter " << name);
        CHECK((rows.count(name) || rows.count(owner)));
    }
}

}  // namespace

TEST_CASE("summary: the paper's totals at 224x224 with 1000 classes", "[vit][summary][ex:summary-block-rows]") {
    CHECK(summarize(vit_config("vit-b16")).total_parameters() == 86567656);
    CHECK(summarize(vit_config("vit-b32")).total_parameters() == 88224232);
    CHECK(summarize(vit_config("vit-l16")).total_parameters() == 304326632);
    CHECK(summarize(vit_config("vit-h14")).total_parameters() == 632045800);
}

TEST_CASE("summary: Visual Transformer in CV's torchsummary total 86,415,592 leaves out cls_token and pos_embed",
          "[vit][summary][documents][ex:summary-block-rows]") {
    const ModelSummary s = summarize(vit_config("vit-b16"));
    CHECK(s.parameters_outside_layers() == 152064);  // 768 + 197 * 768
    CHECK(s.total_parameters() - s.parameters_outside_layers() == 86415592);
    const std::string table = s.table();
    check_contains(table, "Total params: 86,567,656");
    check_contains(table, "86,415,592");
    check_contains(table, "152,064");
}

TEST_CASE("summary: the rows are the real model's modules, parameters and output shapes", "[vit][summary]") {
    require_summary_matches_model(vit_config("cifar-tiny"));
    ViTConfig c = small_config();
    require_summary_matches_model(c);
    c.pool = Pool::Mean;
    c.head = Head::Mlp;
    c.qkv_bias = false;
    c.learnable_pos_embed = false;
    c.mlp_dim = 0;
    c.mlp_ratio = 3;
    c.channels = 1;
    c.patch_dropout = static_cast<real>(0.25);  // adds the patch_drop row
    require_summary_matches_model(c);
    c.pool = Pool::Seq;  // adds the attention_pool row and its D + 1 parameters
    require_summary_matches_model(c);
    c.lsa = true;  // adds a row per block for the attention's own parameters, LSA's scale
    require_summary_matches_model(c);
    auto has_patch_drop = [](const ModelSummary& m) {
        return std::any_of(m.rows.begin(), m.rows.end(), [](const SummaryRow& r) { return r.name == "patch_drop"; });
    };
    CHECK(has_patch_drop(summarize(c)));
    CHECK_FALSE(has_patch_drop(summarize(small_config())));
}

TEST_CASE("summary: image size and classes change the totals as the shapes say",
          "[vit][summary][ex:summary-block-rows]") {
    ViTConfig c = vit_config("vit-b16");
    c.image_height = c.image_width = 384;  // 576 patches: pos_embed grows by (577 - 197) x 768
    CHECK(summarize(c).total_parameters() == 86567656 + (577 - 197) * 768);
    c = vit_config("vit-b16");
    c.num_classes = 10;  // head 768 x 10 + 10 instead of 768 x 1000 + 1000
    CHECK(summarize(c).total_parameters() == 86567656 - 769000 + 7690);
    c = vit_config("cifar-tiny");
    c.image_height = 32;
    c.image_width = 48;
    CHECK(summarize(c).rows[0].output_shape == Shape{1, 96, 48});
    c.image_width = 30;
    require_error([&] { summarize(c); }, {"ViTConfig 'cifar-tiny'", "32x30", "patch size 4"});
}

// summary --config vit-h14 --image-size 60129542144 printed "0 patches" with exit status 0:
// (60129542144 / 14)^2 = 2^64 patches had wrapped around.
TEST_CASE("summary: sizes whose counts overflow 64 bits are refused, not wrapped around", "[vit][summary][errors]") {
    ViTConfig c = vit_config("vit-h14");
    c.image_height = c.image_width = 60129542144;
    require_error([&] { summarize(c); }, {"ViTConfig 'vit-h14'", "patches", "4294967296 x 4294967296", "64-bit"});
    c.image_height = c.image_width = 14 * 100000;  // 10^10 patches: one image's attention weights overflow
    require_error([&] { summarize(c); }, {"ViTConfig 'vit-h14'", "attention weights"});
    c.image_height = c.image_width = 14 * 1000;  // 10^6 patches fit: the total is the closed form's
    CHECK(summarize(c).total_parameters() == parameter_count(c));
    CHECK(summarize(c).rows[0].output_shape == Shape{1, 1000000, 588});
}

TEST_CASE("summary: the table lists every layer with its type, shape and count",
          "[vit][summary][ex:summary-block-rows]") {
    const std::string table = summarize(vit_config("vit-b16")).table();
    check_contains(table, "patch_embed.proj (Linear)");
    check_contains(table, "[1, 196, 768]");
    check_contains(table, "590,592");
    check_contains(table, "blocks.11.mlp.fc2 (Linear)");
    check_contains(table, "[1, 12, 197, 197]");
    check_contains(table, "head (Linear)");
    check_contains(table, "769,000");
    CHECK(with_thousands(0) == "0");
    CHECK(with_thousands(999) == "999");
    CHECK(with_thousands(1000) == "1,000");
    CHECK(with_thousands(632045800) == "632,045,800");
}

TEST_CASE(
    "training_gflop_per_image, training_tflop: the matrix products' FLOPs of a training step, patch dropout's fewer "
    "tokens",
    "[vit][summary]") {
    // cifar-micro: 64 patches of 48 numbers, T = 65, D = 96, F = 192, 4 blocks, 10 classes.
    const double micro_block = 65.0 * 96 * 3 * 96 + 2.0 * 65 * 65 * 96 + 65.0 * 96 * 96 + 2.0 * 65 * 96 * 192;
    const double micro = 64.0 * 48 * 96 + 4 * micro_block + 96.0 * 10;
    ViTConfig c = vit_config("cifar-micro");
    CHECK(forward_multiply_adds(c, true) == Approx(micro).epsilon(1e-12));
    CHECK(training_gflop_per_image(c) == Approx(6 * micro * 1e-9).epsilon(1e-12));
    CHECK(training_gflop_per_image(c) == Approx(0.136).epsilon(0.01));  // the presets' budget unit
    CHECK(training_gflop_per_image(vit_config("cifar-tiny")) == Approx(0.348).epsilon(0.01));
    // The quick budget: 16 epochs of the 45,000 training images, 98 TFLOP.
    CHECK(training_tflop(c, 16 * 45000.0) == Approx(6 * micro * 16 * 45000 * 1e-12).epsilon(1e-12));
    CHECK(training_tflop(c, 16 * 45000.0) == Approx(98).epsilon(0.01));
    // Patch dropout 0.25 keeps 48 of 64 patches in training: the blocks see T = 49 tokens.
    c.patch_dropout = static_cast<real>(0.25);
    const double kept_block = 49.0 * 96 * 3 * 96 + 2.0 * 49 * 49 * 96 + 49.0 * 96 * 96 + 2.0 * 49 * 96 * 192;
    CHECK(forward_multiply_adds(c, true) == Approx(64.0 * 48 * 96 + 4 * kept_block + 96.0 * 10).epsilon(1e-12));
    CHECK(forward_multiply_adds(c, false) == Approx(micro).epsilon(1e-12));
}

}  // namespace patchgrad::test
