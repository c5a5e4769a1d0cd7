// The reverse-mode engine: graph recording, topological order, accumulation, graph freeing,
// grad mode, detach, and its error messages.
#include <cmath>
#include <memory>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/optim/optimizer.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/tensor.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("autograd: a scalar expression, as in micrograd", "[autograd][ex:broadcast-backward]") {
    // f(a, b) = (a * b + b^3) / a ; df/da = -b^3 / a^2, df/db = 1 + 3 b^2 / a
    Tensor a = Tensor::scalar(2, true), b = Tensor::scalar(-3, true);
    Tensor f = (a * b + pow(b, 3)) / a;
    REQUIRE(f.item() == Approx((2.0 * -3 - 27) / 2));
    f.backward();
    REQUIRE(a.grad().item() == Approx(27.0 / 4));
    REQUIRE(b.grad().item() == Approx(1 + 27.0 / 2));
    REQUIRE(a.is_leaf());
    REQUIRE_FALSE(f.is_leaf());
    REQUIRE(std::string(f.op()) == "div");
}

TEST_CASE("autograd: a tensor used twice receives both contributions", "[autograd][ex:broadcast-backward]") {
    Tensor x = Tensor::from_vector({3}, {1, 2, 3}, true);
    Tensor y = sum(x * x + x);  // dy/dx = 2x + 1
    y.backward();
    REQUIRE(x.grad().to_vector() == std::vector<real>{3, 5, 7});

    // A diamond: h feeds two branches that meet again.
    Tensor w = Tensor::from_vector({2}, {0.5, -1}, true);
    Tensor h = exp(w);
    Tensor z = sum(h * h + tanh(h));
    z.backward();
    for (int i = 0; i < 2; ++i) {
        const double e = std::exp(double(w.data()[i]));
        const double t = std::tanh(e);
        REQUIRE(w.grad().data()[i] == Approx((2 * e + (1 - t * t)) * e));
    }
}

TEST_CASE("autograd: gradients accumulate across backward calls until zero_grad", "[autograd]") {
    Tensor x = Tensor::from_vector({2}, {1, 2}, true);
    sum(x * 3).backward();
    sum(x * 3).backward();  // a new graph: adds again, like PyTorch
    REQUIRE(x.grad().to_vector() == std::vector<real>{6, 6});
    x.zero_grad();
    REQUIRE_FALSE(x.has_grad());
    sum(x * 3).backward();
    REQUIRE(x.grad().to_vector() == std::vector<real>{3, 3});
}

TEST_CASE("autograd: backward twice through the same graph is an error, not doubled gradients", "[autograd][errors]") {
    Tensor x = Tensor::from_vector({2}, {1, 2}, true);
    Tensor y = sum(x * x);
    y.backward();
    require_error([&] { y.backward(); }, {"backward", "already freed", "sum"});
    REQUIRE(x.grad().to_vector() == std::vector<real>{2, 4});

    // A second loss that shares a subgraph with the first one cannot silently lose the
    // shared part either.
    Tensor h = x * 2;
    Tensor l1 = sum(h);
    Tensor l2 = sum(h * h);
    l1.backward();
    require_error([&] { l2.backward(); }, {"already freed", "mul"});
}

TEST_CASE("autograd: the graph is freed after backward", "[autograd][memory]") {
    Tensor x = Tensor::from_vector({4}, {1, 2, 3, 4}, true);
    std::weak_ptr<TensorImpl> hidden;
    Tensor loss;
    {
        Tensor h = tanh(x * 2);
        hidden = h.impl_ptr();
        loss = sum(h * h);
    }
    REQUIRE_FALSE(hidden.expired());  // kept alive by the graph of `loss`
    loss.backward();
    REQUIRE(hidden.expired());  // freed by backward although `loss` still lives
    REQUIRE(loss.impl().inputs.empty());
}

TEST_CASE("autograd: memory does not grow across training steps", "[autograd][memory]") {
    Rng rng(0);
    Tensor w = Tensor::uniform({8, 8}, -1, 1, rng, true);
    std::vector<std::weak_ptr<TensorImpl>> activations;
    for (int step = 0; step < 20; ++step) {
        Tensor x = Tensor::uniform({4, 8}, -1, 1, rng);
        Tensor h = tanh(matmul(x, w));
        activations.push_back(h.impl_ptr());
        Tensor loss = mean(h * h);
        loss.backward();
        for (int i = 0; i < w.numel(); ++i) w.data()[i] -= real(0.1) * w.grad_data()[i];
        w.zero_grad();
    }
    for (auto& a : activations) REQUIRE(a.expired());
    REQUIRE(w.impl().inputs.empty());
}

