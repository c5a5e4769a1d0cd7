#include <cmath>
#include <memory>

#include "catch.h"
#include "layers/layer_test_util.h"
#include "patchgrad/layers/feed_forward.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("mlp_hidden_dim: mlp_dim when given, else dim * mlp_ratio (ViT from scratch's ViTBlock arguments)",
          "[layer:FeedForward]") {
    CHECK(mlp_hidden_dim(768, 3072, 4) == 3072);
    CHECK(mlp_hidden_dim(768, 0, 4) == 3072);
    CHECK(mlp_hidden_dim(1280, 5120, 0) == 5120);
    CHECK(mlp_hidden_dim(128, 256, 4) == 256);  // mlp_dim wins over the ratio
    CHECK(mlp_hidden_dim(10, 0, 1.5) == 15);
    CHECK(mlp_hidden_dim(10, -1, 0.25) == 2);  // int(2.5), truncated like timm
}

TEST_CASE("mlp_hidden_dim: neither mlp_dim nor mlp_ratio is an error", "[layer:FeedForward][errors]") {
    require_error([] { mlp_hidden_dim(768, 0, 0); }, {"mlp_hidden_dim", "768", "mlp_dim 0", "mlp_ratio 0"});
}

TEST_CASE("FeedForward: children fc1, act, drop1, fc2, drop2 and parameters named like timm's Mlp",
          "[layer:FeedForward]") {
    Rng rng(40);
    FeedForward mlp(6, 10, rng, std::make_shared<Rng>(41), 0.1);
    CHECK(mlp.type_name() == "FeedForward");
    const auto& children = mlp.children();
    REQUIRE(children.size() == 5);
    const char* names[] = {"fc1", "act", "drop1", "fc2", "drop2"};
    const char* types[] = {"Linear", "GELU", "Dropout", "Linear", "Dropout"};
    for (int i = 0; i < 5; ++i) {
        CHECK(children[i].first == names[i]);
        CHECK(children[i].second->type_name() == types[i]);
    }
    const auto named = mlp.named_parameters();
    REQUIRE(named.size() == 4);
    CHECK(named[0].first == "fc1.weight");
    CHECK(named[0].second.shape() == Shape{10, 6});
    CHECK(named[1].first == "fc1.bias");
    CHECK(named[1].second.shape() == Shape{10});
    CHECK(named[2].first == "fc2.weight");
    CHECK(named[2].second.shape() == Shape{6, 10});
    CHECK(named[3].first == "fc2.bias");
    CHECK(named[3].second.shape() == Shape{6});
    CHECK(named[0].second.same(mlp.fc1->weight));
    CHECK(named[2].second.same(mlp.fc2->weight));
    CHECK(mlp.num_parameters() == 2 * 6 * 10 + 10 + 6);
    CHECK(mlp.drop1->p == Approx(0.1));
    CHECK(mlp.drop2->p == Approx(0.1));
}

TEST_CASE("FeedForward: forward is fc2(GELU(fc1(x))) in eval mode, both GELU forms", "[layer:FeedForward][forward]") {
    Rng rng(42);
    for (GeluApproximation a : {GeluApproximation::None, GeluApproximation::Tanh}) {
        FeedForward mlp(5, 7, rng, std::make_shared<Rng>(43), 0.5, a);
        mlp.eval();
        randomize_parameters(mlp, rng);
        const Tensor x = rand_tensor({2, 3, 5}, rng, -1, 1, false);
        std::vector<double> h = naive_linear(to_doubles(x), 6, 5, mlp.fc1->weight, mlp.fc1->bias);
        for (double& v : h)
            v = a == GeluApproximation::None
                    ? gelu_exact(v)
                    : 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::acos(-1.0)) * (v + 0.044715 * v * v * v)));
        require_close(mlp.forward(x), from_doubles({2, 3, 5}, naive_linear(h, 6, 7, mlp.fc2->weight, mlp.fc2->bias)),
                      1e-12);
    }
}

