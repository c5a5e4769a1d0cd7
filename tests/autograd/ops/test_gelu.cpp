#include <cmath>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

Tensor negated(const Tensor& x) {
    Tensor y = Tensor::empty(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) y.data()[i] = -x.data()[i];
    return y;
}

}  // namespace

TEST_CASE("gelu: matches PyTorch, exact and tanh", "[op:gelu][forward][ex:gelu-backward]") {
    // From torch.nn.functional.gelu in PyTorch 1.13, regenerate with:
    // /usr/bin/python3 -c "import torch,torch.nn.functional as F; x=torch.tensor([-3.,-1.,-0.5,0.,0.5,1.,3.],dtype=torch.float64); print([f'{v:.12g}' for v in F.gelu(x).tolist()]); print([f'{v:.12g}' for v in F.gelu(x,approximate='tanh').tolist()])"
    const Tensor x = Tensor::from_vector({7}, {-3, -1, -0.5, 0, 0.5, 1, 3});
    require_close(gelu(x, GeluApproximation::None),
                  Tensor::from_vector({7}, {-0.00404969409489, -0.158655253931, -0.154268769363, 0, 0.345731230637,
                                            0.841344746069, 2.99595030591}),
                  1e-11);
    require_close(gelu(x, GeluApproximation::Tanh),
                  Tensor::from_vector({7}, {-0.00363739208177, -0.158808009392, -0.154285990175, 0, 0.345714009825,
                                            0.841191990608, 2.99636260792}),
                  1e-11);
    // The default is the exact form.
    require_close(gelu(x), gelu(x, GeluApproximation::None), 0);
}

TEST_CASE("gelu: hand values and the identity gelu(x) - gelu(-x) = x", "[op:gelu][forward]") {
    // gelu(1) = Phi(1), and Phi(1) = 0.8413447460685429 (the standard normal table).
    REQUIRE(std::abs(gelu(Tensor::scalar(1)).item() - 0.8413447460685429) < 1e-15);
    // Far from 0 both forms are x or 0.
    require_close(gelu(Tensor::from_vector({2}, {10, -10})), Tensor::from_vector({2}, {10, 0}), 1e-15);
    require_close(gelu(Tensor::from_vector({2}, {10, -10}), GeluApproximation::Tanh), Tensor::from_vector({2}, {10, 0}),
                  1e-15);

    // Phi(x) + Phi(-x) = 1 and tanh is odd, so gelu(x) - gelu(-x) = x in both forms.
    Rng rng(6);
    const Tensor x = rand_tensor({5, 7}, rng, -4, 4, false);
    for (auto approximation : {GeluApproximation::None, GeluApproximation::Tanh}) {
        const Tensor y = gelu(x, approximation);
        const Tensor y_neg = gelu(negated(x), approximation);
        for (int64_t i = 0; i < x.numel(); ++i) REQUIRE(std::abs(y.data()[i] - y_neg.data()[i] - x.data()[i]) < 1e-14);
    }
}

TEST_CASE("gelu: gradcheck, exact and tanh", "[op:gelu][gradcheck][ex:gelu-backward]") {
    Rng rng(60);
    for (auto approximation : {GeluApproximation::None, GeluApproximation::Tanh}) {
        const auto op = [approximation](const std::vector<Tensor>& xs) { return gelu(xs[0], approximation); };
        INFO("tanh approximation: " << (approximation == GeluApproximation::Tanh));
        for (const Shape& shape : {Shape{7, 11}, Shape{3, 1, 5}, Shape{1}})
            check_gradients(op, {rand_tensor(shape, rng, -4, 4)}, 61);
        // The tails, where the derivative goes to 1 and 0 (and overshoots 1 on the way).
        check_gradients(op, {Tensor::from_vector({6}, {-9, -5.5, -2.25, 1.5, 2.75, 8}, true)}, 62);
    }
}

TEST_CASE("gelu: unknown approximation", "[op:gelu][errors]") {
    require_error(
        [] {
            gelu(Tensor::zeros({2, 3}), static_cast<GeluApproximation>(7));
        },
        {"gelu", "approximation 7", "[2, 3]"});
}

}  // namespace patchgrad
