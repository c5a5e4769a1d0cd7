// Tests for shape.cpp: reshape, permute, transpose, concat, slice, select, gather_rows. The forward
// references below work element by element through multi-indices (unravel / ravel), a
// different route from the ops' block copies and odometer.
#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

Shape unravel(int64_t flat, const Shape& shape) {
    Shape index(shape.size());
    for (int64_t k = static_cast<int64_t>(shape.size()) - 1; k >= 0; --k) {
        index[k] = flat % shape[k];
        flat /= shape[k];
    }
    return index;
}

int64_t ravel(const Shape& index, const Shape& shape) {
    int64_t flat = 0;
    for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + index[k];
    return flat;
}

// out[i] = a[j] with j[dims[m]] = i[m]; dims already non-negative.
Tensor naive_permute(const Tensor& a, const std::vector<int64_t>& dims) {
    Shape out_shape(dims.size());
    for (size_t m = 0; m < dims.size(); ++m) out_shape[m] = a.shape()[dims[m]];
    Tensor out = Tensor::zeros(out_shape);
    for (int64_t f = 0; f < out.numel(); ++f) {
        const Shape i = unravel(f, out_shape);
        Shape j(dims.size());
        for (size_t m = 0; m < dims.size(); ++m) j[dims[m]] = i[m];
        out.data()[f] = a.data()[ravel(j, a.shape())];
    }
    return out;
}

// Elements start..end-1 (non-negative) along axis `ax`.
Tensor naive_slice(const Tensor& a, int64_t ax, int64_t start, int64_t end) {
    Shape out_shape = a.shape();
    out_shape[ax] = end - start;
    Tensor out = Tensor::zeros(out_shape);
    for (int64_t f = 0; f < out.numel(); ++f) {
        Shape i = unravel(f, out_shape);
        i[ax] += start;
        out.data()[f] = a.data()[ravel(i, a.shape())];
    }
    return out;
}

Tensor naive_select(const Tensor& a, int64_t ax, int64_t index) {
    Shape out_shape = a.shape();
    out_shape.erase(out_shape.begin() + ax);
    Tensor out = Tensor::zeros(out_shape);
    for (int64_t f = 0; f < out.numel(); ++f) {
        Shape i = unravel(f, out_shape);
        i.insert(i.begin() + ax, index);
        out.data()[f] = a.data()[ravel(i, a.shape())];
    }
    return out;
}

Tensor naive_concat(const std::vector<Tensor>& ts, int64_t ax) {
    Shape out_shape = ts[0].shape();
    out_shape[ax] = 0;
    for (const Tensor& t : ts) out_shape[ax] += t.shape()[ax];
    Tensor out = Tensor::zeros(out_shape);
    for (int64_t f = 0; f < out.numel(); ++f) {
        Shape i = unravel(f, out_shape);
        size_t t = 0;
        while (i[ax] >= ts[t].shape()[ax]) i[ax] -= ts[t++].shape()[ax];
        out.data()[f] = ts[t].data()[ravel(i, ts[t].shape())];
    }
    return out;
}

}  // namespace

// ---- reshape ------------------------------------------------------------------------------

TEST_CASE("reshape: keeps row-major order and infers -1", "[op:reshape][forward]") {
    Tensor a = Tensor::arange(0, 24);
    Tensor r = reshape(a, {4, -1});
    REQUIRE(r.shape() == Shape{4, 6});
    REQUIRE(r.at({2, 3}) == 15);
    Tensor r3 = reshape(r, {2, -1, 4});
    REQUIRE(r3.shape() == Shape{2, 3, 4});
    REQUIRE(r3.at({1, 2, 3}) == 23);
    REQUIRE(r3.at({1, 0, 1}) == 13);
    REQUIRE(reshape(r3, {-1}).to_vector() == a.to_vector());
    Tensor scalar = reshape(Tensor::from_vector({1, 1}, {7}), {});
    REQUIRE(scalar.shape().empty());
    REQUIRE(scalar.item() == 7);
}

