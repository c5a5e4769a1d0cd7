// sum, mean and max, over the whole tensor and along one axis.
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {

enum class Kind { Sum, Mean, Max };

const char* kind_name(Kind kind) { return kind == Kind::Sum ? "sum" : kind == Kind::Mean ? "mean" : "max"; }

Tensor reduce(Kind kind, const Tensor& x, int64_t axis, bool keepdim) {
    switch (kind) {
        case Kind::Sum:
            return sum(x, axis, keepdim);
        case Kind::Mean:
            return mean(x, axis, keepdim);
        case Kind::Max:
            return max(x, axis, keepdim);
    }
    return Tensor();
}

Tensor reduce_all(Kind kind, const Tensor& x) {
    switch (kind) {
        case Kind::Sum:
            return sum(x);
        case Kind::Mean:
            return mean(x);
        case Kind::Max:
            return max(x);
    }
    return Tensor();
}

// The values of reducing `x` along the (non-negative) `axis`: every input element, visited in
// flat order, is sent to the output position its multi-index has without that axis.
std::vector<real> reference_reduce(Kind kind, const Tensor& x, int64_t axis) {
    const Shape& shape = x.shape();
    Shape out_shape = shape;
    out_shape.erase(out_shape.begin() + axis);
    std::vector<real> out(shape_numel(out_shape), 0);
    std::vector<bool> seen(out.size(), false);
    std::vector<int64_t> idx(shape.size());
    for (int64_t flat = 0; flat < x.numel(); ++flat) {
        int64_t rest = flat;
        for (size_t k = shape.size(); k-- > 0;) {
            idx[k] = rest % shape[k];
            rest /= shape[k];
        }
        int64_t o = 0;
        for (size_t k = 0; k < shape.size(); ++k)
            if (static_cast<int64_t>(k) != axis) o = o * shape[k] + idx[k];
        const real v = x.data()[flat];
        if (kind != Kind::Max)
            out[o] += v;
        else if (!seen[o] || v > out[o])
            out[o] = v;
        seen[o] = true;
    }
    if (kind == Kind::Mean)
        for (real& v : out) v /= static_cast<real>(shape[axis]);
    return out;
}

// 0.01 * (a random permutation of 0..n-1) - 1: no two values closer than 0.01, far more than
// the gradient check's step, so a nudged value never changes which element is the maximum.
Tensor distinct_tensor(const Shape& shape, Rng& rng) {
    std::vector<real> v(shape_numel(shape));
    std::iota(v.begin(), v.end(), real(0));
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
    for (real& e : v) e = real(0.01) * e - 1;
    return Tensor::from_vector(shape, v, true);
}

// 1-sized axes, prime sizes, 1-D and 3-D.
const std::vector<Shape>& shapes() {
    static const std::vector<Shape> s = {{3, 1, 5}, {2, 3, 7}, {4}, {6, 1}, {1}};
    return s;
}

}  // namespace

TEST_CASE("sum/mean/max: whole tensor by hand", "[op:sum][op:mean][op:max][forward]") {
    Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 6, 5});
    REQUIRE(sum(x).shape() == Shape{});
    REQUIRE(sum(x).item() == 21);
    REQUIRE(mean(x).item() == 3.5);
    REQUIRE(max(x).item() == 6);
    REQUIRE(sum(Tensor::scalar(-2)).item() == -2);
    REQUIRE(mean(Tensor::scalar(-2)).item() == -2);
    REQUIRE(max(Tensor::scalar(-2)).item() == -2);
}

