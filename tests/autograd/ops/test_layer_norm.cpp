#include <cmath>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

// Row by row in long double, with the variance as E[x^2] - E[x]^2 (the implementation uses
// the two-pass sum of squared deviations).
Tensor naive_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
    const int64_t D = x.size(-1), rows = x.numel() / D;
    Tensor y = Tensor::empty(x.shape());
    for (int64_t r = 0; r < rows; ++r) {
        long double s = 0, s2 = 0;
        for (int64_t j = 0; j < D; ++j) {
            s += x.data()[r * D + j];
            s2 += static_cast<long double>(x.data()[r * D + j]) * x.data()[r * D + j];
        }
        const long double mean = s / D, var = s2 / D - mean * mean;
        for (int64_t j = 0; j < D; ++j) {
            const long double xhat = (x.data()[r * D + j] - mean) / std::sqrt(var + eps);
            y.data()[r * D + j] = static_cast<real>(xhat * (weight.defined() ? weight.data()[j] : 1) +
                                                    (bias.defined() ? bias.data()[j] : 0));
        }
    }
    return y;
}

}  // namespace

TEST_CASE("layer_norm: hand-computed values", "[op:layer_norm][forward]") {
    // [1, 2, 3, 4]: mean 2.5, biased variance 1.25, so xhat = (x - 2.5) / sqrt(1.25).
    const Tensor x = Tensor::from_vector({4}, {1, 2, 3, 4});
    const double s = std::sqrt(1.25);
    require_close(layer_norm(x, Tensor(), Tensor(), 0),
                  Tensor::from_vector({4}, {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s}), 1e-12);
    require_close(layer_norm(x, Tensor::from_vector({4}, {1, 2, 3, 4}), Tensor::from_vector({4}, {1, 1, 0, 0}), 0),
                  Tensor::from_vector({4}, {1 - 1.5 / s, 1 - 1.0 / s, 1.5 / s, 6 / s}), 1e-12);
    // eps enters under the square root: a row [-1, 1] has variance 1.
    require_close(layer_norm(Tensor::from_vector({1, 2}, {-1, 1}), Tensor(), Tensor(), 0.5),
                  Tensor::from_vector({1, 2}, {-1 / std::sqrt(1.5), 1 / std::sqrt(1.5)}), 1e-12);
}

TEST_CASE("layer_norm: matches PyTorch", "[op:layer_norm][forward]") {
    // From torch.nn.functional.layer_norm in PyTorch 1.13, regenerate with:
    // /usr/bin/python3 -c "import torch,torch.nn.functional as F; x=torch.tensor([[0.5,-1.,2.,0.],[3.,1.,-2.,1.5]],dtype=torch.float64); w=torch.tensor([1.,2.,-0.5,0.25],dtype=torch.float64); b=torch.tensor([0.,0.1,-0.2,1.],dtype=torch.float64); print([f'{v:.12g}' for v in F.layer_norm(x,(4,),w,b,1e-5).flatten().tolist()])"
    const Tensor x = Tensor::from_vector({2, 4}, {0.5, -1, 2, 0, 3, 1, -2, 1.5});
    const Tensor weight = Tensor::from_vector({4}, {1, 2, -0.5, 0.25});
    const Tensor bias = Tensor::from_vector({4}, {0, 0.1, -0.2, 1});
    require_close(layer_norm(x, weight, bias, 1e-5),
                  Tensor::from_vector({2, 4}, {0.115469561169, -2.44033034571, -0.950552147598, 0.913397829123,
                                               1.1703264895, 0.237685469352, 0.591691448776, 1.08605341835}),
                  1e-10);
}

TEST_CASE("layer_norm: matches a naive reference on random rows", "[op:layer_norm][forward][ex:layernorm-backward]") {
    Rng rng(5);
    const Tensor x = rand_tensor({3, 5, 7}, rng, -4, 4, false);
    const Tensor weight = rand_tensor({7}, rng, -2, 2, false);
    const Tensor bias = rand_tensor({7}, rng, -2, 2, false);
    require_close(layer_norm(x, weight, bias, 1e-5), naive_layer_norm(x, weight, bias, 1e-5), 1e-12);
    require_close(layer_norm(x, Tensor(), Tensor(), 1e-3), naive_layer_norm(x, Tensor(), Tensor(), 1e-3), 1e-12);
    require_close(layer_norm(x, weight, Tensor()), naive_layer_norm(x, weight, Tensor(), 1e-5), 1e-12);
    require_close(layer_norm(x, Tensor(), bias), naive_layer_norm(x, Tensor(), bias, 1e-5), 1e-12);
}

