#include <vector>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

// y[r, o] = sum_i x[r, i] w[o, i] + b[o] over the rows r of x flattened to [R, in].
Tensor naive_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
    const int64_t out = w.size(0), in = w.size(1), rows = x.numel() / in;
    Shape shape = x.shape();
    shape.back() = out;
    Tensor y = Tensor::zeros(shape);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < out; ++o) {
            double s = b.defined() ? b.data()[o] : 0;
            for (int64_t i = 0; i < in; ++i) s += double(x.data()[r * in + i]) * w.data()[o * in + i];
            y.data()[r * out + o] = static_cast<real>(s);
        }
    return y;
}

// The [in, out] transpose of w, by a loop.
Tensor transposed(const Tensor& w) {
    const int64_t out = w.size(0), in = w.size(1);
    Tensor t = Tensor::empty({in, out});
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) t.data()[i * out + o] = w.data()[o * in + i];
    return t;
}

struct LinearCase {
    Shape x, w;
};
const LinearCase kCases[] = {
    {{2, 3, 5}, {4, 5}}, {{3, 1, 5}, {7, 5}}, {{7}, {11, 7}},
    {{1, 1}, {1, 1}},    {{13, 2}, {3, 2}},   {{2, 2, 1, 3}, {1, 3}},
};

}  // namespace

TEST_CASE("linear: hand-computed values", "[op:linear][forward]") {
    // x = [[1, 2], [3, 4]], W = [[1, 0], [1, -1], [2, 1]], b = [10, 20, 30].
    const Tensor x = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
    const Tensor w = Tensor::from_vector({3, 2}, {1, 0, 1, -1, 2, 1});
    const Tensor b = Tensor::from_vector({3}, {10, 20, 30});
    require_close(linear(x, w, b), Tensor::from_vector({2, 3}, {11, 19, 34, 13, 19, 40}), 1e-12);
    require_close(linear(x, w, Tensor()), Tensor::from_vector({2, 3}, {1, -1, 4, 3, -1, 10}), 1e-12);
}

TEST_CASE("linear: matches a naive loop and matmul(x, W^T) + b, with and without bias", "[op:linear][forward]") {
    Rng rng(1);
    for (const LinearCase& c : kCases) {
        INFO("x " << shape_str(c.x) << " weight " << shape_str(c.w));
        const Tensor x = rand_tensor(c.x, rng, -1, 1, false), w = rand_tensor(c.w, rng, -1, 1, false);
        const Tensor b = rand_tensor({c.w[0]}, rng, -1, 1, false);
        const Tensor y = linear(x, w, b);
        require_close(y, naive_linear(x, w, b), 1e-12);
        require_close(linear(x, w, Tensor()), naive_linear(x, w, Tensor()), 1e-12);

        if (x.dim() >= 2) {
            Tensor via_matmul = matmul(x, transposed(w));
            for (int64_t r = 0; r < via_matmul.numel() / c.w[0]; ++r)
                for (int64_t o = 0; o < c.w[0]; ++o) via_matmul.data()[r * c.w[0] + o] += b.data()[o];
            require_close(y, via_matmul, 1e-12);
        }
    }
}

TEST_CASE("linear: the values and gradients of linear_through_matmul", "[op:linear][forward]") {
    Rng rng(6);
    for (const LinearCase& c : kCases) {
        INFO("x " << shape_str(c.x) << " weight " << shape_str(c.w));
        for (const bool with_bias : {true, false}) {
            std::vector<Tensor> grads[2];
            for (int way = 0; way < 2; ++way) {
                Rng same(7);
                Tensor x = rand_tensor(c.x, same), w = rand_tensor(c.w, same), b = rand_tensor({c.w[0]}, same);
                if (!with_bias) b = Tensor();
                const Tensor y = way == 0 ? linear(x, w, b) : linear_through_matmul(x, w, b);
                weighted_sum(y, rand_tensor(y.shape(), same, -1, 1, false)).backward();
                grads[way] = {y.detach(), x.grad(), w.grad()};
                if (with_bias) grads[way].push_back(b.grad());
            }
            for (size_t i = 0; i < grads[0].size(); ++i) require_close(grads[0][i], grads[1][i], 1e-12);
        }
    }
}