TEST_CASE("reshape: gradcheck on odd shapes", "[op:reshape][gradcheck]") {
    Rng rng(11);
    check_gradients([](const std::vector<Tensor>& x) { return reshape(x[0], {5, 3}); }, {rand_tensor({3, 1, 5}, rng)});
    check_gradients([](const std::vector<Tensor>& x) { return reshape(x[0], {-1}); }, {rand_tensor({7, 11}, rng)}, 2);
    check_gradients(
        [](const std::vector<Tensor>& x) {
            return reshape(x[0], {11, 1, -1});
        },
        {rand_tensor({7, 11}, rng)}, 3);
}

// reshape's backward hands dOut to x: x takes the result's gradient buffer itself when backward()
// would drop it (add_grad_from, autograd/grad_fast_paths.h), and copies it when the result keeps its own: when it
// is the tensor backward() started from, or asked to with retain_grad. All three must agree.
TEST_CASE("reshape: backward hands the gradient over, or copies it where the result keeps one",
          "[op:reshape][gradcheck]") {
    Rng rng(12);
    const Tensor w = rand_tensor({12}, rng, -1, 1, false);
    for (const std::string how : {"handed over", "retain_grad", "backward from the result"}) {
        INFO(how);
        Tensor x = rand_tensor({3, 4}, rng);
        Tensor r = reshape(x, {12});
        if (how == "backward from the result") {
            r.backward(w);
        } else {
            if (how == "retain_grad") r.retain_grad();
            sum(r * w).backward();
        }
        require_close(x.grad(), reshape(w, {3, 4}), 0);
        REQUIRE(r.has_grad() == (how != "handed over"));
        if (r.has_grad()) require_close(r.grad(), w, 0);
    }
    // Same for an add of two same-shape tensors: b copies dOut, a may take it.
    Tensor a = rand_tensor({12}, rng), b = rand_tensor({12}, rng);
    Tensor s = add(a, b);
    s.retain_grad();
    sum(s * w).backward();
    require_close(a.grad(), w, 0);
    require_close(b.grad(), w, 0);
    require_close(s.grad(), w, 0);
}

TEST_CASE("reshape: errors", "[op:reshape][errors]") {
    Tensor a = Tensor::zeros({2, 3});
    require_error([&] { reshape(a, {4, 2}); }, {"reshape", "[2, 3]", "[4, 2]"});
    require_error([&] { reshape(a, {4, -1}); }, {"reshape", "[2, 3]", "[4, -1]"});
    require_error([&] { reshape(a, {-1, -1}); }, {"reshape", "only one", "[-1, -1]"});
    require_error([&] { reshape(a, {-2, -3}); }, {"reshape", "-2", "[-2, -3]"});
    require_error([&] { reshape(Tensor::zeros({0, 3}), {0, -1}); }, {"reshape", "[0, 3]", "[0, -1]"});
}

// ---- permute ------------------------------------------------------------------------------

TEST_CASE("permute: forward matches a naive index formula", "[op:permute][forward]") {
    Rng rng(1);
    Tensor a = rand_tensor({2, 3, 4, 5}, rng, -1, 1, false);
    for (const std::vector<int64_t>& dims :
         std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {0, 2, 1, 3}, {3, 1, 0, 2}, {3, 2, 1, 0}, {1, 3, 2, 0}}) {
        require_close(permute(a, dims), naive_permute(a, dims), 0, "dims " + shape_str(dims));
    }
    require_close(permute(a, {-1, 0, -2, 1}), naive_permute(a, {3, 0, 2, 1}), 0, "negative dims");
    Tensor m = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
    REQUIRE(permute(m, {1, 0}).to_vector() == std::vector<real>{1, 4, 2, 5, 3, 6});
    REQUIRE(permute(Tensor::scalar(4), {}).item() == 4);
}

