#include <cmath>

#include "catch.h"
#include "layers/layer_test_util.h"
#include "patchgrad/layers/linear.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("Linear: parameters are weight [out, in] and bias [out], like torch.nn.Linear", "[layer:Linear]") {
    Rng rng(1);
    Linear fc(5, 7, rng);
    const auto named = fc.named_parameters();
    REQUIRE(named.size() == 2);
    CHECK(named[0].first == "weight");
    CHECK(named[0].second.shape() == Shape{7, 5});
    CHECK(named[1].first == "bias");
    CHECK(named[1].second.shape() == Shape{7});
    CHECK(named[0].second.same(fc.weight));
    CHECK(named[1].second.same(fc.bias));
    CHECK(fc.weight.requires_grad());
    CHECK(fc.bias.requires_grad());
    CHECK(fc.num_parameters() == 7 * 5 + 7);
    CHECK(fc.in_features == 5);
    CHECK(fc.out_features == 7);
    CHECK(fc.type_name() == "Linear");

    Linear no_bias(5, 7, rng, false);
    CHECK_FALSE(no_bias.bias.defined());
    REQUIRE(no_bias.named_parameters().size() == 1);
    CHECK(no_bias.named_parameters()[0].first == "weight");
    CHECK(no_bias.num_parameters() == 35);
}

TEST_CASE("Linear: init is truncated normal (std 0.02, cut at +-2) with zero bias, reproducible from the seed",
          "[layer:Linear]") {
    Rng rng(2);
    Linear fc(256, 128, rng);
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < fc.weight.numel(); ++i) {
        s += fc.weight.data()[i];
        s2 += double(fc.weight.data()[i]) * fc.weight.data()[i];
    }
    const double n = double(fc.weight.numel()), mean = s / n, std = std::sqrt(s2 / n - mean * mean);
    // 32768 draws: the standard error of the mean is 0.02/181 ~ 1.1e-4, of the std ~ 0.4%.
    CHECK(std::abs(mean) < 6e-4);
    CHECK(std::abs(std - 0.02) < 0.02 * 0.03);
    for (int64_t i = 0; i < fc.bias.numel(); ++i) CHECK(fc.bias.data()[i] == 0);

    Rng same(2);
    Linear again(256, 128, same);
    CHECK(again.weight.to_vector() == fc.weight.to_vector());
}

TEST_CASE("Linear: forward matches a naive loop, with and without bias", "[layer:Linear][forward]") {
    Rng rng(3);
    for (bool bias : {true, false}) {
        INFO("bias " << bias);
        Linear fc(5, 7, rng, bias);
        randomize_parameters(fc, rng);
        const Tensor x = rand_tensor({2, 3, 5}, rng, -2, 2, false);
        const Tensor y = fc.forward(x);
        require_close(y, from_doubles({2, 3, 7}, naive_linear(to_doubles(x), 6, 5, fc.weight, fc.bias)), 1e-12);
    }
}

TEST_CASE("Linear: gradcheck w.r.t. input, weight and bias", "[layer:Linear][gradcheck]") {
    Rng rng(4);
    for (const Shape& shape : {Shape{7, 11}, Shape{3, 1, 5}, Shape{2, 3, 4}}) {
        for (bool bias : {true, false}) {
            INFO("x " << shape_str(shape) << " bias " << bias);
            Linear fc(shape.back(), 3, rng, bias);
            randomize_parameters(fc, rng);
            check_gradients([&](const std::vector<Tensor>& xs) { return fc.forward(xs[0]); },
                            with_parameters(rand_tensor(shape, rng), fc), 5);
        }
    }
}

TEST_CASE("Linear: errors name the sizes", "[layer:Linear][errors]") {
    Rng rng(5);
    require_error([&] { Linear(0, 3, rng); }, {"Linear", "0", "3"});
    require_error([&] { Linear(4, -1, rng); }, {"Linear", "4", "-1"});
    Linear fc(4, 3, rng);
    require_error([&] { fc.forward(Tensor::zeros({2, 5})); }, {"linear", "[2, 5]", "[3, 4]"});
}

}  // namespace patchgrad
