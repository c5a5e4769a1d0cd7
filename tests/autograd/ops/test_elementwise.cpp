// Elementwise ops on tensors of the same shape, the pointwise functions, the scalar ops and
// the operators. Broadcasting has its own file, test_broadcast.cpp.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {

// Odd shapes: a 1-sized middle axis, prime sizes, one element, a scalar, and one big enough
// for the vectorised loops to run several full iterations.
const std::vector<Shape>& shapes() {
    static const std::vector<Shape> s = {{3, 1, 5}, {7, 11}, {1}, {}, {13, 37}};
    return s;
}

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

// Elementwise reference: f applied to every element, in a loop written for the test.
Tensor elementwise_reference(const Tensor& x, const std::function<real(real)>& f) {
    std::vector<real> v = x.to_vector();
    for (real& e : v) e = f(e);
    return Tensor::from_vector(x.shape(), v);
}

}  // namespace

TEST_CASE("add/sub/mul/div: same-shape forward by hand", "[op:add][op:sub][op:mul][op:div][forward]") {
    Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
    Tensor b = Tensor::from_vector({2, 2}, {2, 4, -1, 0.5});
    require_close(add(a, b), Tensor::from_vector({2, 2}, {3, 6, 2, 4.5}), 0);
    require_close(sub(a, b), Tensor::from_vector({2, 2}, {-1, -2, 4, 3.5}), 0);
    require_close(mul(a, b), Tensor::from_vector({2, 2}, {2, 8, -3, 2}), 0);
    require_close(div(a, b), Tensor::from_vector({2, 2}, {0.5, 0.5, -3, 8}), 0);
}

TEST_CASE("add/sub/mul/div: gradcheck on same shapes",
          "[op:add][op:sub][op:mul][op:div][gradcheck][ex:broadcast-backward]") {
    Rng rng(20);
    const std::vector<std::pair<std::string, Op>> ops = {
        {"add", [](const std::vector<Tensor>& in) { return add(in[0], in[1]); }},
        {"sub", [](const std::vector<Tensor>& in) { return sub(in[0], in[1]); }},
        {"mul", [](const std::vector<Tensor>& in) { return mul(in[0], in[1]); }},
        {"div", [](const std::vector<Tensor>& in) { return div(in[0], in[1]); }},
    };
    uint64_t seed = 1;
    for (const auto& [name, op] : ops)
        for (const Shape& shape : shapes()) {
            INFO(name << " on " << shape_str(shape));
            check_gradients(op, {rand_tensor(shape, rng), rand_tensor(shape, rng, 0.5, 2)}, seed++);
        }
}

TEST_CASE("mul: a tensor used twice, x * x, has gradient 2x",
          "[op:mul][op:add][op:sub][op:div][gradcheck][ex:broadcast-backward]") {
    Rng rng(21);
    Tensor x = rand_tensor({3, 5}, rng);
    mul(x, x).backward(Tensor::ones({3, 5}));
    require_close(x.grad(), elementwise_reference(x, [](real v) { return 2 * v; }), 0);

    Tensor p = rand_tensor({7, 11}, rng, 0.5, 2);
    check_gradients([](const std::vector<Tensor>& in) { return mul(in[0], in[0]); }, {p}, 1);
    check_gradients([](const std::vector<Tensor>& in) { return add(in[0], in[0]); }, {p}, 2);
    check_gradients([](const std::vector<Tensor>& in) { return sub(in[0], in[0]); }, {p}, 3);
    check_gradients([](const std::vector<Tensor>& in) { return div(in[0], in[0]); }, {p}, 4);
    check_gradients([](const std::vector<Tensor>& in) { return mul(add(in[0], in[0]), div(in[0], in[1])); },
                    {p, rand_tensor({7, 11}, rng, 0.5, 2)}, 5);
}