TEST_CASE("permute: gradcheck on odd shapes", "[op:permute][gradcheck]") {
    Rng rng(2);
    uint64_t seed = 1;
    for (const std::vector<int64_t>& dims :
         std::vector<std::vector<int64_t>>{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}) {
        INFO("dims " << shape_str(dims));
        check_gradients([dims](const std::vector<Tensor>& x) { return permute(x[0], dims); },
                        {rand_tensor({3, 1, 5}, rng)}, seed++);
    }
    check_gradients(
        [](const std::vector<Tensor>& x) {
            return permute(x[0], {0, 2, -3, 3});
        },
        {rand_tensor({2, 3, 7, 4}, rng)}, seed++);
}

TEST_CASE("permute: errors", "[op:permute][errors]") {
    Tensor a = Tensor::zeros({2, 3, 4});
    require_error([&] { permute(a, {0, 1}); }, {"permute", "[0, 1]", "[2, 3, 4]"});
    require_error([&] { permute(a, {0, 1, 1}); }, {"permute", "[0, 1, 1]", "[2, 3, 4]"});
    require_error([&] { permute(a, {0, 1, 3}); }, {"permute", "[0, 1, 3]", "[2, 3, 4]"});
    require_error([&] { permute(a, {0, 1, -4}); }, {"permute", "[0, 1, -4]", "[2, 3, 4]"});
    require_error([&] { permute(a, {2, -1, 0}); }, {"permute", "[2, -1, 0]", "not a permutation"});
}

// ---- transpose ----------------------------------------------------------------------------

TEST_CASE("transpose: forward matches a naive index formula", "[op:transpose][forward]") {
    Rng rng(3);
    Tensor m = rand_tensor({3, 5}, rng, -1, 1, false);
    Tensor t = transpose(m, 0, 1);
    REQUIRE(t.shape() == Shape{5, 3});
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 5; ++j) REQUIRE(t.at({j, i}) == m.at({i, j}));
    Tensor a = rand_tensor({2, 3, 4, 5}, rng, -1, 1, false);
    require_close(transpose(a, -1, -2), naive_permute(a, {0, 1, 3, 2}), 0, "last two axes");
    require_close(transpose(a, 3, 0), naive_permute(a, {3, 1, 2, 0}), 0, "first and last");
    require_close(transpose(a, 2, -2), a, 0, "an axis with itself");
}

TEST_CASE("transpose: gradcheck for each pair of axes", "[op:transpose][gradcheck]") {
    Rng rng(4);
    uint64_t seed = 1;
    for (int64_t a0 = -3; a0 < 3; ++a0)
        for (int64_t a1 = -3; a1 < 3; ++a1) {
            INFO("axes " << a0 << ", " << a1);
            check_gradients([a0, a1](const std::vector<Tensor>& x) { return transpose(x[0], a0, a1); },
                            {rand_tensor({3, 1, 5}, rng)}, seed++);
        }
}

TEST_CASE("transpose: errors", "[op:transpose][errors]") {
    Tensor a = Tensor::zeros({2, 3});
    require_error([&] { transpose(a, 0, 2); }, {"transpose", "axis 2", "[2, 3]"});
    require_error([&] { transpose(a, -3, 1); }, {"transpose", "axis -3", "[2, 3]"});
}

// ---- concat -------------------------------------------------------------------------------

TEST_CASE("concat: forward by hand and against a naive index formula", "[op:concat][forward]") {
    Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
    Tensor b = Tensor::from_vector({2, 1}, {5, 6});
    REQUIRE(concat({a, b}, 1).to_vector() == std::vector<real>{1, 2, 5, 3, 4, 6});
    REQUIRE(concat({a, transpose(b, 0, 1)}, 0).to_vector() == std::vector<real>{1, 2, 3, 4, 5, 6});

    Rng rng(5);
    for (int64_t axis = 0; axis < 3; ++axis) {
        Shape s0{2, 3, 4}, s1{2, 3, 4}, s2{2, 3, 4};
        s1[axis] = 1;
        s2[axis] = 5;
        std::vector<Tensor> ts{rand_tensor(s0, rng, -1, 1, false), rand_tensor(s1, rng, -1, 1, false),
                               rand_tensor(s2, rng, -1, 1, false)};
        require_close(concat(ts, axis), naive_concat(ts, axis), 0, "axis " + std::to_string(axis));
        require_close(concat(ts, axis - 3), naive_concat(ts, axis), 0, "negative axis " + std::to_string(axis - 3));
    }
    Tensor single = rand_tensor({3, 1, 5}, rng, -1, 1, false);
    require_close(concat({single}, 1), single, 0, "one tensor");
}