TEST_CASE("linear: with a residual, the same bits as linear and +, values and gradients", "[op:linear][forward]") {
    for (const LinearCase& c : kCases)
        for (const bool with_bias : {true, false}) {
            INFO("x " << shape_str(c.x) << " weight " << shape_str(c.w) << " bias " << with_bias);
            std::vector<std::vector<real>> results[2];
            for (const bool fused : {true, false}) {
                Rng same(8);
                Tensor x = rand_tensor(c.x, same), w = rand_tensor(c.w, same), b = rand_tensor({c.w[0]}, same);
                if (!with_bias) b = Tensor();
                Shape out_shape = c.x;
                out_shape.back() = c.w[0];
                const Tensor residual = rand_tensor(out_shape, same);
                const Tensor y = fused ? linear(x, w, b, residual) : linear(x, w, b) + residual;
                weighted_sum(y, rand_tensor(y.shape(), same, -1, 1, false)).backward();
                for (const Tensor& t : {y.detach(), x.grad(), w.grad(), residual.grad()})
                    results[fused].push_back(t.to_vector());
                if (with_bias) results[fused].push_back(b.grad().to_vector());
            }
            check_same_bits(results[0], results[1],
                            "0: the value, 1-3: the gradients of x, W and the residual, 4: b's");
        }
}

TEST_CASE("linear: with a norm, the same bits as layer_norm and linear, values and gradients", "[op:linear][forward]") {
    for (const LinearCase& c : kCases)
        for (const bool with_residual : {false, true})
            for (const bool x_grad : {true, false}) {
                INFO("x " << shape_str(c.x) << " weight " << shape_str(c.w) << " residual " << with_residual
                          << " x grad " << x_grad);
                std::vector<std::vector<real>> results[2];
                for (const bool fused : {true, false}) {
                    Rng same(12);
                    const int64_t in = c.w[1];
                    Tensor x = rand_tensor(c.x, same, -2, 2, x_grad), w = rand_tensor(c.w, same),
                           b = rand_tensor({c.w[0]}, same);
                    const InputNorm norm{true, rand_tensor({in}, same, 0.5, 1.5), rand_tensor({in}, same), 1e-5};
                    Shape out_shape = c.x;
                    out_shape.back() = c.w[0];
                    const Tensor residual = with_residual ? rand_tensor(out_shape, same) : Tensor();
                    const Tensor y = fused ? linear(x, w, b, residual, norm)
                                           : linear(layer_norm(x, norm.weight, norm.bias, norm.eps), w, b, residual);
                    weighted_sum(y, rand_tensor(y.shape(), same, -1, 1, false)).backward();
                    for (const Tensor& t : {y.detach(), w.grad(), b.grad(), norm.weight.grad(), norm.bias.grad()})
                        results[fused].push_back(t.to_vector());
                    if (x_grad) results[fused].push_back(x.grad().to_vector());
                    if (with_residual) results[fused].push_back(residual.grad().to_vector());
                }
                check_same_bits(results[0], results[1],
                                "0: the value, 1-4: the gradients of W, b, the norm's weight and bias, then x's and "
                                "the residual's");
            }
}

TEST_CASE("linear and mlp: a residual that is x itself, the same bits as + x over several K blocks",
          "[op:linear][op:mlp][forward]") {
    // x's gradient is dOut plus the product's, summed in K blocks of at most 256: the residual's
    // copy must come first, as the add's does, for the blocks to add onto it in the same order.
    std::vector<std::vector<real>> results[2];
    for (const bool fused : {true, false}) {
        Rng same(10);
        const Tensor x = rand_tensor({3, 7, 300}, same), w = rand_tensor({300, 300}, same, real(-0.1), real(0.1)),
                     b = rand_tensor({300}, same);
        const Tensor y = fused ? linear(x, w, b, x) : linear(x, w, b) + x;
        const Tensor w1 = rand_tensor({600, 300}, same, real(-0.1), real(0.1)), b1 = rand_tensor({600}, same),
                     w2 = rand_tensor({300, 600}, same, real(-0.1), real(0.1)), b2 = rand_tensor({300}, same);
        const Tensor z = fused ? mlp(y, w1, b1, w2, b2, GeluApproximation::None, y)
                               : mlp_through_ops(y, w1, b1, w2, b2, GeluApproximation::None) + y;
        weighted_sum(z, rand_tensor(z.shape(), same, -1, 1, false)).backward();
        for (const Tensor& t : {z.detach(), x.grad(), w.grad(), b.grad(), w1.grad(), w2.grad()})
            results[fused].push_back(t.to_vector());
    }
    check_same_bits(results[0], results[1], "0: the value, then the gradients of x, W, b, W1, W2");
}

