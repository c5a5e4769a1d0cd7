// The MLP op (autograd/ops/mlp.cpp): the three ops it stands for, bit for bit, and its own
// gradient checks.
#include <optional>
#include <vector>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

struct MlpCase {
    Shape x;
    int64_t hidden, out;
};
const MlpCase kCases[] = {{{2, 3, 5}, 7, 4},    {{1, 6}, 1, 6},   {{13, 2}, 9, 3},
                          {{2, 2, 1, 3}, 4, 1}, {{40, 8}, 33, 8}, {{3, 0}, 4, 2}};  // no in-features: h = b1

// mlp's value and the gradients of x and the four parameters (undefined where not asked for),
// from the fused op or from the three ops, on the same inputs.
// With a residual, its gradient too; with a norm, its weight's and bias's.
std::vector<Tensor> values_and_gradients(bool fused, const MlpCase& c, bool with_biases, bool x_grad, bool w_grad,
                                         GeluApproximation a, bool with_residual = false, bool with_norm = false) {
    Rng rng(11);
    Tensor x = rand_tensor(c.x, rng, -2, 2, x_grad);
    const int64_t in = c.x.back();
    Tensor w1 = rand_tensor({c.hidden, in}, rng, -1, 1, w_grad), b1 = rand_tensor({c.hidden}, rng);
    Tensor w2 = rand_tensor({c.out, c.hidden}, rng, -1, 1, w_grad), b2 = rand_tensor({c.out}, rng);
    if (!with_biases) b1 = b2 = Tensor();
    Shape out_shape = c.x;
    out_shape.back() = c.out;
    const Tensor residual = with_residual ? rand_tensor(out_shape, rng) : Tensor();
    InputNorm norm;
    if (with_norm) norm = {true, rand_tensor({in}, rng, 0.5, 1.5, w_grad), rand_tensor({in}, rng, -1, 1, w_grad)};
    const Tensor y =
        fused ? mlp(x, w1, b1, w2, b2, a, residual, norm) : mlp_through_ops(x, w1, b1, w2, b2, a, residual, norm);
    weighted_sum(y, rand_tensor(y.shape(), rng, -1, 1, false)).backward();
    std::vector<Tensor> result{y.detach()};
    for (const Tensor& t : {x, w1, b1, w2, b2, residual, norm.weight, norm.bias})
        result.push_back(t.defined() ? t.grad() : Tensor());
    return result;
}

}  // namespace

TEST_CASE("mlp: the same bits as linear, gelu and linear, values and gradients", "[op:mlp][forward]") {
    for (const MlpCase& c : kCases)
        for (const GeluApproximation a : {GeluApproximation::None, GeluApproximation::Tanh})
            for (const bool with_biases : {true, false})
                for (const auto& [x_grad, w_grad] : {std::pair{true, true}, {false, true}, {true, false}})
                    for (const bool residual : {false, true})
                        for (const bool norm : {false, true}) {
                            INFO("x " << shape_str(c.x) << ", hidden " << c.hidden << ", out " << c.out << ", biases "
                                      << with_biases << ", x grad " << x_grad << ", weight grads " << w_grad
                                      << ", tanh " << (a == GeluApproximation::Tanh) << ", residual " << residual
                                      << ", norm " << norm);
                            const auto fused =
                                values_and_gradients(true, c, with_biases, x_grad, w_grad, a, residual, norm);
                            const auto steps =
                                values_and_gradients(false, c, with_biases, x_grad, w_grad, a, residual, norm);
                            for (size_t k = 0; k < fused.size(); ++k) {
                                INFO(
                                    "0: the value, 1: x's gradient, 2-8: W1's, b1's, W2's, b2's, the residual's, the "
                                    "norm's weight's and bias's; k = "
                                    << k);
                                REQUIRE(fused[k].defined() == steps[k].defined());
                                if (fused[k].defined()) CHECK(fused[k].to_vector() == steps[k].to_vector());
                            }
                        }
}