TEST_CASE("sum/mean/max: along an axis by hand, with and without keepdim",
          "[op:sum][op:mean][op:max][forward][ex:sum-axis-forward]") {
    Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 6, 5});
    require_close(sum(x, 0), Tensor::from_vector({3}, {5, 8, 8}), 0);
    require_close(sum(x, 1), Tensor::from_vector({2}, {6, 15}), 0);
    require_close(sum(x, -1, true), Tensor::from_vector({2, 1}, {6, 15}), 0);
    require_close(mean(x, 0, true), Tensor::from_vector({1, 3}, {2.5, 4, 4}), 0);
    require_close(mean(x, -1), Tensor::from_vector({2}, {2, 5}), 0);
    require_close(max(x, 0), Tensor::from_vector({3}, {4, 6, 5}), 0);
    require_close(max(x, -1, true), Tensor::from_vector({2, 1}, {3, 6}), 0);
}

TEST_CASE("sum/mean/max: every axis, negative axes and keepdim match a reference",
          "[op:sum][op:mean][op:max][forward][ex:sum-axis-forward]") {
    Rng rng(30);
    for (Kind kind : {Kind::Sum, Kind::Mean, Kind::Max})
        for (const Shape& shape : shapes()) {
            Tensor x = rand_tensor(shape, rng, -1, 1, false);
            const auto ndim = static_cast<int64_t>(shape.size());
            for (int64_t axis = -ndim; axis < ndim; ++axis)
                for (bool keepdim : {false, true}) {
                    INFO(kind_name(kind) << " of " << shape_str(shape) << " along " << axis << " keepdim " << keepdim);
                    const int64_t ax = axis < 0 ? axis + ndim : axis;
                    Shape expected = shape;
                    if (keepdim)
                        expected[ax] = 1;
                    else
                        expected.erase(expected.begin() + ax);
                    Tensor out = reduce(kind, x, axis, keepdim);
                    REQUIRE(out.shape() == expected);
                    require_close(out, Tensor::from_vector(expected, reference_reduce(kind, x, ax)), 1e-12);
                }
        }
}

TEST_CASE("sum/mean/max: gradcheck along every axis, negative axes, keepdim",
          "[op:sum][op:mean][op:max][gradcheck][ex:sum-axis-backward]") {
    Rng rng(31);
    uint64_t seed = 1;
    for (Kind kind : {Kind::Sum, Kind::Mean, Kind::Max})
        for (const Shape& shape : shapes()) {
            const auto ndim = static_cast<int64_t>(shape.size());
            for (int64_t axis = -ndim; axis < ndim; ++axis)
                for (bool keepdim : {false, true}) {
                    INFO(kind_name(kind) << " of " << shape_str(shape) << " along " << axis << " keepdim " << keepdim);
                    Tensor x = kind == Kind::Max ? distinct_tensor(shape, rng) : rand_tensor(shape, rng);
                    check_gradients([kind, axis, keepdim](
                                        const std::vector<Tensor>& in) { return reduce(kind, in[0], axis, keepdim); },
                                    {x}, seed++);
                }
        }
}

TEST_CASE("sum/mean/max: gradcheck over the whole tensor", "[op:sum][op:mean][op:max][gradcheck]") {
    Rng rng(32);
    uint64_t seed = 1;
    for (Kind kind : {Kind::Sum, Kind::Mean, Kind::Max})
        for (const Shape& shape : {Shape{3, 1, 5}, Shape{7, 11}, Shape{1}, Shape{}}) {
            INFO(kind_name(kind) << " of " << shape_str(shape));
            Tensor x = kind == Kind::Max ? distinct_tensor(shape, rng) : rand_tensor(shape, rng);
            check_gradients([kind](const std::vector<Tensor>& in) { return reduce_all(kind, in[0]); }, {x}, seed++);
        }
}