TEST_CASE("mul: only inputs that require grad get a gradient, and no graph without grad mode", "[op:mul][gradcheck]") {
    Tensor a = Tensor::from_vector({3}, {1, 2, 3}, true);
    Tensor b = Tensor::from_vector({3}, {4, 5, 6});
    Tensor y = mul(a, b);
    REQUIRE(y.requires_grad());
    y.backward(Tensor::ones({3}));
    require_close(a.grad(), b, 0);
    REQUIRE_FALSE(b.has_grad());

    REQUIRE_FALSE(mul(b, b).requires_grad());
    NoGradGuard no_grad;
    Tensor z = mul(a, b);
    REQUIRE_FALSE(z.requires_grad());
    REQUIRE(z.is_leaf());
}

TEST_CASE("exp/log/sqrt/tanh/pow/neg: forward by hand", "[op:exp][op:log][op:sqrt][op:tanh][op:pow][op:neg][forward]") {
    const double e = 2.718281828459045;
    require_close(exp(Tensor::from_vector({3}, {0, 1, -1})), Tensor::from_vector({3}, {1, real(e), real(1 / e)}));
    require_close(log(Tensor::from_vector({3}, {1, real(e), 0.5})),
                  Tensor::from_vector({3}, {0, 1, -0.6931471805599453}));
    require_close(sqrt(Tensor::from_vector({3}, {0, 4, 2})), Tensor::from_vector({3}, {0, 2, 1.4142135623730951}));
    require_close(tanh(Tensor::from_vector({3}, {0, 1, -1})),
                  Tensor::from_vector({3}, {0, 0.7615941559557649, -0.7615941559557649}));
    require_close(pow(Tensor::from_vector({3}, {2, -3, 4}), 2), Tensor::from_vector({3}, {4, 9, 16}));
    require_close(pow(Tensor::from_vector({3}, {2, -3, 4}), 3), Tensor::from_vector({3}, {8, -27, 64}));
    require_close(pow(Tensor::from_vector({2}, {4, 0.25}), 0.5), Tensor::from_vector({2}, {2, 0.5}));
    require_close(pow(Tensor::from_vector({2}, {2, -4}), -1), Tensor::from_vector({2}, {0.5, -0.25}));
    require_close(pow(Tensor::from_vector({2}, {2, -4}), 0), Tensor::from_vector({2}, {1, 1}));
    require_close(neg(Tensor::from_vector({3}, {1, -2, 0})), Tensor::from_vector({3}, {-1, 2, 0}), 0);
}

TEST_CASE("exp/log/sqrt/tanh/pow: forward satisfies identities on random inputs",
          "[op:exp][op:log][op:sqrt][op:tanh][op:pow][forward]") {
    Rng rng(22);
    Tensor x = rand_tensor({7, 11}, rng, 0.1, 3, false);
    require_close(exp(log(x)), x, 1e-12);
    require_close(mul(sqrt(x), sqrt(x)), x, 1e-12);
    require_close(pow(x, 0.5), sqrt(x), 1e-12);
    require_close(pow(x, -2), elementwise_reference(x, [](real v) { return 1 / (v * v); }), 1e-12);
    Tensor y = rand_tensor({7, 11}, rng, -3, 3, false);
    require_close(pow(y, 3), elementwise_reference(y, [](real v) { return v * v * v; }), 1e-12);
    require_close(
        tanh(y), elementwise_reference(y, [](real v) { return (std::exp(2 * v) - 1) / (std::exp(2 * v) + 1); }), 1e-12);
}

TEST_CASE("exp/log/sqrt/tanh/neg: gradcheck", "[op:exp][op:log][op:sqrt][op:tanh][op:neg][gradcheck]") {
    Rng rng(23);
    struct Case {
        const char* name;
        Op op;
        real low, high;
    };
    const std::vector<Case> cases = {
        {"exp", [](const std::vector<Tensor>& in) { return exp(in[0]); }, -2, 2},
        {"log", [](const std::vector<Tensor>& in) { return log(in[0]); }, 0.5, 3},
        {"sqrt", [](const std::vector<Tensor>& in) { return sqrt(in[0]); }, 0.5, 3},
        {"tanh", [](const std::vector<Tensor>& in) { return tanh(in[0]); }, -2, 2},
        {"neg", [](const std::vector<Tensor>& in) { return neg(in[0]); }, -2, 2},
    };
    uint64_t seed = 1;
    for (const auto& c : cases)
        for (const Shape& shape : shapes()) {
            INFO(c.name << " on " << shape_str(shape));
            check_gradients(c.op, {rand_tensor(shape, rng, c.low, c.high)}, seed++);
        }
}

