#include <cmath>

#include "catch.h"
#include "patchgrad/vit/positional_encoding.h"
#include "test_util.h"
#include "vit_test_util.h"

namespace patchgrad::test {

namespace {

// ViTs Explained's get_sinusoid_encoding: angle(pos, j) = pos / 10000^(2 (j // 2) / D), then sin on
// the even columns and cos on the odd ones.
Tensor explained_sinusoid_table(int64_t num_tokens, int64_t D) {
    Tensor t = Tensor::zeros({1, num_tokens, D});
    for (int64_t pos = 0; pos < num_tokens; ++pos)
        for (int64_t j = 0; j < D; ++j) {
            const double angle = pos / std::pow(10000.0, 2.0 * (j / 2) / D);
            t.at({0, pos, j}) = static_cast<real>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
        }
    return t;
}

// ViT from scratch's commented-out "Method 1" loop, which writes sin into both columns of a pair.
Tensor scratch_method1_table(int64_t num_patches, int64_t D) {
    Tensor t = Tensor::zeros({1, num_patches, D});
    for (int64_t p = 0; p < num_patches; ++p)
        for (int64_t i = 0; i < D; i += 2) {
            t.at({0, p, i}) = static_cast<real>(std::sin(p / std::pow(10000.0, double(i) / D)));
            t.at({0, p, i + 1}) = static_cast<real>(std::sin(p / std::pow(10000.0, double(i) / D)));
        }
    return t;
}

}  // namespace

TEST_CASE("sinusoidal_positional_encoding: hand-computed values",
          "[vit][layer:PositionalEncoding][forward][ex:sinusoidal-encoding]") {
    Tensor pe = sinusoidal_positional_encoding(3, 4);
    REQUIRE(pe.shape() == Shape{1, 3, 4});
    // pos 0: sin 0 = 0 on even dims, cos 0 = 1 on odd dims
    require_close(select(pe, 1, 0), Tensor::from_vector({1, 4}, {0, 1, 0, 1}), 1e-15);
    // pos 1: angles 1 and 1 / 10000^(2/4) = 0.01
    require_close(select(pe, 1, 1),
                  Tensor::from_vector({1, 4}, {std::sin(1.0), std::cos(1.0), std::sin(0.01), std::cos(0.01)}), 1e-15);
    // pos 2: angles 2 and 0.02
    require_close(select(pe, 1, 2),
                  Tensor::from_vector({1, 4}, {std::sin(2.0), std::cos(2.0), std::sin(0.02), std::cos(0.02)}), 1e-15);
}

TEST_CASE("sinusoidal_positional_encoding: equals ViTs Explained's get_sinusoid_encoding, odd dims included",
          "[vit][layer:PositionalEncoding][forward][ex:sinusoidal-encoding]") {
    for (int64_t D : {8, 7, 1, 64}) {
        INFO("D " << D);
        require_close(sinusoidal_positional_encoding(17, D), explained_sinusoid_table(17, D), 1e-15);
    }
}

TEST_CASE("sinusoidal_positional_encoding: ViT from scratch's Method 1 puts sin in the odd dims, so each pair repeats",
          "[vit][layer:PositionalEncoding][documents]") {
    const int64_t N = 17, D = 8;
    Tensor ours = sinusoidal_positional_encoding(N, D);
    Tensor method1 = scratch_method1_table(N, D);
    for (int64_t pos = 0; pos < N; ++pos)
        for (int64_t i = 0; i < D; i += 2) {
            CHECK(method1.at({0, pos, i}) == Approx(ours.at({0, pos, i})).margin(1e-15));  // sin: the same
            CHECK(method1.at({0, pos, i + 1}) == method1.at({0, pos, i}));                 // a repeated column
        }
    CHECK(ours.at({0, 0, 1}) == 1);     // cos 0
    CHECK(method1.at({0, 0, 1}) == 0);  // sin 0
    CHECK(max_abs_difference(ours, method1) > 0.5);
}

TEST_CASE("PositionalEncoding: learnable table is trunc_normal(std 0.02), fixed one draws nothing",
          "[vit][layer:PositionalEncoding]") {
    Rng rng(21);
    PositionalEncoding learned(1000, 50, true, rng);
    REQUIRE(learned.learnable);
    REQUIRE(learned.table.shape() == Shape{1, 1000, 50});
    double sum = 0, sum_sq = 0;
    for (int64_t i = 0; i < learned.table.numel(); ++i) {
        const double v = learned.table.data()[i];
        REQUIRE(std::abs(v) <= 2);
        sum += v;
        sum_sq += v * v;
    }
    const double n = double(learned.table.numel()), mean = sum / n, std = std::sqrt(sum_sq / n - mean * mean);
    CHECK(std::abs(mean) < 0.001);
    CHECK(std::abs(std - 0.02) < 0.0005);

    const auto state = rng.state();
    PositionalEncoding fixed(17, 8, false, rng);
    CHECK(rng.state() == state);
    CHECK_FALSE(fixed.learnable);
    CHECK_FALSE(fixed.table.requires_grad());
    require_close(fixed.table, sinusoidal_positional_encoding(17, 8), 0);
}

TEST_CASE("PositionalEncoding: a Layer whose only parameter is the learned table, pos_embed",
          "[vit][layer:PositionalEncoding]") {
    Rng rng(24);
    PositionalEncoding learned(5, 4, true, rng), fixed(5, 4, false, rng);
    CHECK(learned.type_name() == "PositionalEncoding");
    const auto params = learned.named_parameters();
    REQUIRE(params.size() == 1);
    CHECK(params[0].first == "pos_embed");
    CHECK(params[0].second.same(learned.table));
    CHECK(learned.table.requires_grad());
    CHECK(fixed.num_parameters() == 0);
    Layer& layer = fixed;
    require_close(layer.forward(Tensor::zeros({2, 5, 4})), broadcast_to(fixed.table, {2, 5, 4}), 0);
}

TEST_CASE("PositionalEncoding: forward adds E_pos to every image, gradcheck w.r.t. x and the table",
          "[vit][layer:PositionalEncoding][forward][gradcheck]") {
    Rng rng(22);
    PositionalEncoding pe(7, 8, true, rng);
    Tensor x = rand_tensor({3, 7, 8}, rng);
    Tensor y = pe.forward(x);
    for (int64_t b = 0; b < 3; ++b)
        for (int64_t n = 0; n < 7; ++n)
            for (int64_t d = 0; d < 8; ++d) REQUIRE(y.at({b, n, d}) == x.at({b, n, d}) + pe.table.at({0, n, d}));
    pe.table.requires_grad_(true);
    check_gradients([&](const std::vector<Tensor>& xs) { return pe.forward(xs[0]); }, {x, pe.table});
}

TEST_CASE("PositionalEncoding: errors name the sizes", "[vit][layer:PositionalEncoding][errors]") {
    Rng rng(23);
    PositionalEncoding pe(17, 8, false, rng);
    require_error([&] { pe.forward(Tensor::zeros({2, 5, 8})); }, {"PositionalEncoding", "[B, 17, 8]", "[2, 5, 8]"});
    require_error([&] { pe.forward(Tensor::zeros({17, 8})); }, {"PositionalEncoding", "[17, 8]"});
    require_error([&] { sinusoidal_positional_encoding(4, 0); }, {"sinusoidal_positional_encoding", "dim (0)"});
    require_error([&] { PositionalEncoding(0, 8, true, rng); }, {"PositionalEncoding", "num_positions (0)"});
}

}  // namespace patchgrad::test
