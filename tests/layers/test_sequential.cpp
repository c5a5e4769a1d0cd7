#include <cmath>
#include <memory>

#include "catch.h"
#include "layers/layer_test_util.h"
#include "patchgrad/layers/activation.h"
#include "patchgrad/layers/dropout.h"
#include "patchgrad/layers/linear.h"
#include "patchgrad/layers/sequential.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("Sequential: children are named 0, 1, 2 like torch.nn.Sequential", "[layer:Sequential]") {
    Rng rng(30);
    Sequential head;
    head.add(std::make_shared<Linear>(4, 6, rng))
        .add(std::make_shared<Tanh>())
        .add(std::make_shared<Linear>(6, 3, rng));
    CHECK(head.size() == 3);
    CHECK(head.type_name() == "Sequential");
    const auto& children = head.children();
    REQUIRE(children.size() == 3);
    CHECK(children[0].first == "0");
    CHECK(children[1].first == "1");
    CHECK(children[2].first == "2");
    CHECK(children[1].second->type_name() == "Tanh");

    const auto named = head.named_parameters();
    REQUIRE(named.size() == 4);
    CHECK(named[0].first == "0.weight");
    CHECK(named[1].first == "0.bias");
    CHECK(named[2].first == "2.weight");
    CHECK(named[3].first == "2.bias");
    CHECK(named[2].second.shape() == Shape{3, 6});
    CHECK(head.num_parameters() == 4 * 6 + 6 + 6 * 3 + 3);
}

TEST_CASE("Sequential: forward applies the layers in order, empty is the identity", "[layer:Sequential][forward]") {
    Rng rng(31);
    auto fc1 = std::make_shared<Linear>(4, 6, rng);
    auto fc2 = std::make_shared<Linear>(6, 3, rng);
    Sequential seq;
    seq.add(fc1).add(std::make_shared<Tanh>()).add(fc2);
    randomize_parameters(seq, rng);
    const Tensor x = rand_tensor({2, 5, 4}, rng, -1, 1, false);

    std::vector<double> h = naive_linear(to_doubles(x), 10, 4, fc1->weight, fc1->bias);
    for (double& v : h) v = std::tanh(v);
    require_close(seq.forward(x), from_doubles({2, 5, 3}, naive_linear(h, 10, 6, fc2->weight, fc2->bias)), 1e-12);

    Sequential empty;
    CHECK(empty.forward(x).same(x));
}

TEST_CASE("Sequential: train/eval reaches every child, also ones added later", "[layer:Sequential]") {
    auto rng = std::make_shared<Rng>(32);
    auto drop = std::make_shared<Dropout>(0.5, rng);
    Sequential seq;
    seq.add(drop);
    seq.eval();
    CHECK_FALSE(drop->training());
    auto late = std::make_shared<Dropout>(0.5, rng);
    seq.add(late);
    CHECK_FALSE(late->training());
    seq.train();
    CHECK(drop->training());
    CHECK(late->training());
}

TEST_CASE("Sequential: gradcheck of Linear -> Tanh -> Linear w.r.t. input and every parameter",
          "[layer:Sequential][gradcheck]") {
    Rng rng(33);
    Sequential seq;
    seq.add(std::make_shared<Linear>(5, 7, rng)).add(std::make_shared<Tanh>()).add(std::make_shared<Linear>(7, 2, rng));
    randomize_parameters(seq, rng);
    check_gradients([&](const std::vector<Tensor>& xs) { return seq.forward(xs[0]); },
                    with_parameters(rand_tensor({3, 1, 5}, rng), seq), 34);
}

TEST_CASE("Sequential: a null layer is an error", "[layer:Sequential][errors]") {
    Sequential seq;
    require_error([&] { seq.add(nullptr); }, {"Sequential", "'0'", "null"});
    CHECK(seq.size() == 0);
}

}  // namespace patchgrad
