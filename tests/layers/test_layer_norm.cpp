#include <cmath>

#include "catch.h"
#include "layers/layer_test_util.h"
#include "patchgrad/layers/layer_norm.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("LayerNorm: parameters weight = 1 and bias = 0 of shape [dim]", "[layer:LayerNorm]") {
    LayerNorm norm(6);
    const auto named = norm.named_parameters();
    REQUIRE(named.size() == 2);
    CHECK(named[0].first == "weight");
    CHECK(named[1].first == "bias");
    CHECK(named[0].second.shape() == Shape{6});
    CHECK(named[1].second.shape() == Shape{6});
    CHECK(norm.weight.to_vector() == std::vector<real>(6, 1));
    CHECK(norm.bias.to_vector() == std::vector<real>(6, 0));
    CHECK(norm.num_parameters() == 12);
    CHECK(norm.eps == real(1e-5));
    CHECK(norm.type_name() == "LayerNorm");
}

TEST_CASE("LayerNorm: forward normalises each token over the last dimension", "[layer:LayerNorm][forward]") {
    Rng rng(6);
    for (real eps : {real(1e-5), real(0.5)}) {
        INFO("eps " << eps);
        LayerNorm norm(7, eps);
        randomize_parameters(norm, rng, -2, 2);
        const Tensor x = rand_tensor({2, 3, 7}, rng, -3, 3, false);
        const Tensor y = norm.forward(x);
        std::vector<double> expected(x.numel());
        for (int64_t r = 0; r < 6; ++r) {
            double mean = 0, var = 0;
            for (int64_t j = 0; j < 7; ++j) mean += x.data()[r * 7 + j] / 7.0;
            for (int64_t j = 0; j < 7; ++j) var += std::pow(x.data()[r * 7 + j] - mean, 2) / 7.0;
            for (int64_t j = 0; j < 7; ++j)
                expected[r * 7 + j] =
                    (x.data()[r * 7 + j] - mean) / std::sqrt(var + eps) * norm.weight.data()[j] + norm.bias.data()[j];
        }
        require_close(y, from_doubles(x.shape(), expected), 1e-12);
    }
}

TEST_CASE("LayerNorm: gradcheck w.r.t. input, weight and bias", "[layer:LayerNorm][gradcheck]") {
    Rng rng(7);
    for (const Shape& shape : {Shape{4, 11}, Shape{3, 1, 5}, Shape{2, 3, 4}}) {
        INFO("x " << shape_str(shape));
        LayerNorm norm(shape.back());
        randomize_parameters(norm, rng, -2, 2);
        check_gradients([&](const std::vector<Tensor>& xs) { return norm.forward(xs[0]); },
                        with_parameters(rand_tensor(shape, rng, -2, 2), norm), 8);
    }
}

TEST_CASE("LayerNorm: errors name the sizes", "[layer:LayerNorm][errors]") {
    require_error([] { LayerNorm(0); }, {"LayerNorm", "0"});
    LayerNorm norm(4);
    require_error([&] { norm.forward(Tensor::zeros({2, 5})); }, {"layer_norm", "[2, 5]", "[4]"});
}

}  // namespace patchgrad
