#include <cmath>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("drop_path: each sample is kept whole (scaled by 1 / (1 - p)) or zeroed whole", "[op:drop_path][forward]") {
    Rng data_rng(2);
    const Tensor x = rand_tensor({4000, 3, 5}, data_rng, 0.5, 1.5, false);
    const real p = 0.3;
    Rng rng(4);
    const Tensor y = drop_path(x, p, true, rng);
    int64_t kept = 0;
    for (int64_t b = 0; b < 4000; ++b) {
        const bool keep = y.at({b, 0, 0}) != 0;
        kept += keep;
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 5; ++j)
                REQUIRE(y.at({b, i, j}) == Approx(keep ? x.at({b, i, j}) / (1 - p) : 0).margin(1e-15));
    }
    // Binomial(4000, 0.7): standard deviation 29.
    REQUIRE(std::abs(kept - 2800) < 150);
}

TEST_CASE("drop_path: gradient check with a fixed mask", "[op:drop_path][gradcheck]") {
    Rng data_rng(5);
    check_gradients(
        [](const std::vector<Tensor>& in) {
            Rng rng(6);  // the same samples dropped on every evaluation
            return drop_path(in[0], 0.5, true, rng);
        },
        {rand_tensor({6, 2, 3}, data_rng)});
}

TEST_CASE("drop_path: evaluation and p = 0 are the identity and draw nothing", "[op:drop_path][forward]") {
    Rng data_rng(1);
    Tensor x = rand_tensor({3, 4}, data_rng);
    Rng rng(12);
    const auto state = rng.state();
    REQUIRE(drop_path(x, 0.5, false, rng).same(x));
    REQUIRE(drop_path(x, 0, true, rng).same(x));
    REQUIRE(rng.state() == state);
}

TEST_CASE("drop_path: bad p and a scalar input are errors naming the op", "[op:drop_path][errors]") {
    Rng rng(1);
    Tensor x = Tensor::ones({2, 3});
    require_error([&] { drop_path(x, 1, true, rng); }, {"drop_path", "[0, 1)", "[2, 3]"});
    require_error([&] { drop_path(x, -0.1, true, rng); }, {"drop_path", "-0.1"});
    require_error([&] { drop_path(Tensor::scalar(1), 0.1, true, rng); }, {"drop_path", "batch dimension"});
}

}  // namespace patchgrad
