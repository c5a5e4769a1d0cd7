#include <set>

#include "catch.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/vit/summary.h"
#include "patchgrad/vit/vision_transformer.h"
#include "test_util.h"
#include "vit_test_util.h"

namespace patchgrad::test {

namespace {

const std::vector<bool> kMask{true, false, true, true, false, true};  // 6 patches, 2 hidden

Tensor small_images(uint64_t seed, int64_t batch = 2) {
    Rng rng(seed);
    return rand_tensor({batch, 3, 8, 12}, rng);
}

// The whole small ViT (2 images 3 x 8 x 12, every parameter, ~2,300 numbers), checked element
// by element without sampling.
void check_vit_gradients(Pool pool, Head head, const std::vector<bool>& mask, bool lsa = false) {
    ViTConfig c = small_config();
    c.pool = pool;
    c.head = head;
    c.lsa = lsa;
    VisionTransformer model(c, 20);
    Rng rng(21);
    scramble_parameters(model, rng);
    std::vector<Tensor> inputs{small_images(22)};
    for (const Tensor& p : model.parameters()) inputs.push_back(p);
    check_gradients([&](const std::vector<Tensor>& xs) { return model.forward(xs[0], mask); }, inputs);
}

}  // namespace

TEST_CASE("VisionTransformer: parameter names, shapes and order follow timm", "[vit][layer:VisionTransformer]") {
    ViTConfig c = small_config();
    c.head = Head::Mlp;
    VisionTransformer model(c, 1);
    std::vector<std::pair<std::string, Shape>> expected{{"cls_token", {1, 1, 8}},
                                                        {"pos_embed", {1, 7, 8}},
                                                        {"patch_embed.proj.weight", {8, 48}},
                                                        {"patch_embed.proj.bias", {8}}};
    for (int l = 0; l < 2; ++l) {
        const std::string b = std::string("blocks.") + char('0' + l) + '.';
        for (auto& e : std::vector<std::pair<std::string, Shape>>{{"norm1.weight", {8}},
                                                                  {"norm1.bias", {8}},
                                                                  {"attn.qkv.weight", {24, 8}},
                                                                  {"attn.qkv.bias", {24}},
                                                                  {"attn.proj.weight", {8, 8}},
                                                                  {"attn.proj.bias", {8}},
                                                                  {"norm2.weight", {8}},
                                                                  {"norm2.bias", {8}},
                                                                  {"mlp.fc1.weight", {16, 8}},
                                                                  {"mlp.fc1.bias", {16}},
                                                                  {"mlp.fc2.weight", {8, 16}},
                                                                  {"mlp.fc2.bias", {8}}})
            expected.emplace_back(b + e.first, e.second);
    }
    for (auto& e : std::vector<std::pair<std::string, Shape>>{{"norm.weight", {8}},
                                                              {"norm.bias", {8}},
                                                              {"pre_logits.fc.weight", {8, 8}},
                                                              {"pre_logits.fc.bias", {8}},
                                                              {"head.weight", {5, 8}},
                                                              {"head.bias", {5}}})
        expected.push_back(e);

    auto params = model.named_parameters();
    REQUIRE(params.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        CHECK(params[i].first == expected[i].first);
        CHECK(params[i].second.shape() == expected[i].second);
    }
    CHECK(model.parameter("pos_embed").same(model.pos_encoding->table));
    CHECK(model.parameter("cls_token").same(model.cls_token));
    CHECK(model.norm->eps == Approx(1e-6));

    SECTION("linear head, no qkv bias, fixed positions") {
        c.head = Head::Linear;
        c.qkv_bias = false;
        c.learnable_pos_embed = false;
        VisionTransformer plain(c, 1);
        std::set<std::string> names;
        for (auto& [name, p] : plain.named_parameters()) names.insert(name);
        CHECK(names.count("cls_token"));
        CHECK_FALSE(names.count("pos_embed"));
        CHECK_FALSE(names.count("pre_logits.fc.weight"));
        CHECK_FALSE(names.count("blocks.0.attn.qkv.bias"));
        CHECK(plain.num_parameters() == model.num_parameters() - 7 * 8 - (8 * 8 + 8) - 2 * 24);
        CHECK_FALSE(plain.pos_encoding->table.requires_grad());
    }
}

TEST_CASE("VisionTransformer: the same seed gives the same weights, another seed others",
          "[vit][layer:VisionTransformer]") {
    VisionTransformer a(small_config(), 5), b(small_config(), 5), c(small_config(), 6);
    auto pa = a.named_parameters(), pb = b.named_parameters(), pc = c.named_parameters();
    for (size_t i = 0; i < pa.size(); ++i) require_close(pa[i].second, pb[i].second, 0, pa[i].first);
    CHECK(max_abs_difference(pa[0].second, pc[0].second) > 0);  // cls_token
    CHECK(max_abs_difference(a.parameter("head.weight"), c.parameter("head.weight")) > 0);
}

TEST_CASE("VisionTransformer: forward is eqs. (1)-(4) composed from the children, for every pooling",
          "[vit][layer:VisionTransformer][forward][ex:vit-pooling]") {
    for (Pool pool : {Pool::Cls, Pool::Mean, Pool::Seq}) {
        for (Head head : {Head::Linear, Head::Mlp}) {
            INFO("pool " << enum_name(pool) << ", head " << enum_name(head));
            ViTConfig c = small_config();
            c.pool = pool;
            c.head = head;
            VisionTransformer model(c, 2);
            Rng rng(3);
            scramble_parameters(model, rng);
            Tensor images = small_images(4, 3);
            const Tensor out = model.forward(images);
            REQUIRE(out.shape() == Shape{3, 5});

            // [hide:vit-pooling]
            Tensor z = model.patch_embed->forward(images);
            z = concat({broadcast_to(model.cls_token, {3, 1, 8}), z}, 1) + model.pos_encoding->table;  // (1)
            for (auto& block : model.blocks->layers) z = block->forward(z);                            // (2), (3)
            Tensor pooled = Tensor::zeros({3, 8});                                                     // [B, D]
            for (int64_t b = 0; b < 3; ++b) {
                // Token weights: 1 for the class token (cls), 1/7 each (mean), or the softmax of
                // the attention_pool scores (seq).
                std::vector<double> weight(7, pool == Pool::Mean ? 1.0 / 7 : 0.0);
                if (pool == Pool::Cls) weight[0] = 1;
                if (pool == Pool::Seq) {
                    double total = 0;
                    for (int64_t n = 0; n < 7; ++n) {
                        double score = model.attention_pool->bias.at({0});
                        for (int64_t d = 0; d < 8; ++d)
                            score += model.attention_pool->weight.at({0, d}) * z.at({b, n, d});
                        weight[n] = std::exp(score);
                        total += weight[n];
                    }
                    for (double& w : weight) w /= total;
                }
                for (int64_t d = 0; d < 8; ++d) {
                    double acc = 0;
                    for (int64_t n = 0; n < 7; ++n) acc += weight[n] * z.at({b, n, d});
                    pooled.at({b, d}) = static_cast<real>(acc);
                }
            }
            Tensor y = model.norm->forward(pooled);  // (4)
            if (head == Head::Mlp) y = tanh(model.pre_logits->fc->forward(y));
            Tensor logits = model.head->forward(y);
            require_close(out, logits, 1e-12);
            // [/hide:vit-pooling]
            // The reference's checksums, [pool: cls, mean, seq][head: linear, mlp].
            const double gold[3][2] = {{-15.111731046442856, 4.8138924694847187},
                                       {-20.839581467093467, 8.5355807845053366},
                                       {-0.92515442194248998, -6.0680233730060085}};
            CHECK(checksum(out) == Approx(gold[int(pool)][int(head)]).epsilon(1e-10));
        }
    }
}

TEST_CASE("VisionTransformer: patch dropout in training runs the blocks on each image's kept tokens, eval sees all",
          "[vit][layer:VisionTransformer][forward][ex:vit-pooling]") {
    for (Pool pool : {Pool::Cls, Pool::Mean}) {
        INFO("pool " << enum_name(pool));
        ViTConfig c = small_config();
        c.pool = pool;
        c.patch_dropout = static_cast<real>(0.5);  // 6 patches: 3 kept
        VisionTransformer model(c, 2);
        Rng rng(3);
        scramble_parameters(model, rng);
        Tensor images = small_images(4, 3);

        const auto draw = model.dropout_rng->state();
        Tensor logits = model.forward(images);
        model.dropout_rng->set_state(draw);
        CHECK(checksum(logits) == Approx(pool == Pool::Cls ? -25.698415647232682 : -32.989660026813816).epsilon(1e-10));
        // [hide:vit-pooling]
        Tensor z = model.patch_embed->forward(images);
        z = concat({broadcast_to(model.cls_token, {3, 1, 8}), z}, 1) + model.pos_encoding->table;  // (1)
        z = model.patch_drop->forward(z);
        REQUIRE(z.shape() == Shape{3, 4, 8});
        for (auto& block : model.blocks->layers) z = block->forward(z);
        Tensor pooled = pool == Pool::Cls ? select(z, 1, 0) : mean(z, 1);
        require_close(logits, model.head->forward(model.norm->forward(pooled)), 1e-12);
        // [/hide:vit-pooling]

        // Eval mode keeps every token: the same as the model without patch dropout.
        ViTConfig plain_config = c;
        plain_config.patch_dropout = 0;
        VisionTransformer plain(plain_config, 2);
        Rng same(3);
        scramble_parameters(plain, same);
        model.eval();
        require_close(model.forward(images), plain.forward(images), 0);
        model.train();
        require_error([&] { model.forward(images, kMask); }, {"VisionTransformer", "patch mask", "patch dropout"});
    }
}

TEST_CASE("VisionTransformer: gradcheck w.r.t. the images and every parameter, patch dropout in training",
          "[vit][layer:VisionTransformer][gradcheck][ex:vit-pooling]") {
    ViTConfig c = small_config();
    c.pool = Pool::Mean;
    c.patch_dropout = static_cast<real>(0.4);
    VisionTransformer model(c, 20);
    Rng rng(21);
    scramble_parameters(model, rng);
    const auto draw = model.dropout_rng->state();
    std::vector<Tensor> inputs{small_images(22)};
    for (const Tensor& p : model.parameters()) inputs.push_back(p);
    check_gradients(
        [&](const std::vector<Tensor>& xs) {
            model.dropout_rng->set_state(draw);  // the same tokens dropped at every evaluation
            return model.forward(xs[0]);
        },
        inputs);
}

TEST_CASE("VisionTransformer: images in a batch do not interact",
          "[vit][layer:VisionTransformer][forward][ex:vit-pooling]") {
    ViTConfig c = small_config();
    c.pool = Pool::Mean;
    VisionTransformer model(c, 7);
    Rng rng(8);
    scramble_parameters(model, rng);
    Tensor images = small_images(9, 3);
    Tensor batched = model.forward(images, kMask);
    for (int64_t b = 0; b < 3; ++b)
        require_close(model.forward(slice(images, 0, b, b + 1), kMask), slice(batched, 0, b, b + 1), 1e-12);
}

TEST_CASE("VisionTransformer: a hidden patch does not change the logits, a visible one does",
          "[vit][layer:VisionTransformer][forward]") {
    VisionTransformer model(small_config(), 10);
    Rng rng(11);
    scramble_parameters(model, rng);
    Tensor images = small_images(12, 1);
    Tensor before = model.forward(images, kMask);
    Tensor changed = images.detach();
    // Patch 1 (row 0, columns 4..7) is hidden by kMask, patch 0 (columns 0..3) is visible.
    for (int64_t c = 0; c < 3; ++c)
        for (int64_t i = 0; i < 4; ++i) changed.at({0, c, i, 5}) += 1;
    require_close(model.forward(changed, kMask), before, 1e-12);
    for (int64_t c = 0; c < 3; ++c) changed.at({0, c, 1, 1}) += 1;
    CHECK(max_abs_difference(model.forward(changed, kMask), before) > 1e-4);
}

TEST_CASE("VisionTransformer: gradcheck w.r.t. the images and every parameter, cls pooling, linear head",
          "[vit][layer:VisionTransformer][gradcheck][ex:vit-pooling]") {
    check_vit_gradients(Pool::Cls, Head::Linear, {});
}

TEST_CASE("VisionTransformer: gradcheck w.r.t. the images and every parameter, cls pooling, linear head, mask",
          "[vit][layer:VisionTransformer][gradcheck]") {
    check_vit_gradients(Pool::Cls, Head::Linear, kMask);
}

TEST_CASE("VisionTransformer: gradcheck w.r.t. the images and every parameter, cls pooling, mlp head",
          "[vit][layer:VisionTransformer][gradcheck]") {
    check_vit_gradients(Pool::Cls, Head::Mlp, {});
}

TEST_CASE("VisionTransformer: gradcheck w.r.t. the images and every parameter, mean pooling, linear head",
          "[vit][layer:VisionTransformer][gradcheck][ex:vit-pooling]") {
    check_vit_gradients(Pool::Mean, Head::Linear, {});
}

TEST_CASE("VisionTransformer: gradcheck w.r.t. the images and every parameter, seq pooling, linear head",
          "[vit][layer:VisionTransformer][gradcheck][ex:vit-pooling]") {
    check_vit_gradients(Pool::Seq, Head::Linear, {});
}

TEST_CASE("VisionTransformer: gradcheck w.r.t. the images and every parameter, seq pooling, mlp head, mask",
          "[vit][layer:VisionTransformer][gradcheck]") {
    check_vit_gradients(Pool::Seq, Head::Mlp, kMask);
}

TEST_CASE("VisionTransformer: gradcheck w.r.t. the images and every parameter, LSA in every block, mask",
          "[vit][layer:VisionTransformer][gradcheck][lsa]") {
    check_vit_gradients(Pool::Cls, Head::Linear, kMask, true);
}

TEST_CASE("VisionTransformer: gradcheck w.r.t. the images and every parameter, mean pooling, mlp head, mask",
          "[vit][layer:VisionTransformer][gradcheck]") {
    check_vit_gradients(Pool::Mean, Head::Mlp, kMask);
}

TEST_CASE("VisionTransformer: gradcheck with fixed positions, no qkv bias, tanh GELU and LayerNorm eps 1e-5",
          "[vit][layer:VisionTransformer][gradcheck]") {
    ViTConfig c = small_config();
    c.learnable_pos_embed = false;
    c.qkv_bias = false;
    c.gelu = GeluApproximation::Tanh;
    c.layer_norm_eps = 1e-5;
    c.channels = 1;
    VisionTransformer model(c, 23);
    Rng rng(24);
    scramble_parameters(model, rng);
    std::vector<Tensor> inputs{rand_tensor({2, 1, 8, 12}, rng)};
    for (const Tensor& p : model.parameters()) inputs.push_back(p);
    check_gradients([&](const std::vector<Tensor>& xs) { return model.forward(xs[0], kMask); }, inputs);
}

TEST_CASE("VisionTransformer: recorded attention maps, one per block, rows sum to 1, hidden patches get 0",
          "[vit][layer:VisionTransformer][forward]") {
    VisionTransformer model(small_config(), 30);
    Rng rng(31);
    scramble_parameters(model, rng);
    model.forward(small_images(32));
    for (const Tensor& a : model.attention_maps()) CHECK_FALSE(a.defined());
    model.record_attention(true);
    model.forward(small_images(32), kMask);
    auto maps = model.attention_maps();
    REQUIRE(maps.size() == 2);
    for (const Tensor& a : maps) {
        REQUIRE(a.shape() == Shape{2, 2, 7, 7});
        for (int64_t b = 0; b < 2; ++b)
            for (int64_t h = 0; h < 2; ++h)
                for (int64_t i = 0; i < 7; ++i) {
                    double row = 0;
                    for (int64_t j = 0; j < 7; ++j) row += a.at({b, h, i, j});
                    CHECK(row == Approx(1).margin(1e-12));
                    CHECK(a.at({b, h, i, 2}) == 0);  // patch 1 is hidden (token 2)
                    CHECK(a.at({b, h, i, 5}) == 0);  // patch 4 is hidden (token 5)
                }
    }
    model.record_attention(false);
    for (const Tensor& a : model.attention_maps()) CHECK_FALSE(a.defined());
}

TEST_CASE("VisionTransformer: dropout is active in training and off in eval", "[vit][layer:VisionTransformer]") {
    ViTConfig c = small_config();
    VisionTransformer plain(c, 40);
    c.dropout = 0.3;
    c.emb_dropout = 0.3;
    c.attn_dropout = 0.3;
    VisionTransformer model(c, 40);
    Tensor images = small_images(41);
    CHECK(max_abs_difference(model.forward(images), model.forward(images)) > 1e-6);
    model.eval();
    CHECK_FALSE(model.blocks->layers[1]->mlp->drop1->training());
    require_close(model.forward(images), model.forward(images), 0);
    require_close(model.forward(images), plain.forward(images), 0);  // dropout draws nothing at construction
}

TEST_CASE(
    "PreLogits: ViT from scratch's pre-training head of three Linear layers collapses to one affine map, "
    "ours does not",
    "[vit][layer:VisionTransformer][documents]") {
    Rng rng(50);
    // ViT from scratch (is_pretrain): Linear(D, mlp) -> Linear(mlp, mlp) -> Linear(mlp, classes), nothing between
    Linear l1(8, 16, rng), l2(16, 16, rng), l3(16, 5, rng);
    for (Linear* l : {&l1, &l2, &l3}) scramble_parameters(*l, rng);
    // The composition as a single Linear: W = W3 W2 W1, b = W3 (W2 b1 + b2) + b3
    Tensor W = matmul(l3.weight, matmul(l2.weight, l1.weight));
    Tensor b = reshape(l3.forward(l2.forward(reshape(l1.bias, {1, 16}))), {5});
    Tensor x = rand_tensor({4, 8}, rng, -2, 2, false);
    require_close(l3.forward(l2.forward(l1.forward(x))), linear(x, W, b), 1e-12);

    // Ours: pre_logits (Linear + tanh) then head. An affine g has g((a+b)/2) = (g(a)+g(b))/2.
    ViTConfig c = small_config();
    c.head = Head::Mlp;
    VisionTransformer model(c, 51);
    scramble_parameters(model, rng);
    auto head = [&](const Tensor& y) { return model.head->forward(model.pre_logits->forward(y)); };
    Tensor a = rand_tensor({1, 8}, rng, -2, 2, false), a2 = rand_tensor({1, 8}, rng, -2, 2, false);
    CHECK(max_abs_difference(head((a + a2) * 0.5), (head(a) + head(a2)) * 0.5) > 1e-3);
    Tensor s1 = l3.forward(l2.forward(l1.forward((a + a2) * 0.5))),
           s2 = (l3.forward(l2.forward(l1.forward(a))) + l3.forward(l2.forward(l1.forward(a2)))) * 0.5;
    require_close(s1, s2, 1e-12);
}

TEST_CASE("vit_config: the paper's Table 1 and the CIFAR configurations", "[vit][layer:VisionTransformer]") {
    struct Row {
        std::string name;
        int64_t patch, dim, depth, heads, mlp;
    };
    for (Row r : {Row{"vit-b16", 16, 768, 12, 12, 3072}, Row{"vit-b32", 32, 768, 12, 12, 3072},
                  Row{"vit-l16", 16, 1024, 24, 16, 4096}, Row{"vit-h14", 14, 1280, 32, 16, 5120}}) {
        INFO(r.name);
        ViTConfig c = vit_config(r.name);
        CHECK(c.name == r.name);
        CHECK(c.image_height == 224);
        CHECK(c.image_width == 224);
        CHECK(c.channels == 3);
        CHECK(c.num_classes == 1000);
        CHECK(c.patch_size == r.patch);
        CHECK(c.dim == r.dim);
        CHECK(c.depth == r.depth);
        CHECK(c.heads == r.heads);
        CHECK(c.mlp_hidden() == r.mlp);
        CHECK(c.pool == Pool::Cls);
        CHECK(c.head == Head::Linear);
        CHECK(c.learnable_pos_embed);
        CHECK(c.qkv_bias);
        CHECK(c.layer_norm_eps == Approx(1e-6));
    }
    for (Row r : {Row{"cifar-micro", 4, 96, 4, 4, 192}, Row{"cifar-tiny", 4, 128, 6, 4, 256},
                  Row{"cifar-small", 4, 192, 6, 3, 384}}) {
        INFO(r.name);
        ViTConfig c = vit_config(r.name);
        CHECK(c.image_height == 32);
        CHECK(c.image_width == 32);
        CHECK(c.num_patches() == 64);
        CHECK(c.num_classes == 10);
        CHECK(c.patch_size == r.patch);
        CHECK(c.dim == r.dim);
        CHECK(c.depth == r.depth);
        CHECK(c.heads == r.heads);
        CHECK(c.mlp_hidden() == r.mlp);
    }
    for (const std::string& name : vit_config_names()) CHECK_NOTHROW(validate(vit_config(name)));
}

TEST_CASE("vit_config: ViT-Huge has MLP 5120 (Table 1), ViT from scratch's 4096 gives 548M parameters, not 632M",
          "[vit][layer:VisionTransformer][documents][ex:summary-block-rows]") {
    ViTConfig huge = vit_config("vit-h14");
    CHECK(huge.mlp_hidden() == 5120);
    CHECK(summarize(huge).total_parameters() / 1000000 == 632);  // Table 1: 632M
    huge.mlp_dim = 4096;                                         // ViT from scratch's ViT_Huge
    CHECK(summarize(huge).total_parameters() == 548126952);
}

TEST_CASE("vit_config: an unknown name lists the known ones", "[vit][layer:VisionTransformer][errors]") {
    require_error([] { vit_config("vit-x"); }, {"vit_config", "'vit-x'", "vit-b16", "vit-b32", "vit-l16", "vit-h14",
                                                "cifar-micro", "cifar-tiny", "cifar-small"});
}

TEST_CASE("VisionTransformer: configuration errors name the sizes", "[vit][layer:VisionTransformer][errors]") {
    auto with = [](auto change) {
        ViTConfig c = small_config();
        change(c);
        return c;
    };
    auto build = [](const ViTConfig& c) { return [c] { VisionTransformer model(c, 0); }; };
    require_error(build(with([](ViTConfig& c) { c.image_height = 10; })),
                  {"ViTConfig 'small'", "10x12", "patch size 4"});
    require_error(build(with([](ViTConfig& c) { c.image_width = 14; })), {"ViTConfig", "8x14", "patch size 4"});
    require_error(build(with([](ViTConfig& c) { c.heads = 3; })), {"ViTConfig", "dim 8", "heads 3"});
    require_error(build(with([](ViTConfig& c) { c.depth = 0; })), {"ViTConfig", "depth", "0"});
    require_error(build(with([](ViTConfig& c) { c.patch_size = -4; })), {"ViTConfig", "patch size", "-4"});
    require_error(build(with([](ViTConfig& c) { c.channels = 0; })), {"ViTConfig", "channels", "0"});
    require_error(build(with([](ViTConfig& c) { c.num_classes = 0; })), {"ViTConfig", "num_classes", "0"});
    require_error(build(with([](ViTConfig& c) {
                      c.mlp_dim = 0;
                      c.mlp_ratio = 0;
                  })),
                  {"ViTConfig", "mlp_ratio"});
    require_error(build(with([](ViTConfig& c) { c.dropout = 1; })), {"ViTConfig", "dropout", "[0, 1)"});
    require_error([] { parse_enum<Pool>("max", "ViTConfig: pool"); },
                  {"ViTConfig: pool 'max' is not cls, mean or seq"});
    require_error([] { parse_enum<Head>("conv", "ViTConfig: head"); }, {"ViTConfig: head 'conv' is not linear or mlp"});
    ViTConfig ratio = with([](ViTConfig& c) {
        c.mlp_dim = 0;
        c.mlp_ratio = 3;
    });
    CHECK(VisionTransformer(ratio, 0).blocks->layers[0]->mlp->fc1->out_features == 24);
}

TEST_CASE("for_each_parameter and parameter_count describe the model the constructor builds",
          "[vit][layer:VisionTransformer]") {
    ViTConfig unusual = small_config();
    unusual.head = Head::Mlp;
    unusual.qkv_bias = false;
    unusual.learnable_pos_embed = false;
    unusual.mlp_dim = 0;
    unusual.mlp_ratio = 2.5f;
    unusual.pool = Pool::Seq;  // attention_pool between the blocks and norm
    unusual.lsa = true;        // blocks.l.attn.scale before blocks.l.attn.qkv
    for (const ViTConfig& c : {small_config(), unusual, vit_config("cifar-tiny")}) {
        INFO(describe(c));
        std::vector<std::pair<std::string, Shape>> listed;
        for_each_parameter(c, [&](const std::string& name, const Shape& shape) { listed.emplace_back(name, shape); });
        const VisionTransformer model(c, 0);
        const auto params = model.named_parameters();
        REQUIRE(listed.size() == params.size());
        for (size_t i = 0; i < params.size(); ++i) {
            CHECK(listed[i].first == params[i].first);
            CHECK(listed[i].second == params[i].second.shape());
        }
        CHECK(parameter_count(c) == model.num_parameters());
    }
    CHECK(parameter_count(vit_config("vit-h14")) == 632045800);  // without building 2.5 GB of it
}

// summary --config vit-h14 --image-size 60129542144 reported 0 patches: 2^32 x 2^32 wrapped.
TEST_CASE("VisionTransformer: a config whose counts overflow 64 bits is refused naming the count",
          "[vit][layer:VisionTransformer][errors]") {
    ViTConfig huge_image = vit_config("vit-h14");
    huge_image.image_height = huge_image.image_width = 60129542144;
    require_error([&] { validate(huge_image); }, {"ViTConfig 'vit-h14'", "patches", "4294967296 x 4294967296"});
    huge_image.image_width = 14;  // 4294967296 x 1 patches: the attention weights are what overflow
    require_error([&] { validate(huge_image); }, {"ViTConfig 'vit-h14'", "attention weights"});
    ViTConfig deep = vit_config("cifar-tiny");
    deep.depth = int64_t(1) << 62;
    require_error([&] { parameter_count(deep); }, {"ViTConfig 'cifar-tiny'", "depth x per block"});
    ViTConfig ratio = vit_config("cifar-tiny");
    ratio.mlp_dim = 0;
    ratio.mlp_ratio = 1e30f;
    require_error([&] { validate(ratio); }, {"ViTConfig 'cifar-tiny'", "MLP size", "mlp_ratio"});
}

// bench --depth 999999999999 would allocate until the system gave up, and eval of a checkpoint
// whose metadata says dim 16384, depth 64 would need 12 GB: both are refused before allocating.
TEST_CASE("VisionTransformer: a model larger than the machine's memory is refused before it is built",
          "[vit][layer:VisionTransformer][errors]") {
    ViTConfig deep = vit_config("cifar-tiny");
    deep.depth = 999999999999;
    const std::string count = std::to_string(parameter_count(deep));
    require_error([&] { VisionTransformer model(deep, 0); },
                  {"ViTConfig 'cifar-tiny'", count + " parameters need", "more than this machine's"});
    require_error([&] { check_memory(deep, 4); }, {count + " parameters x 4 copies need"});
    CHECK_NOTHROW(check_memory(vit_config("cifar-tiny"), 4));
}

TEST_CASE("VisionTransformer: input errors name the sizes", "[vit][layer:VisionTransformer][errors]") {
    VisionTransformer model(small_config(), 60);
    require_error(
        [&] {
            model.forward(Tensor::zeros({2, 1, 8, 12}));
        },
        {"VisionTransformer", "3 channels", "[B, 3, 8, 12]", "[2, 1, 8, 12]"});
    require_error(
        [&] {
            model.forward(Tensor::zeros({2, 3, 8, 8}));
        },
        {"VisionTransformer", "image size 8x12", "[2, 3, 8, 8]"});
    require_error(
        [&] {
            model.forward(Tensor::zeros({3, 8, 12}));
        },
        {"VisionTransformer", "[B, 3, 8, 12]", "[3, 8, 12]"});
    require_error(
        [&] {
            model.forward(Tensor::zeros({2, 3, 8, 12}), {true, false, true, true, false});
        },
        {"VisionTransformer", "patch mask has 5 entries", "6", "2x3 patches of 4x4"});
    require_error(
        [&] {
            model.forward(Tensor::zeros({2, 3, 8, 12}), std::vector<bool>(7, true));
        },
        {"VisionTransformer", "7 entries", "6"});
}

TEST_CASE("Pool and Head: names round-trip, describe() uses them, other names are refused",
          "[vit][layer:VisionTransformer]") {
    for (Pool pool : {Pool::Cls, Pool::Mean, Pool::Seq}) CHECK(parse_enum<Pool>(enum_name(pool), "pool") == pool);
    for (Head head : {Head::Linear, Head::Mlp}) CHECK(parse_enum<Head>(enum_name(head), "head") == head);
    CHECK(enum_name(Pool::Cls) == "cls");
    CHECK(enum_name(Pool::Mean) == "mean");
    CHECK(enum_name(Pool::Seq) == "seq");
    CHECK(enum_name(Head::Linear) == "linear");
    CHECK(enum_name(Head::Mlp) == "mlp");
    ViTConfig c = small_config();
    c.pool = Pool::Mean;
    c.head = Head::Mlp;
    CHECK(describe(c).find("pool mean, head mlp") != std::string::npos);
    require_error([] { parse_enum<Pool>("CLS", "pool"); }, {"pool 'CLS' is not cls, mean or seq"});
    require_error([] { parse_enum<Head>("", "head"); }, {"head '' is not linear or mlp"});
}

TEST_CASE("ViTConfig::block: every block gets the config's sizes, drop path grows linearly from 0",
          "[vit][layer:VisionTransformer]") {
    ViTConfig c = small_config();
    c.depth = 5;
    c.drop_path = 0.2f;
    c.dropout = 0.1f;
    c.attn_dropout = 0.05f;
    c.qkv_bias = false;
    c.gelu = GeluApproximation::Tanh;
    c.layer_norm_eps = 1e-5f;
    for (int64_t l = 0; l < c.depth; ++l) {
        INFO("block " << l);
        const BlockConfig b = c.block(l);
        CHECK(b.dim == c.dim);
        CHECK(b.heads == c.heads);
        CHECK(b.mlp_hidden_dim == c.mlp_hidden());
        CHECK_FALSE(b.qkv_bias);
        CHECK(b.dropout == c.dropout);
        CHECK(b.attn_dropout == c.attn_dropout);
        CHECK(b.gelu == GeluApproximation::Tanh);
        CHECK(b.layer_norm_eps == c.layer_norm_eps);
        CHECK(b.drop_path == Approx(0.2 * double(l) / 4));
    }
    VisionTransformer model(c, 1);
    for (int64_t l = 0; l < c.depth; ++l) {
        CHECK(model.blocks->layers[l]->drop_path1->p == c.block(l).drop_path);
        CHECK(model.blocks->layers[l]->attn->attn_drop->p == c.attn_dropout);
    }
    c.depth = 1;
    CHECK(c.block(0).drop_path == c.drop_path);
}

TEST_CASE("VisionTransformer: the position encoding is a member, not a child, its table is pos_embed",
          "[vit][layer:VisionTransformer][layer:PositionalEncoding]") {
    VisionTransformer model(small_config(), 1);
    for (const auto& [name, m] : model.named_modules()) CHECK(m != model.pos_encoding.get());
    const auto own = model.pos_encoding->named_parameters();
    REQUIRE(own.size() == 1);
    CHECK(own[0].first == "pos_embed");
    CHECK(own[0].second.same(model.parameter("pos_embed")));
}

TEST_CASE("parallel: a ViT's loss and every parameter gradient are the same bits for 1, 2, 3, 8 and 16 threads",
          "[vit][parallel]") {
    ViTConfig config = vit_config("cifar-tiny");
    config.depth = 2;
    Rng rng(5);
    Tensor images = Tensor::uniform({16, 3, 32, 32}, -1, 1, rng);
    std::vector<int64_t> labels(16);
    for (auto& l : labels) l = static_cast<int64_t>(rng.below(10));

    std::vector<std::vector<real>> reference;
    for (int threads : {1, 2, 3, 8, 16}) {
        set_num_threads(threads);
        VisionTransformer model(config, 11);
        Tensor loss = cross_entropy(model.forward(images), labels);
        loss.backward();
        std::vector<std::vector<real>> result{loss.to_vector()};
        for (auto& [name, p] : model.named_parameters()) result.push_back(p.grad().to_vector());
        set_num_threads(1);
        if (threads == 1) reference = result;
        INFO(threads << " threads");
        REQUIRE(result == reference);
    }
}

}  // namespace patchgrad::test
