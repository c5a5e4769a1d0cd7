#include "catch.h"
#include "patchgrad/layers/state_dict.h"
#include "patchgrad/vit/vit_block.h"
#include "test_util.h"
#include "vit_test_util.h"

namespace patchgrad::test {

namespace {

// D 8, 2 heads, MLP 16, no dropout.
BlockConfig small_block() {
    BlockConfig c;
    c.dim = 8;
    c.heads = 2;
    c.mlp_hidden_dim = 16;
    return c;
}

std::shared_ptr<ViTBlock> random_block(uint64_t seed, bool qkv_bias = true,
                                       GeluApproximation gelu = GeluApproximation::None) {
    Rng rng(seed);
    BlockConfig c = small_block();
    c.qkv_bias = qkv_bias;
    c.gelu = gelu;
    auto block = std::make_shared<ViTBlock>(c, rng, nullptr);
    scramble_parameters(*block, rng);
    // The steps of eqs. (2) and (3), which exercise vit-block-forward writes (and a student build
    // runs instead of the fused path); a test below holds the fused path to their bits.
    block->fused = false;
    return block;
}

}  // namespace

TEST_CASE("ViTBlock: children and parameter names follow timm's Block", "[vit][layer:ViTBlock]") {
    Rng rng(1);
    ViTBlock block(small_block(), rng, nullptr);
    std::vector<std::pair<std::string, Shape>> expected{
        {"norm1.weight", {8}},        {"norm1.bias", {8}},     {"attn.qkv.weight", {24, 8}}, {"attn.qkv.bias", {24}},
        {"attn.proj.weight", {8, 8}}, {"attn.proj.bias", {8}}, {"norm2.weight", {8}},        {"norm2.bias", {8}},
        {"mlp.fc1.weight", {16, 8}},  {"mlp.fc1.bias", {16}},  {"mlp.fc2.weight", {8, 16}},  {"mlp.fc2.bias", {8}}};
    auto params = block.named_parameters();
    REQUIRE(params.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        CHECK(params[i].first == expected[i].first);
        CHECK(params[i].second.shape() == expected[i].second);
    }
    BlockConfig without_bias = small_block();
    without_bias.qkv_bias = false;
    ViTBlock no_bias(without_bias, rng, nullptr);
    CHECK(no_bias.num_parameters() == block.num_parameters() - 24);
    CHECK_THROWS(no_bias.parameter("attn.qkv.bias"));
    CHECK(block.norm1->eps == Approx(1e-6));
}

TEST_CASE("ViTBlock: forward is the paper's eqs. (2) and (3) composed from the children",
          "[vit][layer:ViTBlock][forward][ex:vit-block-forward]") {
    auto block = random_block(2);
    Rng rng(3);
    Tensor z = rand_tensor({2, 7, 8}, rng, -1, 1, false);
    const std::vector<bool> mask{true, false, true, true, false, true};
    for (const std::vector<bool>& m : {std::vector<bool>{}, mask}) {
        INFO("mask entries " << m.size());
        const Tensor out = block->forward(z, m);
        // [hide:vit-block-forward]
        Tensor z_prime = block->attn->forward(block->norm1->forward(z), m) + z;           // (2)
        Tensor expected = block->mlp->forward(block->norm2->forward(z_prime)) + z_prime;  // (3)
        require_close(out, expected, 1e-12);
        // [/hide:vit-block-forward]
        // The reference's checksum: what a handout of vit-block-forward keeps of this test.
        CHECK(checksum(out) == Approx(m.empty() ? -159.72331150816376 : -194.00815078697389).epsilon(1e-10));
    }
    CHECK(max_abs_difference(block->forward(z, mask), block->forward(z)) > 1e-3);
    require_close(block->forward(z), block->forward(z, {}), 0);
}

TEST_CASE("ViTBlock: with the attention and MLP outputs zeroed, the residual block is the identity",
          "[vit][layer:ViTBlock][forward][ex:vit-block-forward]") {
    auto block = random_block(4);
    for (Tensor p :
         {block->attn->proj->weight, block->attn->proj->bias, block->mlp->fc2->weight, block->mlp->fc2->bias})
        for (int64_t i = 0; i < p.numel(); ++i) p.data()[i] = 0;
    Rng rng(5);
    Tensor z = rand_tensor({3, 5, 8}, rng, -1, 1, false);
    require_close(block->forward(z), z, 0);
}

namespace {

// A copy of `block` whose layer `layer` ("attn.proj" or "mlp.fc2") outputs zeros: it returns z
// plus the other residual branch alone.
std::shared_ptr<ViTBlock> without_branch(const ViTBlock& block, const std::string& layer) {
    Rng unused(0);
    auto copy = std::make_shared<ViTBlock>(small_block(), unused, nullptr);
    copy->fused = block.fused;
    load_state_dict(*copy, state_dict(block));
    for (Tensor p : {copy->parameter(layer + ".weight"), copy->parameter(layer + ".bias")})
        for (int64_t i = 0; i < p.numel(); ++i) p.data()[i] = 0;
    return copy;
}

}  // namespace

TEST_CASE("ViTBlock: ViT from scratch's forward feeds LN(x) to the MLP, which is not eq. (3)",
          "[vit][layer:ViTBlock][documents][ex:vit-block-forward]") {
    auto block = random_block(6);
    Rng rng(7);
    Tensor z = rand_tensor({2, 7, 8}, rng, -1, 1, false);
    // ViT from scratch: out = self.mhsa(self.layernorm1(x)) + x
    //           out = self.feedforward(self.layernorm2(x)) + out
    // Both branches read x: x + the attention branch + the MLP branch.
    Tensor attention_only = without_branch(*block, "mlp.fc2")->forward(z);  // z + MSA(LN(z))
    Tensor mlp_only = without_branch(*block, "attn.proj")->forward(z);      // z + MLP(LN(z))
    Tensor scratch = attention_only + mlp_only - z;
    CHECK(max_abs_difference(block->forward(z), scratch) > 1e-2);
    CHECK(checksum(scratch) == Approx(94.289947591432338).epsilon(1e-10));  // the reference's (test_util.h)
}

TEST_CASE("ViTBlock: gradcheck w.r.t. the input and every parameter",
          "[vit][layer:ViTBlock][gradcheck][ex:vit-block-forward]") {
    const std::vector<bool> mask{true, false, true, true, false, true};
    for (const std::vector<bool>& m : {std::vector<bool>{}, mask}) {
        for (bool qkv_bias : {true, false}) {
            INFO("mask entries " << m.size() << ", qkv_bias " << qkv_bias);
            auto block = random_block(8, qkv_bias, qkv_bias ? GeluApproximation::None : GeluApproximation::Tanh);
            Rng rng(9);
            std::vector<Tensor> inputs{rand_tensor({2, 7, 8}, rng)};
            for (const Tensor& p : block->parameters()) inputs.push_back(p);
            check_gradients([&](const std::vector<Tensor>& xs) { return block->forward(xs[0], m); }, inputs);
        }
    }
}

TEST_CASE("ViTBlock: errors name the sizes", "[vit][layer:ViTBlock][errors]") {
    Rng rng(10);
    BlockConfig bad = small_block();
    bad.dim = 10;
    bad.heads = 3;
    require_error([&] { ViTBlock(bad, rng, nullptr); }, {"MultiHeadSelfAttention", "dim 10", "heads 3"});
    ViTBlock block(small_block(), rng, nullptr);
    require_error(
        [&] {
            block.forward(Tensor::zeros({2, 7, 8}), {true, false});
        },
        {"patch_mask", "2 entries", "6 patches"});
}

TEST_CASE("ViTBlock: skip connections added inside the products give the same bits as the adds",
          "[vit][layer:ViTBlock][forward]") {
    // fused (the default) against the adds of forward's steps, with the attention and MLP
    // fused or not, with LSA and a mask, dropout, drop path, training and eval: the output and
    // every gradient. The products add where nothing between them and the add is active.
    for (int c = 0; c < 4; ++c)
        for (const bool training : {true, false})
            for (const bool children_fused : {true, false}) {
                BlockConfig config = small_block();
                config.lsa = c == 1;
                config.dropout = c == 2 ? real(0.2) : 0;
                config.drop_path = c == 3 ? real(0.3) : 0;
                INFO("LSA and a mask " << (c == 1) << ", dropout " << config.dropout << ", drop path "
                                       << config.drop_path << ", training " << training << ", attention and MLP fused "
                                       << children_fused);
                const std::vector<bool> mask =
                    c == 1 ? std::vector<bool>{true, false, true, true} : std::vector<bool>{};
                std::vector<std::vector<real>> results[2];
                for (const bool fused : {true, false}) {
                    Rng rng(31);
                    auto dropout_rng = std::make_shared<Rng>(32);
                    ViTBlock block(config, rng, dropout_rng);
                    scramble_parameters(block, rng);
                    block.fused = fused;
                    block.attn->fused = block.mlp->fused = children_fused;
                    if (training)
                        block.train();
                    else
                        block.eval();
                    Tensor z = rand_tensor({3, 5, 8}, rng);
                    const Tensor y = block.forward(z, mask);
                    // The fused path really ran (where the reference's ops run: not in a handout of
                    // the exercises below, whose steps give "add").
                    // [hide:vit-block-forward]
                    // [hide:matmul-backward]
                    // [hide:gelu-backward]
                    const bool dropping = training && (config.dropout > 0 || config.drop_path > 0);
                    CHECK(std::string(y.op()) == (fused && children_fused && !dropping ? "mlp" : "add"));
                    // [/hide:gelu-backward]
                    // [/hide:matmul-backward]
                    // [/hide:vit-block-forward]
                    weighted_sum(y, rand_tensor(y.shape(), rng, -1, 1, false)).backward();
                    results[fused].push_back(y.to_vector());
                    results[fused].push_back(z.grad().to_vector());
                    for (const Tensor& w : block.parameters()) results[fused].push_back(w.grad().to_vector());
                }
                check_same_bits(results[0], results[1], "0: the value, 1: z's gradient, then each parameter's");
            }
}

TEST_CASE("ViTBlock: drop path drops whole residual branches per sample while training, never in eval",
          "[vit][layer:ViTBlock][drop_path][ex:vit-block-forward]") {
    Rng rng(21);
    auto dropout_rng = std::make_shared<Rng>(22);
    BlockConfig dropping = small_block();
    dropping.drop_path = 0.5;
    ViTBlock block(dropping, rng, dropout_rng);
    block.fused = false;  // (the exercise's steps, in eval too)
    scramble_parameters(block, rng);
    Tensor z = Tensor::uniform({64, 5, 8}, -1, 1, rng);
    Tensor trained = block.forward(z);
    // A sample whose two branches were both dropped comes out unchanged; with p = 0.5 per
    // branch that is about a quarter of the samples, and the others change.
    int64_t unchanged = 0;
    for (int64_t b = 0; b < 64; ++b) {
        bool same = true;
        for (int64_t i = 0; i < 5 * 8; ++i) same &= trained.data()[b * 40 + i] == z.data()[b * 40 + i];
        unchanged += same;
    }
    REQUIRE(unchanged > 4);
    REQUIRE(unchanged < 32);

    block.eval();
    Tensor a = block.forward(z), b = block.forward(z);
    require_close(a, b, 0);
    ViTBlock plain(small_block(), rng, nullptr);
    plain.fused = false;
    load_state_dict(plain, state_dict(block));
    plain.eval();
    require_close(plain.forward(z), a, 0);
}

}  // namespace patchgrad::test