TEST_CASE("sum/mean/max: the gradient by hand", "[op:sum][op:mean][op:max][gradcheck][ex:sum-axis-backward]") {
    Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 6, 5}, true);
    sum(x, 0).backward(Tensor::from_vector({3}, {1, 2, 3}));
    require_close(x.grad(), Tensor::from_vector({2, 3}, {1, 2, 3, 1, 2, 3}), 0);
    x.zero_grad();
    mean(x, 1, true).backward(Tensor::from_vector({2, 1}, {3, 6}));
    require_close(x.grad(), Tensor::from_vector({2, 3}, {1, 1, 1, 2, 2, 2}), 0);
    x.zero_grad();
    mean(x).backward();
    require_close(x.grad(), Tensor::full({2, 3}, real(1) / 6), 0);
    x.zero_grad();
    max(x, 1).backward(Tensor::from_vector({2}, {10, 20}));
    require_close(x.grad(), Tensor::from_vector({2, 3}, {0, 0, 10, 0, 20, 0}), 0);
}

TEST_CASE("max: ties send the gradient to the first maximum", "[op:max][gradcheck]") {
    Tensor x = Tensor::from_vector({2, 3}, {1, 3, 3, 2, 2, 0}, true);
    Tensor m = max(x, 1);
    require_close(m, Tensor::from_vector({2}, {3, 2}), 0);
    m.backward(Tensor::ones({2}));
    require_close(x.grad(), Tensor::from_vector({2, 3}, {0, 1, 0, 1, 0, 0}), 0);

    x.zero_grad();
    max(x, 0, true).backward(Tensor::ones({1, 3}));
    require_close(x.grad(), Tensor::from_vector({2, 3}, {0, 1, 1, 1, 0, 0}), 0);

    Tensor y = Tensor::from_vector({4}, {5, 1, 5, 5}, true);
    max(y).backward();
    require_close(y.grad(), Tensor::from_vector({4}, {1, 0, 0, 0}), 0);
}

TEST_CASE("max: a nan anywhere makes the result nan", "[op:max][forward]") {
    const real nan = std::numeric_limits<real>::quiet_NaN();
    REQUIRE(std::isnan(max(Tensor::from_vector({3}, {1, nan, 3})).item()));
    REQUIRE(std::isnan(max(Tensor::from_vector({3}, {nan, 1, 3})).item()));
    Tensor m = max(Tensor::from_vector({2, 3}, {1, nan, 3, 4, 5, 6}), 1);
    REQUIRE(std::isnan(m.data()[0]));
    REQUIRE(m.data()[1] == 6);
}

TEST_CASE("sum/mean: empty tensors sum to 0 and average to nan", "[op:sum][op:mean][forward]") {
    REQUIRE(sum(Tensor::zeros({0, 3})).item() == 0);
    REQUIRE(std::isnan(mean(Tensor::zeros({0, 3})).item()));
    require_close(sum(Tensor::zeros({0, 3}), 0), Tensor::zeros({3}), 0);
    REQUIRE(std::isnan(mean(Tensor::zeros({0, 3}), 0).data()[0]));
    REQUIRE(sum(Tensor::zeros({0, 3}), 1).shape() == Shape{0});
}

TEST_CASE("sum/mean/max: an axis out of range throws naming the axis and shape", "[op:sum][op:mean][op:max][errors]") {
    for (Kind kind : {Kind::Sum, Kind::Mean, Kind::Max}) {
        const std::string name = kind_name(kind);
        require_error([kind] { reduce(kind, Tensor::zeros({2, 3}), 2, false); }, {name, "axis 2", "[2, 3]"});
        require_error([kind] { reduce(kind, Tensor::zeros({2, 3}), -3, true); }, {name, "axis -3", "[2, 3]"});
        require_error([kind] { reduce(kind, Tensor::scalar(1), 0, false); }, {name, "axis 0", "[]"});
    }
}

TEST_CASE("max: an empty tensor or an empty axis throws", "[op:max][errors]") {
    require_error([] { max(Tensor::zeros({0, 3})); }, {"max", "empty", "[0, 3]"});
    require_error([] { max(Tensor::zeros({2, 0}), 1); }, {"max", "axis 1", "size 0", "[2, 0]"});
    require_error([] { max(Tensor::zeros({2, 0}), -1, true); }, {"max", "axis -1", "size 0", "[2, 0]"});
}
