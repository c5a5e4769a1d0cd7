// gradcheck itself: it must pass correct gradients, catch wrong ones, and report where.
#include "catch.h"
#include "patchgrad/autograd/gradcheck.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {
// x^2 with a backward that is wrong by `factor` at element `bad` only.
Tensor square_with_bug(const Tensor& x, double factor, int64_t bad) {
    Tensor out = Tensor::empty(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) out.data()[i] = x.data()[i] * x.data()[i];
    record(out, "square_with_bug", {x}, [x, factor, bad](Tensor& o) mutable {
        for (int64_t i = 0; i < x.numel(); ++i)
            x.grad_data()[i] += o.grad_data()[i] * 2 * x.data()[i] * (i == bad ? factor : 1.0);
    });
    return out;
}
}  // namespace

TEST_CASE("gradcheck: passes a correct gradient", "[gradcheck][ex:numerical-gradient]") {
    Rng rng(0);
    Tensor x = rand_tensor({3, 4}, rng);
    auto result = gradcheck([](const std::vector<Tensor>& in) { return sum(square_with_bug(in[0], 1.0, -1)); }, {x});
    INFO(result.summary());
    REQUIRE(result.passed());
    REQUIRE(result.inputs[0].checked == 12);
    REQUIRE(result.inputs[0].max_rel_error < 1e-8);
}

TEST_CASE("gradcheck: a backward wrong by 1% in one element fails and is located",
          "[gradcheck][ex:numerical-gradient]") {
    Rng rng(1);
    Tensor x = rand_tensor({3, 4}, rng, 0.5, 1.5);
    const std::vector<real> before = x.to_vector();
    auto result = gradcheck([](const std::vector<Tensor>& in) { return sum(square_with_bug(in[0], 1.01, 7)); }, {x});
    REQUIRE_FALSE(result.passed());
    REQUIRE(result.inputs[0].failures == 1);
    REQUIRE(result.inputs[0].worst_index == 7);
    REQUIRE(result.inputs[0].max_rel_error == Approx(0.01 / 1.01).epsilon(1e-3));
    REQUIRE(result.summary().find("FAIL") != std::string::npos);
    // The input is restored exactly and its gradient cleared.
    REQUIRE(x.to_vector() == before);
    REQUIRE_FALSE(x.has_grad());
}

TEST_CASE("gradcheck: sampling checks the requested number of elements", "[gradcheck][ex:numerical-gradient]") {
    Rng rng(2);
    Tensor x = rand_tensor({50, 40}, rng, 0.5, 1.5);
    GradcheckOptions options;
    options.max_elements_per_input = 25;
    auto f = [](const std::vector<Tensor>& in) { return sum(square_with_bug(in[0], 1.0, -1)); };
    auto result = gradcheck(f, {x}, options);
    REQUIRE(result.passed());
    REQUIRE(result.inputs[0].checked == 25);
}

TEST_CASE("gradcheck: inputs without requires_grad are skipped, non-scalar results rejected",
          "[gradcheck][errors][ex:numerical-gradient]") {
    Rng rng(3);
    Tensor x = rand_tensor({3}, rng);
    Tensor c = rand_tensor({3}, rng, -1, 1, false);
    auto result = gradcheck([](const std::vector<Tensor>& in) { return sum(in[0] * in[1]); }, {x, c});
    REQUIRE(result.passed());
    REQUIRE(result.inputs[1].checked == 0);
    require_error([&] { gradcheck([](const std::vector<Tensor>& in) { return in[0] * 2; }, {x}); },
                  {"gradcheck", "one-element", "[3]"});
}

TEST_CASE("weighted_sum (the tests' projection to a scalar): gradcheck", "[gradcheck][ex:numerical-gradient]") {
    Rng rng(4);
    Tensor y = rand_tensor({2, 3, 5}, rng);
    Tensor w = rand_tensor({2, 3, 5}, rng, -1, 1, false);
    check_gradients([&](const std::vector<Tensor>& in) { return weighted_sum(in[0], w); }, {y});
}