// Without a backward to follow, the forward computes GELU alone (no GELU' over h).
TEST_CASE("mlp: the same value as the three ops when no backward can follow", "[op:mlp][forward]") {
    for (const MlpCase& c : kCases)
        for (const GeluApproximation a : {GeluApproximation::None, GeluApproximation::Tanh})
            for (const bool no_grad_mode : {true, false}) {
                INFO("x " << shape_str(c.x) << ", hidden " << c.hidden << ", tanh " << (a == GeluApproximation::Tanh)
                          << ", NoGradGuard " << no_grad_mode << " (else no input requires grad)");
                Rng rng(12);
                const bool grad = no_grad_mode;  // under the guard, inputs that require grad record nothing
                const Tensor x = rand_tensor(c.x, rng, -2, 2, grad),
                             w1 = rand_tensor({c.hidden, c.x.back()}, rng, -1, 1, grad),
                             b1 = rand_tensor({c.hidden}, rng, -1, 1, grad),
                             w2 = rand_tensor({c.out, c.hidden}, rng, -1, 1, grad),
                             b2 = rand_tensor({c.out}, rng, -1, 1, grad);
                std::optional<NoGradGuard> guard;
                if (no_grad_mode) guard.emplace();
                const Tensor fused = mlp(x, w1, b1, w2, b2, a);
                CHECK_FALSE(fused.requires_grad());
                CHECK(fused.to_vector() == mlp_through_ops(x, w1, b1, w2, b2, a).to_vector());
            }
}

TEST_CASE("mlp: gradcheck with and without biases, both GELU forms", "[op:mlp][gradcheck]") {
    Rng rng(12);
    uint64_t seed = 40;
    const GradcheckOptions options = options_for_large_sums();  // the [40, 8] case sums 320 outputs
    for (const MlpCase& c : kCases)
        for (const GeluApproximation a : {GeluApproximation::None, GeluApproximation::Tanh}) {
            INFO("x " << shape_str(c.x) << ", hidden " << c.hidden << ", out " << c.out);
            const int64_t in = c.x.back();
            check_gradients(
                [a](const std::vector<Tensor>& t) { return mlp(t[0], t[1], t[2], t[3], t[4], a); },
                {rand_tensor(c.x, rng, -2, 2), rand_tensor({c.hidden, in}, rng), rand_tensor({c.hidden}, rng),
                 rand_tensor({c.out, c.hidden}, rng), rand_tensor({c.out}, rng)},
                ++seed, options);
            check_gradients(
                [a](const std::vector<Tensor>& t) { return mlp(t[0], t[1], Tensor(), t[2], Tensor(), a); },
                {rand_tensor(c.x, rng, -2, 2), rand_tensor({c.hidden, in}, rng), rand_tensor({c.out, c.hidden}, rng)},
                ++seed, options);
        }
}

TEST_CASE("mlp: gradcheck when only some inputs require grad, and when x is used twice", "[op:mlp][gradcheck]") {
    Rng rng(13);
    auto op = [](const std::vector<Tensor>& t) { return mlp(t[0], t[1], t[2], t[3], t[4]); };
    // Only the second layer trains: the first layer's gradients, and dh, are not needed.
    check_gradients(op,
                    {rand_tensor({4, 5}, rng, -1, 1, false), rand_tensor({6, 5}, rng, -1, 1, false),
                     rand_tensor({6}, rng, -1, 1, false), rand_tensor({3, 6}, rng), rand_tensor({3}, rng)},
                    50);
    // A frozen MLP still passes the gradient through to x.
    check_gradients(
        op,
        {rand_tensor({4, 5}, rng), rand_tensor({6, 5}, rng, -1, 1, false), rand_tensor({6}, rng, -1, 1, false),
         rand_tensor({3, 6}, rng, -1, 1, false), rand_tensor({3}, rng, -1, 1, false)},
        51);
    // The residual argument: another tensor, or x itself around the MLP (a block's skip connection).
    check_gradients(
        [](const std::vector<Tensor>& t) { return mlp(t[0], t[1], t[2], t[3], t[4], GeluApproximation::None, t[5]); },
        {rand_tensor({4, 5}, rng), rand_tensor({6, 5}, rng), rand_tensor({6}, rng), rand_tensor({3, 6}, rng),
         rand_tensor({3}, rng), rand_tensor({4, 3}, rng)},
        53);
    check_gradients(
        [](const std::vector<Tensor>& t) { return mlp(t[0], t[1], t[2], t[3], t[4], GeluApproximation::Tanh, t[0]); },
        {rand_tensor({4, 5}, rng), rand_tensor({6, 5}, rng), rand_tensor({6}, rng), rand_tensor({5, 6}, rng),
         rand_tensor({5}, rng)},
        54);
    // x reaches the MLP twice and a residual: its gradient from the second use adds.
    check_gradients(
        [](const std::vector<Tensor>& t) {
            return mlp(t[0], t[1], t[2], t[3], t[4]) + mlp(t[0], t[1], Tensor(), t[3], Tensor()) + t[0];
        },
        {rand_tensor({4, 5}, rng), rand_tensor({6, 5}, rng), rand_tensor({6}, rng), rand_tensor({5, 6}, rng),
         rand_tensor({5}, rng)},
        52);
}