TEST_CASE("autograd: a graph 100000 ops deep does not overflow the stack", "[autograd][ex:backward-engine]") {
    Tensor x = Tensor::scalar(1, true);
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y * real(1.0000001);
    y.backward();
    REQUIRE(x.grad().item() == Approx(std::pow(1.0000001, 100000)).epsilon(1e-5));
    // Dropping a long chain must not recurse through 100000 destructors either: the graph
    // was already dismantled node by node during backward.
}

TEST_CASE("autograd: only tensors that need gradients get them", "[autograd]") {
    Tensor a = Tensor::from_vector({2}, {1, 2}, true);
    Tensor c = Tensor::from_vector({2}, {3, 4});  // a constant
    Tensor y = sum(a * c);
    REQUIRE(y.requires_grad());
    y.backward();
    REQUIRE(a.grad().to_vector() == std::vector<real>{3, 4});
    REQUIRE_FALSE(c.has_grad());

    Tensor k = sum(c * c);
    REQUIRE_FALSE(k.requires_grad());
    REQUIRE(k.is_leaf());
    require_error([&] { k.backward(); }, {"backward", "does not require grad"});
}

TEST_CASE("autograd: intermediate gradients are dropped unless retained", "[autograd]") {
    Tensor x = Tensor::from_vector({2}, {1, 2}, true);
    Tensor h = x * 3;
    Tensor kept = (x * 2).retain_grad();
    Tensor y = sum(h * kept);
    y.backward();
    REQUIRE_FALSE(h.has_grad());
    REQUIRE(kept.grad().to_vector() == std::vector<real>{3, 6});  // dy/dkept = h
}

TEST_CASE("autograd: NoGradGuard records nothing and nests", "[autograd]") {
    Tensor x = Tensor::from_vector({2}, {1, 2}, true);
    REQUIRE(grad_enabled());
    {
        NoGradGuard outer;
        {
            NoGradGuard inner;
            REQUIRE_FALSE(grad_enabled());
        }
        REQUIRE_FALSE(grad_enabled());
        Tensor y = x * 2;
        REQUIRE_FALSE(y.requires_grad());
        REQUIRE(y.is_leaf());
        REQUIRE(y.to_vector() == std::vector<real>{2, 4});
    }
    REQUIRE(grad_enabled());
    REQUIRE((x * 2).requires_grad());
}

TEST_CASE("autograd: detach cuts the graph", "[autograd]") {
    Tensor x = Tensor::from_vector({2}, {1, 2}, true);
    Tensor h = x * 3;
    Tensor d = h.detach();
    REQUIRE(d.is_leaf());
    REQUIRE_FALSE(d.requires_grad());
    REQUIRE(d.to_vector() == h.to_vector());
    Tensor y = sum(h * d);  // gradient flows only through h: dy/dx = 3 * d
    y.backward();
    REQUIRE(x.grad().to_vector() == std::vector<real>{9, 18});
    require_error([&] { h.requires_grad_(false); }, {"requires_grad_", "mul"});
}

TEST_CASE("autograd: backward of a non-scalar needs a seed of its shape", "[autograd][errors][ex:backward-engine]") {
    Tensor x = Tensor::from_vector({2, 2}, {1, 2, 3, 4}, true);
    Tensor y = x * 2;
    require_error([&] { y.backward(); }, {"backward", "[2, 2]", "seed"});
    require_error([&] { y.backward(Tensor::ones({4})); }, {"backward", "[4]", "[2, 2]"});
    y.backward(Tensor::from_vector({2, 2}, {1, 0, 0, 1}));
    REQUIRE(x.grad().to_vector() == std::vector<real>{2, 0, 0, 2});
}

// ---- the engine alone (exercise backward-engine) ---------------------------------------------
// These graphs use only ops that are no exercise of chapter 2 (unary functions, x * s, concat,
// sum of all elements), so they grade Tensor::backward before broadcast-backward is written.