TEST_CASE("FeedForward: train/eval reaches both dropouts", "[layer:FeedForward]") {
    Rng rng(44);
    auto dropout_rng = std::make_shared<Rng>(45);
    FeedForward mlp(4, 8, rng, dropout_rng, 0.5);
    const Tensor x = rand_tensor({3, 4}, rng, -1, 1, false);
    mlp.eval();
    CHECK_FALSE(mlp.drop1->training());
    CHECK_FALSE(mlp.drop2->training());
    const Tensor y_eval = mlp.forward(x);
    CHECK(mlp.forward(x).to_vector() == y_eval.to_vector());

    mlp.train();
    CHECK(mlp.drop1->training());
    CHECK(mlp.drop2->training());
    *dropout_rng = Rng(46);
    const Tensor y_train = mlp.forward(x);
    // Both dropouts act: drop2, the last step, zeroes whole outputs; drop1 changes the
    // others by more than drop2's 1/(1-p) rescaling.
    int64_t zeroed = 0, changed = 0;
    for (int64_t i = 0; i < y_train.numel(); ++i) {
        if (y_train.data()[i] == 0)
            ++zeroed;
        else if (std::abs(y_train.data()[i] - y_eval.data()[i] / 0.5) > 1e-12)
            ++changed;
    }
    CHECK(zeroed > 0);
    CHECK(changed > 0);
    *dropout_rng = Rng(46);
    CHECK(mlp.forward(x).to_vector() == y_train.to_vector());
}

TEST_CASE("FeedForward: gradcheck w.r.t. input and every parameter, in training with dropout",
          "[layer:FeedForward][gradcheck]") {
    Rng rng(47);
    auto dropout_rng = std::make_shared<Rng>(48);
    for (GeluApproximation a : {GeluApproximation::None, GeluApproximation::Tanh}) {
        for (real p : {real(0), real(0.2)}) {
            INFO("p " << p);
            FeedForward mlp(5, 7, rng, dropout_rng, p, a);
            randomize_parameters(mlp, rng);
            check_gradients(
                [&](const std::vector<Tensor>& xs) {
                    *dropout_rng = Rng(49);
                    return mlp.forward(xs[0]);
                },
                with_parameters(rand_tensor({3, 1, 5}, rng), mlp), 50);
        }
    }
}

TEST_CASE("FeedForward: fused and step by step give the same bits, and an active drop1 takes the steps",
          "[layer:FeedForward]") {
    Rng rng(51);
    auto dropout_rng = std::make_shared<Rng>(52);
    for (const real p : {real(0), real(0.3)}) {
        FeedForward layer(5, 7, rng, dropout_rng, p);
        randomize_parameters(layer, rng);
        const Tensor x = rand_tensor({3, 2, 5}, rng, -2, 2);
        for (const bool training : {false, true}) {
            INFO("p " << p << (training ? ", training" : ", eval"));
            if (training)
                layer.train();
            else
                layer.eval();
            std::vector<std::vector<real>> results[2];
            for (const bool fused : {true, false}) {
                layer.fused = fused;
                layer.zero_grad();
                Tensor input = x.detach().requires_grad_();
                *dropout_rng = Rng(53);
                const Tensor y = layer.forward(input);
                // With drop2 inactive the output is the op's own: mlp when fused and drop1 is
                // inactive, else fc2's linear.
                if (!(training && p > 0)) CHECK(std::string(y.op()) == (fused ? "mlp" : "linear"));
                Rng weights(54);
                weighted_sum(y, rand_tensor(y.shape(), weights, -1, 1, false)).backward();
                results[fused].push_back(y.to_vector());
                results[fused].push_back(input.grad().to_vector());
                for (const Tensor& w : layer.parameters()) results[fused].push_back(w.grad().to_vector());
            }
            check_same_bits(results[0], results[1], "0: the value, 1: x's gradient, then each parameter's");
        }
    }
}

}  // namespace patchgrad