TEST_CASE("concat: prepends the class token to the patch sequence", "[op:concat][forward]") {
    const int64_t B = 2, N = 3, D = 4;
    Rng rng(6);
    Tensor cls = rand_tensor({B, 1, D}, rng, -1, 1, false);
    Tensor patches = rand_tensor({B, N, D}, rng, -1, 1, false);
    Tensor x = concat({cls, patches}, 1);
    REQUIRE(x.shape() == Shape{B, 1 + N, D});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t d = 0; d < D; ++d) {
            REQUIRE(x.at({b, 0, d}) == cls.at({b, 0, d}));
            for (int64_t n = 0; n < N; ++n) REQUIRE(x.at({b, 1 + n, d}) == patches.at({b, n, d}));
        }
}

TEST_CASE("concat: gradcheck along each axis", "[op:concat][gradcheck]") {
    Rng rng(7);
    uint64_t seed = 1;
    for (int64_t axis = -3; axis < 3; ++axis) {
        const int64_t ax = axis < 0 ? axis + 3 : axis;
        Shape s0{3, 1, 5}, s1{3, 1, 5}, s2{3, 1, 5};
        s0[ax] = 2;
        s2[ax] = 7;
        INFO("axis " << axis);
        check_gradients([axis](const std::vector<Tensor>& x) { return concat(x, axis); },
                        {rand_tensor(s0, rng), rand_tensor(s1, rng), rand_tensor(s2, rng)}, seed++);
    }
    check_gradients([](const std::vector<Tensor>& x) { return concat({x[0]}, -1); }, {rand_tensor({7, 11}, rng)},
                    seed++);
    check_gradients([](const std::vector<Tensor>& x) { return concat(x, 1); },
                    {rand_tensor({2, 1, 5}, rng), rand_tensor({2, 7, 5}, rng)}, seed++);
}

TEST_CASE("concat: gradients with an input used twice and one without grad", "[op:concat][gradcheck]") {
    Rng rng(8);
    Tensor constant = rand_tensor({3, 2}, rng, -1, 1, false);
    check_gradients(
        [constant](const std::vector<Tensor>& x) {
            return concat({x[0], constant, x[0]}, 1);
        },
        {rand_tensor({3, 5}, rng)});
}

TEST_CASE("concat: errors", "[op:concat][errors]") {
    Tensor a = Tensor::zeros({2, 3});
    require_error([&] { concat({}, 0); }, {"concat", "at least one"});
    require_error([&] { concat({a, Tensor::zeros({3, 3})}, 1); }, {"concat", "axis 1", "[2, 3]", "[3, 3]"});
    require_error(
        [&] {
            concat({a, a, Tensor::zeros({2, 3, 1})}, 0);
        },
        {"concat", "axis 0", "[2, 3]", "[2, 3, 1]", "tensor 2"});
    require_error([&] { concat({a, Tensor::zeros({2})}, -1); }, {"concat", "axis -1", "[2, 3]", "[2]"});
    require_error([&] { concat({a, a}, 2); }, {"concat", "axis 2", "[2, 3]"});
    require_error([&] { concat({a, Tensor()}, 0); }, {"concat", "tensor 1", "undefined"});
}

// ---- slice --------------------------------------------------------------------------------