TEST_CASE("autograd engine: a chain, a diamond and a tensor used twice, by hand", "[autograd][ex:backward-engine]") {
    // z = sum(concat(tanh(h), h^2)) with h = exp(w): h feeds two branches that meet again,
    // so h's .grad must be complete (both contributions) before exp's backward reads it.
    //   dz/dw = (1 - tanh(h)^2 + 2 h) * h
    Tensor w = Tensor::from_vector({2}, {0.5, -1}, true);
    Tensor h = exp(w);
    Tensor z = sum(concat({tanh(h), pow(h, 2)}, 0));
    z.backward();
    for (int i = 0; i < 2; ++i) {
        const double e = std::exp(double(w.data()[i]));
        const double t = std::tanh(e);
        REQUIRE(w.grad().data()[i] == Approx((1 - t * t + 2 * e) * e));
    }
    // The same leaf twice as an input of one op: both contributions add up.
    Tensor x = Tensor::from_vector({3}, {1, 2, 3}, true);
    sum(concat({x * 3, x, x}, 0)).backward();  // d/dx = 3 + 1 + 1
    REQUIRE(x.grad().to_vector() == std::vector<real>{5, 5, 5});
}

TEST_CASE("autograd engine: gradcheck of a graph with shared nodes", "[autograd][gradcheck][ex:backward-engine]") {
    // Every node of h = exp(x/2) is read by three consumers, one of them through another
    // shared node; a wrong order (a node run before all its consumers) loses contributions.
    Rng rng(7);
    Tensor x = rand_tensor({2, 3}, rng);
    check_gradients(
        [](const std::vector<Tensor>& in) {
            Tensor h = exp(in[0] * real(0.5));
            Tensor t = tanh(h);
            return concat({t, pow(h, 2), pow(t, 3) + real(1), h * real(-2)}, 1);  // [2, 12]
        },
        {x});
}

TEST_CASE("autograd engine: accumulation, retained and dropped gradients, a freed graph",
          "[autograd][ex:backward-engine]") {
    Tensor x = Tensor::from_vector({2}, {1, 2}, true);
    // Leaves accumulate across backward calls: a new graph adds again, like PyTorch.
    sum(x * 3).backward();
    sum(x * 3).backward();
    REQUIRE(x.grad().to_vector() == std::vector<real>{6, 6});
    x.zero_grad();

    // Intermediate gradients are dropped unless retained; the root keeps its seed.
    Tensor h = x * 3;
    Tensor kept = (x * 2).retain_grad();
    Tensor y = sum(concat({pow(h, 2), kept * 5}, 0));
    y.backward();
    REQUIRE_FALSE(h.has_grad());
    REQUIRE(kept.grad().to_vector() == std::vector<real>{5, 5});
    REQUIRE(y.grad().item() == 1);
    REQUIRE(x.grad().to_vector() == std::vector<real>{2 * 9 * 1 + 10, 2 * 9 * 2 + 10});  // 18 x + 10

    // The graph is freed: intermediate nodes die although y lives, and a second backward
    // through it is an error naming the op, not doubled gradients.
    std::weak_ptr<TensorImpl> hidden;
    Tensor loss;
    {
        Tensor t = tanh(x * 2);
        hidden = t.impl_ptr();
        loss = sum(pow(t, 2));
    }
    REQUIRE_FALSE(hidden.expired());
    loss.backward();
    REQUIRE(hidden.expired());
    REQUIRE(loss.impl().inputs.empty());
    require_error([&] { loss.backward(); }, {"backward", "already freed", "sum"});
}

// ---- changing a tensor in place (the version counter) ------------------------------------

TEST_CASE("autograd: a tensor changed in place after the forward pass makes backward throw, naming the op",
          "[autograd][errors]") {
    Rng rng(4);
    SECTION("an input, changed through data_for_write") {
        Tensor x = Tensor::normal({2, 3}, 0, 1, rng), w = Tensor::normal({3, 4}, 0, 1, rng, true);
        Tensor loss = sum(matmul(x, w));
        w.data_for_write()[0] = 5;
        REQUIRE_THROWS_AS(loss.backward(), std::logic_error);
    }
    SECTION("the message names the op, the input, its shape and both versions") {
        Tensor x = Tensor::normal({2, 3}, 0, 1, rng), w = Tensor::normal({3, 4}, 0, 1, rng, true);
        Tensor loss = sum(matmul(x, w));
        // x does not require grad, yet matmul's dW reads it: it is checked too.
        x.data_for_write()[1] = 5;
        require_error([&] { loss.backward(); },
                      {"backward of matmul", "input 0 (shape [2, 3])", "changed in place", "version 1, recorded 0"});
    }
    SECTION("a write through a view counts for the tensor it views") {
        Tensor w = Tensor::normal({3, 4}, 0, 1, rng, true);
        Tensor loss = sum(exp(w));
        Tensor::view(w, {4}, 8).data_for_write()[0] = 0;
        require_error([&] { loss.backward(); }, {"backward of exp", "input 0 (shape [3, 4])"});
    }
    SECTION("an op's result, which its backward reads, is checked too") {
        Tensor w = Tensor::normal({3}, 0, 1, rng, true);
        Tensor y = exp(w);
        y.data_for_write()[0] = 0;
        require_error([&] { y.backward(Tensor::ones({3})); }, {"backward of exp", "its result (shape [3])"});
    }
}

