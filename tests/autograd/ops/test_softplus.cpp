#include <cmath>

#include "autograd/softplus_variants.h"
#include "patchgrad/autograd/gradcheck.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("softplus: log(1 + exp(x)), without overflow far out", "[op:softplus][forward]") {
    const Tensor x = Tensor::from_vector({6}, {-800, -3, 0, 0.5, 3, 800});
    const Tensor y = softplus(x);
    for (int64_t i = 0; i < 6; ++i) {
        const double v = x.data()[i];
        const double expected = v > 30 ? v : std::log1p(std::exp(v));
        INFO("x = " << v);
        CHECK(std::abs(double(y.data()[i]) - expected) <= 1e-12 * (1 + std::abs(expected)));
    }
}

TEST_CASE("softplus: gradcheck", "[op:softplus][gradcheck]") {
    Rng rng(5);
    check_gradients([](const std::vector<Tensor>& in) { return softplus(in[0]); }, {rand_tensor({4, 7}, rng, -6, 6)});
    // Far out on its own: 750 in the loss would drown the finite differences of the others.
    check_gradients([](const std::vector<Tensor>& in) { return softplus(in[0]); },
                    {Tensor::from_vector({2}, {750, -750}, true)});
}

TEST_CASE("softplus_gradient_is_right: accepts both right backwards and refuses every planted bug",
          "[gradcheck][ex:softplus-gradcheck]") {
    const auto& variants = softplus_variants();
    for (size_t i = 0; i < variants.size(); ++i) {
        INFO("softplus with " << variants[i].name);
        CHECK(softplus_gradient_is_right([i](const Tensor& x) { return softplus_variant(x, i); }) == variants[i].right);
    }
}
