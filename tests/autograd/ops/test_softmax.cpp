#include <array>
#include <cmath>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

// The textbook formula exp(x_i) / sum_j exp(x_j) for a 3-D tensor, walking the axis by
// multi-indices and without subtracting the max (fine for inputs in [-3, 3]).
Tensor naive_softmax_3d(const Tensor& x, int64_t axis) {
    Tensor y = Tensor::empty(x.shape());
    const Shape& s = x.shape();
    for (int64_t i = 0; i < s[0]; ++i)
        for (int64_t j = 0; j < s[1]; ++j)
            for (int64_t k = 0; k < s[2]; ++k) {
                double denominator = 0;
                for (int64_t m = 0; m < s[axis]; ++m) {
                    std::array<int64_t, 3> idx{i, j, k};
                    idx[axis] = m;
                    denominator += std::exp(double(x.at({idx[0], idx[1], idx[2]})));
                }
                y.at({i, j, k}) = static_cast<real>(std::exp(double(x.at({i, j, k}))) / denominator);
            }
    return y;
}

Tensor log_of(const Tensor& x) {
    Tensor y = Tensor::empty(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) y.data()[i] = std::log(x.data()[i]);
    return y;
}

}  // namespace

TEST_CASE("softmax: hand-computed values, also for logits in the thousands",
          "[op:softmax][op:log_softmax][forward][ex:softmax-backward]") {
    // softmax([1, 2, 3]) = e^i / (e + e^2 + e^3); shifting every logit by a constant changes nothing.
    const Tensor expected = Tensor::from_vector({3}, {0.09003057317038046, 0.24472847105479764, 0.6652409557748219});
    require_close(softmax(Tensor::from_vector({3}, {1, 2, 3}), 0), expected, 1e-12);
    require_close(softmax(Tensor::from_vector({3}, {1000, 1001, 1002}), -1), expected, 1e-12);
    require_close(softmax(Tensor::from_vector({3}, {-1000, -999, -998}), 0), expected, 1e-12);

    // log_softmax([1000, 1001, 1002]) = [1000, 1001, 1002] - (1002 + log(1 + e^-1 + e^-2)).
    require_close(log_softmax(Tensor::from_vector({3}, {1000, 1001, 1002}), 0),
                  Tensor::from_vector({3}, {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806}), 1e-12);

    // exp(-1000) underflows to 0 but nothing becomes nan or inf.
    require_close(softmax(Tensor::from_vector({2, 2}, {-1000, 0, 1000, -1000}), 1),
                  Tensor::from_vector({2, 2}, {0, 1, 1, 0}), 1e-12);
    require_close(log_softmax(Tensor::from_vector({2, 2}, {-1000, 0, 1000, -1000}), 1),
                  Tensor::from_vector({2, 2}, {-1000, 0, 0, -2000}), 1e-12);
}

TEST_CASE("softmax: matches the textbook formula along every axis", "[op:softmax][op:log_softmax][forward]") {
    Rng rng(3);
    const Tensor x = rand_tensor({3, 4, 5}, rng, -3, 3, false);
    for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
        INFO("axis " << axis);
        const Tensor expected = naive_softmax_3d(x, axis < 0 ? axis + 3 : axis);
        require_close(softmax(x, axis), expected, 1e-12);
        require_close(log_softmax(x, axis), log_of(expected), 1e-12);
    }
}

TEST_CASE("softmax: sums to one along the axis for large logits", "[op:softmax][forward]") {
    Rng rng(4);
    const Tensor x = rand_tensor({6, 7}, rng, -2000, 2000, false);
    for (int64_t axis : {0, 1}) {
        const Tensor y = softmax(x, axis);
        const Tensor log_y = log_softmax(x, axis);
        for (int64_t i = 0; i < y.numel(); ++i) {
            REQUIRE(std::isfinite(y.data()[i]));
            REQUIRE(!std::isnan(log_y.data()[i]));
        }
        const int64_t rows = axis == 0 ? 7 : 6, n = axis == 0 ? 6 : 7;
        for (int64_t r = 0; r < rows; ++r) {
            double total = 0;
            for (int64_t i = 0; i < n; ++i) total += axis == 0 ? y.at({i, r}) : y.at({r, i});
            REQUIRE(std::abs(total - 1) < 1e-12);
        }
    }
}

