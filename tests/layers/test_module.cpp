#include <memory>
#include <stdexcept>

#include "catch.h"
#include "layers/layer_test_util.h"
#include "patchgrad/layers/activation.h"
#include "patchgrad/layers/dropout.h"
#include "patchgrad/layers/feed_forward.h"
#include "patchgrad/layers/linear.h"
#include "patchgrad/layers/sequential.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {
// A module whose registrations the tests choose.
struct Bag : Module {
    std::string type_name() const override { return "Bag"; }
    using Module::register_module;
    using Module::register_parameter;
};
}  // namespace

TEST_CASE("Module: dotted names through nested modules, in registration order",
          "[layer:Module][ex:module-parameters]") {
    Rng rng(90);
    Bag root;
    root.register_parameter("cls_token", Tensor::zeros({1, 1, 4}));
    auto blocks = root.register_module("blocks", std::make_shared<Sequential>());
    blocks->add(std::make_shared<FeedForward>(4, 8, rng, nullptr));
    blocks->add(std::make_shared<FeedForward>(4, 8, rng, nullptr));
    root.register_module("head", std::make_shared<Linear>(4, 3, rng));

    std::vector<std::string> names;
    for (const auto& [name, p] : root.named_parameters()) names.push_back(name);
    CHECK(names == std::vector<std::string>{"cls_token", "blocks.0.fc1.weight", "blocks.0.fc1.bias",
                                            "blocks.0.fc2.weight", "blocks.0.fc2.bias", "blocks.1.fc1.weight",
                                            "blocks.1.fc1.bias", "blocks.1.fc2.weight", "blocks.1.fc2.bias",
                                            "head.weight", "head.bias"});
    CHECK(root.num_parameters() == 4 + 2 * (2 * 4 * 8 + 8 + 4) + 4 * 3 + 3);
    CHECK(root.parameters().size() == 11);
    CHECK(root.parameter("blocks.1.fc2.weight").shape() == Shape{4, 8});
    CHECK(root.parameter("head.bias").same(root.named_parameters().back().second));

    std::vector<std::string> modules;
    for (const auto& [name, m] : root.named_modules()) modules.push_back(name + ":" + m->type_name());
    CHECK(modules == std::vector<std::string>{"blocks:Sequential", "blocks.0:FeedForward", "blocks.0.fc1:Linear",
                                              "blocks.0.act:GELU", "blocks.0.drop1:Dropout", "blocks.0.fc2:Linear",
                                              "blocks.0.drop2:Dropout", "blocks.1:FeedForward", "blocks.1.fc1:Linear",
                                              "blocks.1.act:GELU", "blocks.1.drop1:Dropout", "blocks.1.fc2:Linear",
                                              "blocks.1.drop2:Dropout", "head:Linear"});
}

TEST_CASE("Module: parameters are the modules' own tensors, own ones before the children's",
          "[layer:Module][ex:module-parameters]") {
    Rng rng(94);
    Bag empty;
    CHECK(empty.named_parameters().empty());
    CHECK(empty.num_parameters() == 0);

    // A parameter registered after a child still comes first: own parameters, then children.
    Bag root;
    auto inner = root.register_module("inner", std::make_shared<Bag>());
    auto leaf = inner->register_module("leaf", std::make_shared<Linear>(2, 3, rng));
    Tensor scale = root.register_parameter("scale", Tensor::ones({1}));
    Tensor shift = inner->register_parameter("shift", Tensor::zeros({3}));
    const auto named = root.named_parameters();
    REQUIRE(named.size() == 4);
    CHECK(named[0].first == "scale");
    CHECK(named[1].first == "inner.shift");
    CHECK(named[2].first == "inner.leaf.weight");
    CHECK(named[3].first == "inner.leaf.bias");
    // The very tensors, not copies: an optimizer updating them must update the model.
    CHECK(named[0].second.same(scale));
    CHECK(named[1].second.same(shift));
    CHECK(named[2].second.same(leaf->named_parameters()[0].second));
    CHECK(named[3].second.requires_grad());
    // Names relative to the module asked.
    CHECK(inner->named_parameters()[1].first == "leaf.weight");
}

TEST_CASE("Module: train/eval reaches grandchildren", "[layer:Module]") {
    Rng rng(91);
    Sequential outer;
    auto mlp = std::make_shared<FeedForward>(4, 8, rng, std::make_shared<Rng>(92), 0.1);
    outer.add(mlp);
    outer.eval();
    CHECK_FALSE(outer.training());
    CHECK_FALSE(mlp->training());
    CHECK_FALSE(mlp->drop1->training());
    outer.train();
    CHECK(mlp->drop2->training());
}

TEST_CASE("EvalModeGuard: eval mode for its life, then the mode the module had, even after a throw", "[layer:Module]") {
    Rng rng(94);
    Sequential outer;
    auto mlp = std::make_shared<FeedForward>(4, 8, rng, std::make_shared<Rng>(95), 0.1);
    outer.add(mlp);
    for (const bool before : {true, false}) {
        outer.train(before);
        {
            EvalModeGuard guard(outer);
            CHECK_FALSE(outer.training());
            CHECK_FALSE(mlp->drop1->training());
        }
        CHECK(outer.training() == before);
        CHECK(mlp->drop2->training() == before);
    }
    outer.train();
    try {
        EvalModeGuard guard(outer);
        throw std::runtime_error("a failed evaluation");
    } catch (const std::runtime_error&) {
    }
    CHECK(outer.training());
    CHECK(mlp->drop1->training());
}

TEST_CASE("Module: zero_grad drops every parameter's gradient", "[layer:Module][ex:module-parameters]") {
    Rng rng(93);
    Sequential seq;
    seq.add(std::make_shared<Linear>(3, 4, rng)).add(std::make_shared<Tanh>()).add(std::make_shared<Linear>(4, 2, rng));
    weighted_sum(seq.forward(rand_tensor({5, 3}, rng, -1, 1, false)), Tensor::ones({5, 2})).backward();
    for (const Tensor& p : seq.parameters()) CHECK(p.has_grad());
    seq.zero_grad();
    for (const Tensor& p : seq.parameters()) CHECK_FALSE(p.has_grad());
}

TEST_CASE("Module: bad names and unknown parameters are errors", "[layer:Module][errors]") {
    Rng rng(94);
    Bag bag;
    bag.register_parameter("w", Tensor::zeros({2}));
    require_error([&] { bag.register_parameter("w", Tensor::zeros({2})); }, {"Bag", "'w'", "twice"});
    require_error([&] { bag.register_parameter("a.b", Tensor::zeros({2})); }, {"Bag", "'a.b'"});
    bag.register_module("fc", std::make_shared<Linear>(2, 2, rng));
    require_error([&] { bag.register_module("fc", std::make_shared<Identity>()); }, {"Bag", "'fc'", "twice"});
    require_error([&] { bag.parameter("fc.nope"); }, {"Bag", "'fc.nope'"});
}

}  // namespace patchgrad
