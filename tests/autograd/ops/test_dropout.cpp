#include <cmath>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("dropout: keeps about 1 - p of the elements, scaled by 1 / (1 - p)",
          "[op:dropout][forward][ex:dropout-backward]") {
    Rng data_rng(8);
    const Tensor x = rand_tensor({100000}, data_rng, 0.5, 1.5, false);
    for (real p : {0.1, 0.5, 0.9}) {
        INFO("p " << p);
        Rng rng(9);
        const Tensor y = dropout(x, p, true, rng);
        int64_t kept = 0, badly_scaled = 0;
        for (int64_t i = 0; i < x.numel(); ++i) {
            if (y.data()[i] == 0) continue;
            ++kept;
            badly_scaled += std::abs(y.data()[i] - x.data()[i] / (1 - p)) > 1e-15 * std::abs(y.data()[i]);
        }
        REQUIRE(badly_scaled == 0);
        // The kept count is Binomial(n, 1 - p): its standard deviation is at most 0.0016 n here.
        REQUIRE(std::abs(double(kept) / x.numel() - (1 - p)) < 0.01);
    }
}

TEST_CASE("dropout: the mask comes from the rng: same seed, same mask", "[op:dropout][forward][ex:dropout-backward]") {
    const Tensor x = Tensor::ones({7, 11});
    Rng a(3), b(3), c(4);
    const Tensor ya = dropout(x, 0.5, true, a), yb = dropout(x, 0.5, true, b), yc = dropout(x, 0.5, true, c);
    require_close(ya, yb, 0);
    bool differs = false;
    for (int64_t i = 0; i < x.numel(); ++i) differs |= ya.data()[i] != yc.data()[i];
    REQUIRE(differs);
    // The rng moved on: a second call with it draws another mask.
    const Tensor ya2 = dropout(x, 0.5, true, a);
    differs = false;
    for (int64_t i = 0; i < x.numel(); ++i) differs |= ya.data()[i] != ya2.data()[i];
    REQUIRE(differs);
}

TEST_CASE("dropout: evaluation and p = 0 are the identity and draw nothing", "[op:dropout][forward]") {
    Rng data_rng(1);
    Tensor x = rand_tensor({3, 1, 5}, data_rng);
    Rng rng(12);
    const auto state = rng.state();
    for (real p : {0.0, 0.3, 1.0}) {
        const Tensor y = dropout(x, p, false, rng);
        REQUIRE(y.same(x));
    }
    REQUIRE(dropout(x, 0, true, rng).same(x));
    REQUIRE(rng.state() == state);

    // The gradient of the identity is dy.
    Tensor y = dropout(x, 0.4, false, rng);
    const Tensor seed = rand_tensor({3, 1, 5}, data_rng, -1, 1, false);
    y.backward(seed);
    require_close(x.grad(), seed, 0);
}

TEST_CASE("dropout: p = 1 in training gives zeros and zero gradients", "[op:dropout][forward][ex:dropout-backward]") {
    Rng data_rng(2);
    const Tensor x = rand_tensor({4, 6}, data_rng);
    Rng rng(13);
    Tensor y = dropout(x, 1, true, rng);
    require_close(y, Tensor::zeros({4, 6}), 0);
    y.backward(Tensor::ones({4, 6}));
    require_close(x.grad(), Tensor::zeros({4, 6}), 0);
}

TEST_CASE("dropout: gradcheck with a fixed mask", "[op:dropout][gradcheck][ex:dropout-backward]") {
    Rng rng(90);
    for (real p : {0.3, 0.5}) {
        // A fresh Rng with a fixed seed inside the function: every evaluation uses the same mask.
        const auto op = [p](const std::vector<Tensor>& xs) {
            Rng mask_rng(91);
            return dropout(xs[0], p, true, mask_rng);
        };
        for (const Shape& shape : {Shape{7, 11}, Shape{3, 1, 5}, Shape{1}}) {
            INFO("p " << p << ", x " << shape_str(shape));
            check_gradients(op, {rand_tensor(shape, rng)}, 92);
        }
    }
}

TEST_CASE("dropout: the backward uses the forward's mask, one draw per element", "[op:dropout][ex:dropout-backward]") {
    Rng data_rng(5);
    Tensor x = rand_tensor({6, 9}, data_rng, 0.5, 1.5);
    const Tensor seed = rand_tensor({6, 9}, data_rng, -1, 1, false);
    const real p = 0.4;
    Rng rng(14), replay(14);
    Tensor y = dropout(x, p, true, rng);
    y.backward(seed);
    // keep_i = (u_i >= p) for the i-th uniform draw: y = x keep / (1 - p)
    for (int64_t i = 0; i < x.numel(); ++i) {
        const bool keep = replay.uniform() >= p;
        INFO("element " << i);
        REQUIRE(y.data()[i] == Approx(keep ? x.data()[i] / (1 - p) : 0.0));
        REQUIRE(x.grad().data()[i] == Approx(keep ? seed.data()[i] / (1 - p) : 0.0));
    }
    REQUIRE(rng.state() == replay.state());  // exactly one draw per element
}

TEST_CASE("dropout: p outside [0, 1]", "[op:dropout][errors]") {
    const Tensor x = Tensor::zeros({2, 3});
    Rng rng(0);
    require_error([&] { dropout(x, -0.1, true, rng); }, {"dropout", "p", "-0.1", "[2, 3]"});
    require_error([&] { dropout(x, 1.5, true, rng); }, {"dropout", "p", "1.5", "[2, 3]"});
    require_error([&] { dropout(x, 1.5, false, rng); }, {"dropout", "p", "1.5", "[2, 3]"});
    require_error([&] { dropout(x, std::nan(""), true, rng); }, {"dropout", "p", "nan", "[2, 3]"});
}

}  // namespace patchgrad