TEST_CASE("linear: gradcheck with a residual, x itself among them", "[op:linear][gradcheck]") {
    Rng rng(9);
    check_gradients(
        [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2], in[3]); },
        {rand_tensor({2, 3, 5}, rng), rand_tensor({4, 5}, rng), rand_tensor({4}, rng), rand_tensor({2, 3, 4}, rng)},
        34);
    // A skip connection around the layer: x's gradient through the product and the residual.
    check_gradients([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2], in[0]); },
                    {rand_tensor({2, 3, 5}, rng), rand_tensor({5, 5}, rng), rand_tensor({5}, rng)}, 35);
    // Only the residual takes a gradient.
    check_gradients(
        [](const std::vector<Tensor>& in) { return linear(in[0], in[1], Tensor(), in[2]); },
        {rand_tensor({3, 5}, rng, -1, 1, false), rand_tensor({4, 5}, rng, -1, 1, false), rand_tensor({3, 4}, rng)}, 36);
}

TEST_CASE("linear: gradcheck with a norm in front, x itself the residual, and a frozen input",
          "[op:linear][gradcheck]") {
    Rng rng(19);
    const auto norm = [](const std::vector<Tensor>& t, size_t i) { return InputNorm{true, t[i], t[i + 1], 1e-5}; };
    check_gradients([&](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2], Tensor(), norm(in, 3)); },
                    {rand_tensor({2, 3, 5}, rng, -2, 2), rand_tensor({4, 5}, rng), rand_tensor({4}, rng),
                     rand_tensor({5}, rng, 0.5, 1.5), rand_tensor({5}, rng)},
                    37);
    // A block's attention branch in miniature: z + linear(LN(z)).
    check_gradients([&](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2], in[0], norm(in, 3)); },
                    {rand_tensor({2, 3, 5}, rng, -2, 2), rand_tensor({5, 5}, rng), rand_tensor({5}, rng),
                     rand_tensor({5}, rng, 0.5, 1.5), rand_tensor({5}, rng)},
                    38);
    // Only the norm's parameters train; then a norm without a bias.
    check_gradients(
        [&](const std::vector<Tensor>& in) { return linear(in[0], in[1], Tensor(), Tensor(), norm(in, 2)); },
        {rand_tensor({3, 5}, rng, -2, 2, false), rand_tensor({4, 5}, rng, -1, 1, false),
         rand_tensor({5}, rng, 0.5, 1.5), rand_tensor({5}, rng)},
        39);
    check_gradients(
        [&](const std::vector<Tensor>& in) {
            return linear(in[0], in[1], in[2], Tensor(), InputNorm{true, in[3], Tensor(), 1e-5});
        },
        {rand_tensor({3, 5}, rng, -2, 2), rand_tensor({4, 5}, rng), rand_tensor({4}, rng),
         rand_tensor({5}, rng, 0.5, 1.5)},
        40);
}