TEST_CASE("mlp: gradcheck with a norm in front, x itself the residual, and a frozen input", "[op:mlp][gradcheck]") {
    Rng rng(15);
    const auto norm = [](const std::vector<Tensor>& t, size_t i) { return InputNorm{true, t[i], t[i + 1], 1e-5}; };
    const GradcheckOptions options = options_for_large_sums();
    check_gradients(
        [&](const std::vector<Tensor>& t) {
            return mlp(t[0], t[1], t[2], t[3], t[4], GeluApproximation::None, Tensor(), norm(t, 5));
        },
        {rand_tensor({2, 3, 5}, rng, -2, 2), rand_tensor({6, 5}, rng), rand_tensor({6}, rng), rand_tensor({4, 6}, rng),
         rand_tensor({4}, rng), rand_tensor({5}, rng, 0.5, 1.5), rand_tensor({5}, rng)},
        55, options);
    // A block's MLP branch: z' + mlp(LN(z')).
    check_gradients(
        [&](const std::vector<Tensor>& t) {
            return mlp(t[0], t[1], t[2], t[3], t[4], GeluApproximation::Tanh, t[0], norm(t, 5));
        },
        {rand_tensor({4, 5}, rng, -2, 2), rand_tensor({6, 5}, rng), rand_tensor({6}, rng), rand_tensor({5, 6}, rng),
         rand_tensor({5}, rng), rand_tensor({5}, rng, 0.5, 1.5), rand_tensor({5}, rng)},
        56, options);
    // Only the norm's parameters train.
    check_gradients(
        [&](const std::vector<Tensor>& t) {
            return mlp(t[0], t[1], t[2], t[3], t[4], GeluApproximation::None, Tensor(), norm(t, 5));
        },
        {rand_tensor({3, 5}, rng, -2, 2, false), rand_tensor({6, 5}, rng, -1, 1, false),
         rand_tensor({6}, rng, -1, 1, false), rand_tensor({2, 6}, rng, -1, 1, false),
         rand_tensor({2}, rng, -1, 1, false), rand_tensor({5}, rng, 0.5, 1.5), rand_tensor({5}, rng)},
        57, options);
}

TEST_CASE("mlp: errors name the shapes", "[op:mlp][errors]") {
    Rng rng(14);
    const Tensor x = rand_tensor({2, 5}, rng), w1 = rand_tensor({6, 5}, rng), b1 = rand_tensor({6}, rng);
    const Tensor w2 = rand_tensor({3, 6}, rng), b2 = rand_tensor({3}, rng);
    require_error([&] { mlp(rand_tensor({2, 4}, rng), w1, b1, w2, b2); }, {"mlp", "[2, 4]", "[6, 5]"});
    require_error([&] { mlp(x, w1, b1, rand_tensor({3, 7}, rng), b2); }, {"mlp", "fc2", "[3, 7]", "6"});
    require_error([&] { mlp(x, w1, rand_tensor({5}, rng), w2, b2); }, {"mlp", "fc1", "bias", "[5]", "[6]"});
    require_error([&] { mlp(x, w1, b1, w2, rand_tensor({6}, rng)); }, {"mlp", "fc2", "bias", "[6]", "[3]"});
    require_error([&] { mlp(x, rand_tensor({6}, rng), b1, w2, b2); }, {"mlp", "[out, in]", "[6]"});
    require_error([&] { mlp(x, Tensor(), b1, w2, b2); }, {"mlp", "defined"});
    require_error(
        [&] {
            mlp(x, w1, b1, w2, b2, GeluApproximation::None, rand_tensor({2, 5}, rng));
        },
        {"mlp", "residual", "[2, 5]", "[2, 3]"});
}

}  // namespace patchgrad
