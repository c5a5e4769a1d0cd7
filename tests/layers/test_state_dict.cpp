// Tests for state_dict.cpp, on a small module tree defined here (so they depend on nothing
// but Module): parameters "scale" and "blocks.{0,1}.weight/bias".
#include "patchgrad/layers/state_dict.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "catch.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;
namespace fs = std::filesystem;

struct Affine : Module {
    Affine(int64_t out, int64_t in, Rng& rng) {
        register_parameter("weight", Tensor::uniform({out, in}, -1, 1, rng));
        register_parameter("bias", Tensor::uniform({out}, -1, 1, rng));
    }
    std::string type_name() const override { return "Affine"; }
};

struct Stack : Module {
    std::string type_name() const override { return "Stack"; }
    void add(std::shared_ptr<Module> m) { register_module(std::to_string(n++), std::move(m)); }
    int n = 0;
};

struct Net : Module {
    // width changes the shape of blocks.1.weight, for the mismatch tests
    Net(uint64_t seed, int64_t width = 4) {
        Rng rng(seed);
        register_parameter("scale", Tensor::uniform({1}, -1, 1, rng));
        auto blocks = std::make_shared<Stack>();
        blocks->add(std::make_shared<Affine>(3, 2, rng));
        blocks->add(std::make_shared<Affine>(width, 3, rng));
        register_module("blocks", blocks);
    }
    std::string type_name() const override { return "Net"; }
};

void require_same_values(const Module& a, const Module& b) {
    const auto pa = a.named_parameters(), pb = b.named_parameters();
    REQUIRE(pa.size() == pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
        REQUIRE(pa[i].first == pb[i].first);
        CHECK(pa[i].second.to_vector() == pb[i].second.to_vector());
    }
}

TEST_CASE("state_dict: dotted names in registration order, values copied", "[layer:state_dict][ex:module-parameters]") {
    Net net(1);
    NamedTensors sd = state_dict(net);
    REQUIRE(sd.tensors.size() == 5);
    CHECK(sd.tensors[0].first == "scale");
    CHECK(sd.tensors[1].first == "blocks.0.weight");
    CHECK(sd.tensors[2].first == "blocks.0.bias");
    CHECK(sd.tensors[3].first == "blocks.1.weight");
    CHECK(sd.tensors[4].first == "blocks.1.bias");
    CHECK(sd.get("blocks.1.weight").shape() == Shape{4, 3});
    CHECK(sd.get("blocks.0.bias").to_vector() == net.parameter("blocks.0.bias").to_vector());
    // A copy, not the parameter itself: changing it leaves the model alone.
    CHECK_FALSE(sd.get("scale").same(net.parameter("scale")));
    CHECK_FALSE(sd.get("scale").requires_grad());
    const real before = net.parameter("scale").item();
    sd.get("scale").data()[0] = before + 1;
    CHECK(net.parameter("scale").item() == before);
}

TEST_CASE("load_state_dict: copies values into the existing parameters", "[layer:state_dict][ex:module-parameters]") {
    Net source(1), target(2);
    const Tensor weight_before = target.parameter("blocks.1.weight");
    load_state_dict(target, state_dict(source));
    require_same_values(target, source);
    // The same tensor objects, so an optimizer holding them sees the new values.
    CHECK(target.parameter("blocks.1.weight").same(weight_before));
    CHECK(target.parameter("blocks.1.weight").requires_grad());

    // Order in the file does not matter.
    Net shuffled(3);
    NamedTensors sd = state_dict(source);
    std::reverse(sd.tensors.begin(), sd.tensors.end());
    load_state_dict(shuffled, sd);
    require_same_values(shuffled, source);
}

TEST_CASE("load_state_dict: errors name the tensor and leave the model unchanged", "[layer:state_dict][errors]") {
    Net source(1), target(2), reference(2);

    SECTION("missing key") {
        NamedTensors sd = state_dict(source);
        sd.tensors.erase(sd.tensors.begin() + 2);
        require_error([&] { load_state_dict(target, sd); }, {"load_state_dict", "blocks.0.bias", "missing"});
    }
    SECTION("unexpected key") {
        NamedTensors sd = state_dict(source);
        sd.tensors.emplace_back("blocks.2.weight", Tensor::ones({1}));
        require_error([&] { load_state_dict(target, sd); }, {"load_state_dict", "unexpected", "blocks.2.weight"});
    }
    SECTION("shape mismatch, also when not strict") {
        Net wide(1, 8);
        const NamedTensors sd = state_dict(wide);
        for (bool strict : {true, false})
            require_error([&] { load_state_dict(target, sd, strict); },
                          {"load_state_dict: blocks.1.weight has shape [8, 3] in the file but [4, 3] in the model"});
    }
    SECTION("duplicate key") {
        NamedTensors sd = state_dict(source);
        sd.tensors.push_back(sd.tensors[0]);
        require_error([&] { load_state_dict(target, sd, false); }, {"load_state_dict", "scale appears twice"});
    }
    require_same_values(target, reference);
}

TEST_CASE("load_state_dict: not strict skips missing and unexpected keys", "[layer:state_dict]") {
    Net source(1), target(2), reference(2);
    NamedTensors sd = state_dict(source);
    sd.tensors.erase(sd.tensors.begin());  // scale missing
    sd.tensors.emplace_back("extra", Tensor::ones({2}));
    load_state_dict(target, sd, false);
    CHECK(target.parameter("scale").item() == reference.parameter("scale").item());
    CHECK(target.parameter("blocks.1.bias").to_vector() == source.parameter("blocks.1.bias").to_vector());
}

TEST_CASE("save_module: round trip through a safetensors file with metadata", "[layer:state_dict]") {
    TempDir temp;
    const fs::path& dir = temp.path;
    const std::string path = (dir / "net.safetensors").string();

    Net source(1), target(2);
    save_module(path, source, {{"config", "net"}, {"step", "7"}});
    const auto metadata = load_module(path, target);
    CHECK(metadata.at("config") == "net");
    CHECK(metadata.at("step") == "7");
    require_same_values(target, source);

    Net wide(1, 8);
    require_error([&] { load_module(path, wide); }, {"blocks.1.weight has shape [4, 3] in the file but [8, 3]"});
    require_error([&] { load_module((dir / "none.safetensors").string(), target); },
                  {"load_safetensors", "no such file"});
}

}  // namespace
}  // namespace patchgrad