TEST_CASE("linear: gradcheck with bias on odd shapes", "[op:linear][gradcheck]") {
    Rng rng(2);
    uint64_t seed = 10;
    for (const LinearCase& c : kCases) {
        INFO("x " << shape_str(c.x) << " weight " << shape_str(c.w));
        check_gradients([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                        {rand_tensor(c.x, rng), rand_tensor(c.w, rng), rand_tensor({c.w[0]}, rng)}, ++seed);
    }
}

TEST_CASE("linear: gradcheck without bias", "[op:linear][gradcheck]") {
    Rng rng(3);
    uint64_t seed = 20;
    for (const LinearCase& c : kCases) {
        INFO("x " << shape_str(c.x) << " weight " << shape_str(c.w));
        check_gradients([](const std::vector<Tensor>& in) { return linear(in[0], in[1], Tensor()); },
                        {rand_tensor(c.x, rng), rand_tensor(c.w, rng)}, ++seed);
    }
}

TEST_CASE("linear: gradcheck when only some inputs require grad", "[op:linear][gradcheck]") {
    Rng rng(4);
    auto op = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
    // The image patches going into the first layer need no gradient.
    check_gradients(op, {rand_tensor({2, 3, 5}, rng, -1, 1, false), rand_tensor({4, 5}, rng), rand_tensor({4}, rng)},
                    30);
    // A frozen layer still passes the gradient through to x.
    check_gradients(
        op, {rand_tensor({2, 3, 5}, rng), rand_tensor({4, 5}, rng, -1, 1, false), rand_tensor({4}, rng, -1, 1, false)},
        31);
    check_gradients(
        op, {rand_tensor({3, 5}, rng, -1, 1, false), rand_tensor({4, 5}, rng, -1, 1, false), rand_tensor({4}, rng)},
        32);
}

TEST_CASE("linear: the first gradient overwrites, later ones add (two uses, two backward calls)",
          "[op:linear][gradcheck]") {
    Rng rng(5);
    // x feeds two linears and W is used twice: the second product into each .grad must add.
    check_gradients(
        [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]) + linear(in[0], in[1], Tensor()); },
        {rand_tensor({3, 5}, rng), rand_tensor({4, 5}, rng), rand_tensor({4}, rng)}, 33);
    // A second backward adds onto the .grad the first one wrote.
    Tensor x = rand_tensor({3, 5}, rng), w = rand_tensor({4, 5}, rng);
    sum(linear(x, w, Tensor())).backward();
    const Tensor dx = x.grad(), dw = w.grad();
    sum(linear(x, w, Tensor())).backward();
    require_close(x.grad(), dx * real(2), 1e-12, "dx after two backward calls");
    require_close(w.grad(), dw * real(2), 1e-12, "dW after two backward calls");
}

TEST_CASE("linear: errors name the shapes", "[op:linear][errors]") {
    const Tensor w = Tensor::zeros({4, 5});
    require_error([&] { linear(Tensor::zeros({2, 3}), w, Tensor()); }, {"linear", "[2, 3]", "[4, 5]", "in-features"});
    require_error([&] { linear(Tensor::scalar(1), w, Tensor()); }, {"linear", "[]", "[4, 5]"});
    require_error([&] { linear(Tensor::zeros({2, 5}), w, Tensor::zeros({5})); }, {"linear", "bias", "[5]", "[4, 5]"});
    require_error([&] { linear(Tensor::zeros({2, 5}), w, Tensor::zeros({1, 4})); }, {"linear", "bias", "[1, 4]"});
    require_error([&] { linear(Tensor::zeros({2, 5}), Tensor::zeros({5}), Tensor()); }, {"linear", "weight", "[5]"});
    require_error([&] { linear(Tensor::zeros({2, 5}), Tensor(), Tensor()); }, {"linear", "weight"});
    require_error(
        [&] {
            linear(Tensor::zeros({2, 5}), w, Tensor(), Tensor::zeros({2, 5}));
        },
        {"linear", "residual", "[2, 5]", "[2, 4]"});
    // A norm in front: its own errors, as layer_norm's.
    const InputNorm wrong{true, Tensor::ones({4}), Tensor::zeros({5}), 1e-5};
    require_error(
        [&] {
            linear(Tensor::zeros({2, 5}), w, Tensor(), Tensor(), wrong);
        },
        {"layer_norm", "weight", "[4]", "[5]", "[2, 5]"});
    const InputNorm negative{true, Tensor::ones({5}), Tensor::zeros({5}), -1};
    require_error(
        [&] {
            mlp(Tensor::zeros({2, 5}), Tensor::zeros({3, 5}), Tensor(), Tensor::zeros({2, 3}), Tensor(),
                GeluApproximation::None, Tensor(), negative);
        },
        {"layer_norm", "eps", "-1", "[2, 5]"});
}

}  // namespace patchgrad