TEST_CASE("pow: gradcheck for integer, fractional, negative, zero and unit exponents", "[op:pow][gradcheck]") {
    Rng rng(24);
    uint64_t seed = 1;
    // Integer exponents are defined for negative bases too; the others need positive ones.
    for (real p : {2.0, 3.0, -1.0, -2.0}) {
        INFO("exponent " << p);
        check_gradients([p](const std::vector<Tensor>& in) { return pow(in[0], p); },
                        {rand_tensor({3, 1, 5}, rng, -2, -0.5)}, seed++);
    }
    for (real p : {2.0, 3.0, -1.0, -2.0, 0.5, 1.5, -0.5, 0.0, 1.0})
        for (const Shape& shape : shapes()) {
            INFO("exponent " << p << " on " << shape_str(shape));
            check_gradients([p](const std::vector<Tensor>& in) { return pow(in[0], p); },
                            {rand_tensor(shape, rng, 0.5, 2)}, seed++);
        }
}

TEST_CASE("pow: exponent 0 has gradient 0 everywhere, also at 0", "[op:pow][gradcheck]") {
    Tensor x = Tensor::from_vector({3}, {0, 1, -2}, true);
    Tensor y = pow(x, 0);
    require_close(y, Tensor::ones({3}), 0);
    y.backward(Tensor::ones({3}));
    require_close(x.grad(), Tensor::zeros({3}), 0);
}

TEST_CASE("log/sqrt/div/exp: IEEE infinities and nans instead of errors",
          "[op:log][op:sqrt][op:div][op:exp][forward]") {
    const real inf = std::numeric_limits<real>::infinity();
    Tensor l = log(Tensor::from_vector({2}, {0, -1}));
    REQUIRE(l.data()[0] == -inf);
    REQUIRE(std::isnan(l.data()[1]));
    Tensor s = sqrt(Tensor::from_vector({2}, {-1, 0}));
    REQUIRE(std::isnan(s.data()[0]));
    REQUIRE(s.data()[1] == 0);
    Tensor d = div(Tensor::from_vector({3}, {1, -1, 0}), Tensor::zeros({3}));
    REQUIRE(d.data()[0] == inf);
    REQUIRE(d.data()[1] == -inf);
    REQUIRE(std::isnan(d.data()[2]));
    REQUIRE(exp(Tensor::scalar(1e4)).item() == inf);

    // sqrt at 0 has an infinite slope, as in PyTorch.
    Tensor z = Tensor::zeros({1}, true);
    sqrt(z).backward(Tensor::ones({1}));
    REQUIRE(z.grad().item() == inf);
}

TEST_CASE("add/mul with a scalar: forward by hand", "[op:add][op:mul][forward]") {
    Tensor x = Tensor::from_vector({2, 2}, {1, -2, 0.5, 4});
    require_close(add(x, 2.5), Tensor::from_vector({2, 2}, {3.5, 0.5, 3, 6.5}), 0);
    require_close(mul(x, -3), Tensor::from_vector({2, 2}, {-3, 6, -1.5, -12}), 0);
}

TEST_CASE("add/mul with a scalar: gradcheck", "[op:add][op:mul][gradcheck]") {
    Rng rng(25);
    uint64_t seed = 1;
    for (const Shape& shape : shapes()) {
        INFO(shape_str(shape));
        check_gradients([](const std::vector<Tensor>& in) { return add(in[0], real(0.7)); }, {rand_tensor(shape, rng)},
                        seed++);
        check_gradients([](const std::vector<Tensor>& in) { return mul(in[0], real(-1.3)); }, {rand_tensor(shape, rng)},
                        seed++);
    }
}

