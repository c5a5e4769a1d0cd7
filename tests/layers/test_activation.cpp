#include <cmath>

#include "catch.h"
#include "layers/layer_test_util.h"
#include "patchgrad/layers/activation.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("GELU: exact erf form and tanh approximation, selectable", "[layer:GELU][forward]") {
    Rng rng(10);
    const Tensor x = rand_tensor({3, 1, 5}, rng, -4, 4, false);
    GELU exact;
    GELU approx(GeluApproximation::Tanh);
    CHECK(exact.approximation == GeluApproximation::None);
    CHECK(exact.type_name() == "GELU");
    CHECK(exact.num_parameters() == 0);
    std::vector<double> e(x.numel()), a(x.numel());
    double max_diff = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
        const double v = x.data()[i];
        e[i] = gelu_exact(v);
        a[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::acos(-1.0)) * (v + 0.044715 * v * v * v)));
        max_diff = std::max(max_diff, std::abs(e[i] - a[i]));
    }
    require_close(exact.forward(x), from_doubles(x.shape(), e), 1e-12);
    require_close(approx.forward(x), from_doubles(x.shape(), a), 1e-12);
    // The two forms really differ (by up to ~5e-4, near |x| = 2.7), so the switch matters.
    CHECK(max_diff > 1e-5);
}

TEST_CASE("GELU: gradcheck, both forms", "[layer:GELU][gradcheck]") {
    Rng rng(11);
    for (GeluApproximation a : {GeluApproximation::None, GeluApproximation::Tanh}) {
        GELU act(a);
        check_gradients([&](const std::vector<Tensor>& xs) { return act.forward(xs[0]); },
                        {rand_tensor({7, 11}, rng, -3, 3)}, 12);
    }
}

TEST_CASE("Tanh: forward and gradcheck", "[layer:Tanh][forward][gradcheck]") {
    Rng rng(13);
    Tanh act;
    CHECK(act.type_name() == "Tanh");
    CHECK(act.num_parameters() == 0);
    const Tensor x = rand_tensor({3, 1, 5}, rng, -3, 3, false);
    std::vector<double> expected(x.numel());
    for (int64_t i = 0; i < x.numel(); ++i) expected[i] = std::tanh(double(x.data()[i]));
    require_close(act.forward(x), from_doubles(x.shape(), expected), 1e-12);
    check_gradients([&](const std::vector<Tensor>& xs) { return act.forward(xs[0]); },
                    {rand_tensor({2, 7}, rng, -2, 2)}, 14);
}

TEST_CASE("Identity: returns its input itself and has no parameters", "[layer:Identity]") {
    Rng rng(15);
    Identity id;
    const Tensor x = rand_tensor({2, 3}, rng);
    CHECK(id.forward(x).same(x));
    CHECK(id.num_parameters() == 0);
    CHECK(id.type_name() == "Identity");
}

}  // namespace patchgrad