TEST_CASE("layer_norm: gradcheck with and without weight and bias",
          "[op:layer_norm][gradcheck][ex:layernorm-backward]") {
    Rng rng(40);
    const auto full = [](const std::vector<Tensor>& xs) { return layer_norm(xs[0], xs[1], xs[2], 1e-5); };
    for (const Shape& shape : {Shape{7, 11}, Shape{3, 1, 5}, Shape{2, 3, 4}, Shape{13}}) {
        INFO("x " << shape_str(shape));
        const int64_t D = shape.back();
        check_gradients(
            full, {rand_tensor(shape, rng, -2, 2), rand_tensor({D}, rng, -2, 2), rand_tensor({D}, rng, -2, 2)}, 41);
        check_gradients([](const std::vector<Tensor>& xs) { return layer_norm(xs[0], Tensor(), Tensor(), 1e-5); },
                        {rand_tensor(shape, rng, -2, 2)}, 42);
        check_gradients([](const std::vector<Tensor>& xs) { return layer_norm(xs[0], xs[1], Tensor(), 1e-5); },
                        {rand_tensor(shape, rng, -2, 2), rand_tensor({D}, rng, -2, 2)}, 43);
        check_gradients([](const std::vector<Tensor>& xs) { return layer_norm(xs[0], Tensor(), xs[1], 1e-5); },
                        {rand_tensor(shape, rng, -2, 2), rand_tensor({D}, rng, -2, 2)}, 44);
    }
}

TEST_CASE("layer_norm: gradcheck of weight and bias alone, and of a one-element last dimension",
          "[op:layer_norm][gradcheck][ex:layernorm-backward]") {
    Rng rng(50);
    const auto full = [](const std::vector<Tensor>& xs) { return layer_norm(xs[0], xs[1], xs[2], 0.1); };
    // x is a constant here: only weight and bias get gradients.
    check_gradients(
        full, {rand_tensor({5, 7}, rng, -2, 2, false), rand_tensor({7}, rng, -2, 2), rand_tensor({7}, rng, -2, 2)}, 51);
    // D = 1: xhat is 0 whatever x is, so dx = 0 and y = bias.
    check_gradients(full, {rand_tensor({5, 1}, rng, -2, 2), rand_tensor({1}, rng, -2, 2), rand_tensor({1}, rng, -2, 2)},
                    52);
}

TEST_CASE("layer_norm: bad weight, bias, eps or input", "[op:layer_norm][errors]") {
    const Tensor x = Tensor::zeros({2, 4});
    require_error([&] { layer_norm(x, Tensor::ones({3}), Tensor()); }, {"layer_norm", "weight", "[3]", "[2, 4]"});
    require_error([&] { layer_norm(x, Tensor::ones({1, 4}), Tensor()); }, {"layer_norm", "weight", "[1, 4]", "[2, 4]"});
    require_error([&] { layer_norm(x, Tensor(), Tensor::zeros({2, 4})); }, {"layer_norm", "bias", "[2, 4]"});
    require_error([&] { layer_norm(x, Tensor::ones({4}), Tensor::zeros({5})); },
                  {"layer_norm", "bias", "[5]", "[2, 4]"});
    require_error([&] { layer_norm(x, Tensor(), Tensor(), -1e-9); }, {"layer_norm", "eps", "-1e-09"});
    require_error([&] { layer_norm(x, Tensor(), Tensor(), std::nan("")); }, {"layer_norm", "eps", "nan"});
    require_error([&] { layer_norm(Tensor::scalar(1), Tensor(), Tensor()); }, {"layer_norm", "[]"});
}

}  // namespace patchgrad