TEST_CASE("add/sub/mul/div/neg: the operators, forward values", "[op:add][op:sub][op:mul][op:div][op:neg][forward]") {
    Tensor a = Tensor::from_vector({3}, {1, 2, 4});
    Tensor b = Tensor::from_vector({3}, {2, -1, 8});
    require_close(a + b, Tensor::from_vector({3}, {3, 1, 12}), 0);
    require_close(a - b, Tensor::from_vector({3}, {-1, 3, -4}), 0);
    require_close(a * b, Tensor::from_vector({3}, {2, -2, 32}), 0);
    require_close(a / b, Tensor::from_vector({3}, {0.5, -2, 0.5}), 0);
    require_close(-a, Tensor::from_vector({3}, {-1, -2, -4}), 0);
    require_close(a + 1, Tensor::from_vector({3}, {2, 3, 5}), 0);
    require_close(1 + a, Tensor::from_vector({3}, {2, 3, 5}), 0);
    require_close(a - 1, Tensor::from_vector({3}, {0, 1, 3}), 0);
    require_close(1 - a, Tensor::from_vector({3}, {0, -1, -3}), 0);
    require_close(a * 3, Tensor::from_vector({3}, {3, 6, 12}), 0);
    require_close(3 * a, Tensor::from_vector({3}, {3, 6, 12}), 0);
    require_close(a / 4, Tensor::from_vector({3}, {0.25, 0.5, 1}), 0);
    require_close(4 / a, Tensor::from_vector({3}, {4, 2, 1}), 0);

    // Division by a scalar is a true division, not a multiplication by a rounded reciprocal.
    Tensor t = Tensor::from_vector({3}, {1, 7, 10});
    require_close(t / 3, elementwise_reference(t, [](real v) { return v / real(3); }), 0);
    require_close(3 / t, elementwise_reference(t, [](real v) { return real(3) / v; }), 0);
}

TEST_CASE("add/sub/mul/div/neg: the operators, gradcheck with scalars on either side",
          "[op:add][op:sub][op:mul][op:div][op:neg][gradcheck]") {
    Rng rng(26);
    const std::vector<std::pair<std::string, Op>> ops = {
        {"a + b", [](const std::vector<Tensor>& in) { return in[0] + in[1]; }},
        {"a - b", [](const std::vector<Tensor>& in) { return in[0] - in[1]; }},
        {"a * b", [](const std::vector<Tensor>& in) { return in[0] * in[1]; }},
        {"a / b", [](const std::vector<Tensor>& in) { return in[0] / in[1]; }},
        {"-a", [](const std::vector<Tensor>& in) { return -in[0] + in[1]; }},
        {"a + s", [](const std::vector<Tensor>& in) { return in[0] + real(0.3) + in[1]; }},
        {"s + a", [](const std::vector<Tensor>& in) { return real(0.3) + in[0] + in[1]; }},
        {"a - s", [](const std::vector<Tensor>& in) { return in[0] - real(0.3) + in[1]; }},
        {"s - a", [](const std::vector<Tensor>& in) { return real(0.3) - in[0] + in[1]; }},
        {"a * s", [](const std::vector<Tensor>& in) { return in[0] * real(-1.7) + in[1]; }},
        {"s * a", [](const std::vector<Tensor>& in) { return real(-1.7) * in[0] + in[1]; }},
        {"a / s", [](const std::vector<Tensor>& in) { return in[0] / real(-1.7) + in[1]; }},
        {"s / a", [](const std::vector<Tensor>& in) { return real(-1.7) / in[0] + in[1]; }},
        {"(a * b - 1) / (b + 2)", [](const std::vector<Tensor>& in) { return (in[0] * in[1] - 1) / (in[1] + 2); }},
    };
    uint64_t seed = 1;
    for (const auto& [name, op] : ops) {
        INFO(name);
        check_gradients(op, {rand_tensor({7, 11}, rng, 0.5, 2), rand_tensor({7, 11}, rng, 0.5, 2)}, seed++);
        check_gradients(op, {rand_tensor({3, 1, 5}, rng, 0.5, 2), rand_tensor({5}, rng, 0.5, 2)}, seed++);
    }
}