TEST_CASE("autograd: reads and fresh writes do not count as changes", "[autograd]") {
    Rng rng(5);
    Tensor x = Tensor::normal({2, 3}, 0, 1, rng), w = Tensor::normal({3, 4}, 0, 1, rng, true);
    Tensor y = matmul(x, w);
    Tensor loss = sum(y);
    // Non-const data() and at() only read here: they are not counted (tensor.h).
    const real first = w.data()[0] + w.at({0, 0}) + y.at({1, 2}) + x.data()[0];
    CHECK(std::isfinite(first));
    // A write before the op is recorded is what the op sees: no alarm.
    Tensor v = Tensor::normal({3}, 0, 1, rng, true);
    v.data_for_write()[0] = 1;
    Tensor l2 = sum(v * v);
    REQUIRE_NOTHROW(loss.backward());
    REQUIRE_NOTHROW(l2.backward());
    CHECK(v.grad().at({0}) == Approx(2.0));
}

TEST_CASE("autograd: an optimizer step after backward is fine, one before backward is refused", "[autograd][errors]") {
    Rng rng(6);
    Tensor x = Tensor::normal({2, 3}, 0, 1, rng), w = Tensor::normal({3, 4}, 0, 1, rng, true);
    SGD opt(std::vector<Tensor>{w}, 0.1);
    for (int step = 0; step < 2; ++step) {
        opt.zero_grad();
        Tensor loss = sum(matmul(x, w));
        REQUIRE_NOTHROW(loss.backward());
        REQUIRE_NOTHROW(opt.step());
    }
    Tensor loss = sum(matmul(x, w));
    opt.step();  // still holds the last gradient: w changes under the graph
    require_error([&] { loss.backward(); }, {"backward of matmul", "input 1 (shape [3, 4])", "version 3, recorded 2"});
}

TEST_CASE("autograd: grad_data is zero-filled, grad_for_overwrite says when it is not", "[autograd]") {
    Tensor a = Tensor::zeros({4}, true);
    const GradOverwrite first = grad_for_overwrite(a);
    CHECK(first.beta == 0);  // fresh, uninitialised: write every element, never +=
    for (int i = 0; i < 4; ++i) first.data[i] = real(i);
    const GradOverwrite second = grad_for_overwrite(a);
    CHECK(second.beta == 1);  // a gradient has arrived: add
    CHECK(second.data == first.data);
    Tensor b = Tensor::zeros({3}, true);
    const real* g = b.grad_data();
    CHECK((g[0] == 0 && g[1] == 0 && g[2] == 0));
}

TEST_CASE("autograd: add_into_grad adds into zeros the first time and into the gradient after", "[autograd]") {
    // 10000 elements: several slices of its zero fill, in one chunk and in three.
    for (int threads : {1, 3}) {
        INFO(threads << " threads");
        const ThreadCount count(threads);
        Tensor x = Tensor::zeros({100, 100}, true);
        const auto add_index = [](int64_t begin, int64_t end, real* g) {
            for (int64_t i = begin; i < end; ++i) g[i] += real(i % 97);
        };
        add_into_grad(x, 1000, add_index);
        for (int64_t i = 0; i < x.numel(); ++i) REQUIRE(x.grad().data()[i] == real(i % 97));
        add_into_grad(x, 1000, add_index);
        for (int64_t i = 0; i < x.numel(); ++i) REQUIRE(x.grad().data()[i] == real(2 * (i % 97)));
    }
}

TEST_CASE("autograd: add_grad_from refuses a result without a gradient or of another size", "[autograd][errors]") {
    Tensor x = Tensor::zeros({3}, true);
    Tensor none = Tensor::zeros({3}, true);
    require_error([&] { add_grad_from(x, none); }, {"add_grad_from", "no gradient"});
    Tensor other = Tensor::zeros({4}, true);
    other.grad_data();
    require_error([&] { add_grad_from(x, other); }, {"add_grad_from", "4 gradient elements", "this tensor 3"});
    CHECK(!x.has_grad());
}