TEST_CASE("softmax: gradcheck along each axis", "[op:softmax][gradcheck][ex:softmax-backward]") {
    Rng rng(10);
    const auto op = [](int64_t axis) { return [axis](const std::vector<Tensor>& xs) { return softmax(xs[0], axis); }; };
    for (int64_t axis : {0, 1, -1, -2}) {
        INFO("[7, 11] axis " << axis);
        check_gradients(op(axis), {rand_tensor({7, 11}, rng, -3, 3)}, 11);
    }
    for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
        INFO("[3, 1, 5] axis " << axis);
        check_gradients(op(axis), {rand_tensor({3, 1, 5}, rng, -3, 3)}, 12);
    }
    for (int64_t axis : {1, 3, -3}) {
        INFO("[2, 3, 4, 5] axis " << axis);
        check_gradients(op(axis), {rand_tensor({2, 3, 4, 5}, rng, -3, 3)}, 13);
    }
    check_gradients(op(0), {rand_tensor({13}, rng, -3, 3)}, 14);
}

TEST_CASE("softmax: gradcheck on large logits", "[op:softmax][op:log_softmax][gradcheck][ex:softmax-backward]") {
    Rng rng(20);
    for (real center : {1000.0, -1000.0}) {
        INFO("logits around " << center);
        for (int64_t axis : {0, -1}) {
            check_gradients([axis](const std::vector<Tensor>& xs) { return softmax(xs[0], axis); },
                            {rand_tensor({4, 7}, rng, center - 3, center + 3)}, 21);
            check_gradients([axis](const std::vector<Tensor>& xs) { return log_softmax(xs[0], axis); },
                            {rand_tensor({4, 7}, rng, center - 3, center + 3)}, 22);
        }
    }
}

TEST_CASE("log_softmax: gradcheck along each axis", "[op:log_softmax][gradcheck]") {
    Rng rng(30);
    const auto op = [](int64_t axis) {
        return [axis](const std::vector<Tensor>& xs) { return log_softmax(xs[0], axis); };
    };
    for (int64_t axis : {0, 1, -1, -2}) {
        INFO("[7, 11] axis " << axis);
        check_gradients(op(axis), {rand_tensor({7, 11}, rng, -3, 3)}, 31);
    }
    for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
        INFO("[3, 1, 5] axis " << axis);
        check_gradients(op(axis), {rand_tensor({3, 1, 5}, rng, -3, 3)}, 32);
    }
    for (int64_t axis : {1, 3, -3}) {
        INFO("[2, 3, 4, 5] axis " << axis);
        check_gradients(op(axis), {rand_tensor({2, 3, 4, 5}, rng, -3, 3)}, 33);
    }
}

TEST_CASE("softmax: axis out of range", "[op:softmax][op:log_softmax][errors]") {
    const Tensor x = Tensor::zeros({2, 3});
    require_error([&] { softmax(x, 2); }, {"softmax", "axis 2", "[2, 3]"});
    require_error([&] { softmax(x, -3); }, {"softmax", "axis -3", "[2, 3]"});
    require_error([&] { log_softmax(x, 2); }, {"log_softmax", "axis 2", "[2, 3]"});
    require_error([&] { log_softmax(x, -3); }, {"log_softmax", "axis -3", "[2, 3]"});
    require_error([&] { softmax(Tensor::scalar(1), 0); }, {"softmax", "axis 0", "[]"});
    require_error([&] { log_softmax(Tensor::scalar(1), -1); }, {"log_softmax", "axis -1", "[]"});
}

}  // namespace patchgrad