TEST_CASE("slice: forward matches a naive index formula", "[op:slice][forward]") {
    Tensor m = Tensor::from_vector({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
    REQUIRE(slice(m, 1, 1, 3).to_vector() == std::vector<real>{1, 2, 5, 6});
    REQUIRE(slice(m, 1, -2, 4).to_vector() == std::vector<real>{2, 3, 6, 7});
    REQUIRE(slice(m, -1, 0, -1).to_vector() == std::vector<real>{0, 1, 2, 4, 5, 6});
    REQUIRE(slice(m, 0, 1, 2).to_vector() == std::vector<real>{4, 5, 6, 7});

    Rng rng(9);
    Tensor a = rand_tensor({3, 4, 5}, rng, -1, 1, false);
    require_close(slice(a, 0, 1, 3), naive_slice(a, 0, 1, 3), 0, "axis 0");
    require_close(slice(a, 1, 0, 4), a, 0, "whole axis");
    require_close(slice(a, 2, -4, -1), naive_slice(a, 2, 1, 4), 0, "negative start and end");
    require_close(slice(a, -2, 3, 4), naive_slice(a, 1, 3, 4), 0, "negative axis");
}

TEST_CASE("slice: gradcheck along each axis", "[op:slice][gradcheck]") {
    Rng rng(10);
    uint64_t seed = 1;
    const Shape shape{3, 7, 5};
    for (int64_t axis = -3; axis < 3; ++axis) {
        const int64_t n = shape[axis < 0 ? axis + 3 : axis];
        INFO("axis " << axis);
        check_gradients([axis, n](const std::vector<Tensor>& x) { return slice(x[0], axis, 1, n); },
                        {rand_tensor(shape, rng)}, seed++);
        check_gradients([axis](const std::vector<Tensor>& x) { return slice(x[0], axis, -2, -1); },
                        {rand_tensor(shape, rng)}, seed++);
    }
    check_gradients([](const std::vector<Tensor>& x) { return slice(x[0], 1, 0, 1); }, {rand_tensor({3, 1, 5}, rng)},
                    seed++);
}

TEST_CASE("slice: errors", "[op:slice][errors]") {
    Tensor a = Tensor::zeros({2, 4});
    require_error([&] { slice(a, 1, 2, 2); }, {"slice", "2:2", "axis 1", "[2, 4]"});
    require_error([&] { slice(a, 1, 3, 1); }, {"slice", "3:1", "[2, 4]"});
    require_error([&] { slice(a, 1, 0, 5); }, {"slice", "0:5", "[2, 4]"});
    require_error([&] { slice(a, 1, -5, 2); }, {"slice", "-5:2", "[2, 4]"});
    require_error([&] { slice(a, 0, -1, -1); }, {"slice", "-1:-1", "axis 0", "[2, 4]"});
    require_error([&] { slice(a, 2, 0, 1); }, {"slice", "axis 2", "[2, 4]"});
}

// ---- select -------------------------------------------------------------------------------

TEST_CASE("select: forward matches a naive index formula", "[op:select][forward]") {
    Tensor m = Tensor::from_vector({2, 3}, {0, 1, 2, 3, 4, 5});
    REQUIRE(select(m, 1, 0).to_vector() == std::vector<real>{0, 3});
    REQUIRE(select(m, 0, -1).to_vector() == std::vector<real>{3, 4, 5});
    Tensor v = select(Tensor::from_vector({3}, {7, 8, 9}), 0, 1);
    REQUIRE(v.shape().empty());
    REQUIRE(v.item() == 8);

    Rng rng(12);
    Tensor a = rand_tensor({3, 4, 5}, rng, -1, 1, false);
    for (int64_t axis = 0; axis < 3; ++axis) {
        require_close(select(a, axis, 2), naive_select(a, axis, 2), 0, "axis " + std::to_string(axis));
        require_close(select(a, axis - 3, -1), naive_select(a, axis, a.shape()[axis] - 1), 0,
                      "negative axis and index");
    }
}

TEST_CASE("select: gradcheck along each axis", "[op:select][gradcheck]") {
    Rng rng(13);
    uint64_t seed = 1;
    for (int64_t axis = -3; axis < 3; ++axis) {
        INFO("axis " << axis);
        check_gradients([axis](const std::vector<Tensor>& x) { return select(x[0], axis, 0); },
                        {rand_tensor({3, 1, 5}, rng)}, seed++);
        check_gradients([axis](const std::vector<Tensor>& x) { return select(x[0], axis, -1); },
                        {rand_tensor({3, 2, 7}, rng)}, seed++);
    }
}

TEST_CASE("select: errors", "[op:select][errors]") {
    Tensor a = Tensor::zeros({2, 4});
    require_error([&] { select(a, 1, 4); }, {"select", "index 4", "axis 1", "[2, 4]"});
    require_error([&] { select(a, 0, -3); }, {"select", "index -3", "axis 0", "[2, 4]"});
    require_error([&] { select(a, -3, 0); }, {"select", "axis -3", "[2, 4]"});
    require_error([&] { select(Tensor::scalar(1), 0, 0); }, {"select", "axis 0", "[]"});
}

// ---- gather_rows --------------------------------------------------------------------------

TEST_CASE("gather_rows: forward matches a naive index formula", "[op:gather_rows][forward]") {
    // Two entries of three rows of two: entry 0 keeps rows 2, 0; entry 1 keeps rows 1, 1.
    Tensor a = Tensor::from_vector({2, 3, 2}, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
    Tensor out = gather_rows(a, {2, 0, 1, 1});
    REQUIRE(out.shape() == Shape{2, 2, 2});
    REQUIRE(out.to_vector() == std::vector<real>{4, 5, 0, 1, 12, 13, 12, 13});
    // Rows of several axes, and rows of one element ([B, T]).
    Rng rng(5);
    Tensor b = rand_tensor({3, 5, 2, 3}, rng);
    const std::vector<int64_t> index{4, 0, 2, 1, 1, 3};
    Tensor gathered = gather_rows(b, index);
    REQUIRE(gathered.shape() == Shape{3, 2, 2, 3});
    for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 6; ++j)
            REQUIRE(gathered.data()[i * 6 + j] == b.data()[((i / 2) * 5 + index[i]) * 6 + j]);
    REQUIRE(gather_rows(Tensor::from_vector({2, 2}, {1, 2, 3, 4}), {1, 0}).to_vector() == std::vector<real>{2, 3});
}

TEST_CASE("gather_rows: gradcheck, repeated rows included", "[op:gather_rows][gradcheck]") {
    Rng rng(17);
    check_gradients(
        [](const std::vector<Tensor>& x) {
            return gather_rows(x[0], {3, 0, 2, 1, 1, 4});
        },
        {rand_tensor({2, 5, 4}, rng)}, 1);
    check_gradients(
        [](const std::vector<Tensor>& x) {
            return gather_rows(x[0], {0, 2, 2, 0, 1, 1});
        },
        {rand_tensor({3, 3, 2, 2}, rng)}, 2);
}

TEST_CASE("gather_rows: errors", "[op:gather_rows][errors]") {
    Tensor a = Tensor::zeros({2, 4, 3});
    require_error([&] { gather_rows(a, {0, 1, 2}); }, {"gather_rows", "3 indices", "2 batch entries", "[2, 4, 3]"});
    require_error([&] { gather_rows(a, {}); }, {"gather_rows", "0 indices", "[2, 4, 3]"});
    require_error([&] { gather_rows(a, {0, 4}); }, {"gather_rows", "index 4", "entry 1", "[2, 4, 3]"});
    require_error([&] { gather_rows(a, {-1, 0}); }, {"gather_rows", "index -1", "entry 0"});
    require_error([&] { gather_rows(Tensor::zeros({4}), {0}); }, {"gather_rows", "[B, T, ...]", "[4]"});
}

}  // namespace patchgrad
