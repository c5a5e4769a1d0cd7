// Tests for ema.h: the exponential moving average of the weights.
#include "patchgrad/autograd/optim/ema.h"

#include <cmath>

#include "../determinism_util.h"
#include "catch.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("ExponentialMovingAverage: the ramp (1 + t) / (10 + t) up to decay", "[optim][ema]") {
    ExponentialMovingAverage ema({}, {}, 0.999);
    CHECK(ema.decay_at(0) == Approx(0.1).epsilon(1e-15));
    CHECK(ema.decay_at(890) == Approx(0.99).epsilon(1e-15));
    CHECK(ema.decay_at(8989) < 0.999);
    CHECK(ema.decay_at(8990) == 0.999);
    CHECK(ema.decay_at(1000000) == 0.999);
    ExponentialMovingAverage zero({}, {}, 0);
    CHECK(zero.decay_at(5) == 0);  // decay 0: the average is the last weights
}

TEST_CASE("ExponentialMovingAverage: starts as a copy, then follows the formula step by step", "[optim][ema]") {
    Rng rng(3);
    Tensor w1 = rand_tensor({3, 4}, rng), w2 = rand_tensor({5}, rng);
    Tensor a1 = Tensor::zeros({3, 4}), a2 = Tensor::zeros({5});
    ExponentialMovingAverage ema({w1, w2}, {a1, a2}, 0.9);
    REQUIRE(a1.to_vector() == w1.to_vector());
    REQUIRE(a2.to_vector() == w2.to_vector());
    std::vector<double> expected(a1.data(), a1.data() + a1.numel());
    for (int64_t t = 0; t < 30; ++t) {
        w1.data()[0] += real(0.5);  // the weights move
        for (int64_t i = 0; i < w1.numel(); ++i) w1.data()[i] *= real(0.97);
        ema.update(t);
        const double d = std::min(0.9, (1.0 + double(t)) / (10.0 + double(t)));
        for (int64_t i = 0; i < w1.numel(); ++i) expected[i] = d * expected[i] + (1 - d) * double(w1.data()[i]);
    }
    for (int64_t i = 0; i < a1.numel(); ++i) CHECK(double(a1.data()[i]) == Approx(expected[i]).epsilon(1e-10));
    CHECK(a2.to_vector() == w2.to_vector());  // weights that did not move keep their average
}

TEST_CASE("ExponentialMovingAverage: the same bits for 1, 2 and 3 threads", "[optim][ema][parallel]") {
    auto run = [](int threads) {
        ThreadCount guard(threads);
        Rng rng(4);
        Tensor w = rand_tensor({300, 200}, rng), a = Tensor::zeros({300, 200});
        ExponentialMovingAverage ema({w}, {a}, 0.99);
        for (int64_t t = 0; t < 5; ++t) {
            for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = std::sin(w.data()[i] + real(t));
            ema.update(t);
        }
        return a.to_vector();
    };
    const auto one = run(1);
    CHECK(run(2) == one);
    CHECK(run(3) == one);
}

TEST_CASE("ExponentialMovingAverage: errors name the decay and the shapes", "[optim][ema][errors]") {
    require_error([] { ExponentialMovingAverage({}, {}, 1); }, {"ExponentialMovingAverage", "decay", "1"});
    require_error([] { ExponentialMovingAverage({}, {}, -0.1); }, {"ExponentialMovingAverage", "-0.1"});
    require_error([] { ExponentialMovingAverage({Tensor::zeros({2})}, {}, 0.5); }, {"1 weights", "0 tensors"});
    require_error([] { ExponentialMovingAverage({Tensor::zeros({2})}, {Tensor::zeros({3})}, 0.5); },
                  {"weight 0", "[2]", "[3]"});
}

}  // namespace patchgrad
