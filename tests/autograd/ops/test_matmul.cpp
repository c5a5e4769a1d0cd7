#include <algorithm>
#include <utility>
#include <vector>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

// [..., M, K] @ [..., K, N] by the definition: for every output element, find the batch
// matrices of a and b it comes from by broadcasting its multi-index, then a dot product.
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
    const Shape& as = a.shape();
    const Shape& bs = b.shape();
    const size_t nd = std::max(as.size(), bs.size());
    auto dim = [nd](const Shape& s, size_t d) {  // d-th of nd right-aligned dims, 1 if missing
        return d + s.size() < nd ? int64_t(1) : s[d + s.size() - nd];
    };
    Shape out_shape(nd);
    for (size_t d = 0; d + 2 < nd; ++d) out_shape[d] = std::max(dim(as, d), dim(bs, d));
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    out_shape[nd - 2] = M;
    out_shape[nd - 1] = N;

    Tensor out = Tensor::zeros(out_shape);
    std::vector<int64_t> idx(nd, 0);
    for (int64_t flat = 0; flat < out.numel(); ++flat) {
        int64_t rem = flat;
        for (size_t d = nd; d-- > 0;) {
            idx[d] = rem % out_shape[d];
            rem /= out_shape[d];
        }
        // Offsets of the first element of row i of a's matrix and of column j of b's.
        int64_t a_off = 0, b_off = 0;
        for (size_t d = 0; d + 2 < nd; ++d) {
            a_off = a_off * dim(as, d) + (dim(as, d) == 1 ? 0 : idx[d]);
            b_off = b_off * dim(bs, d) + (dim(bs, d) == 1 ? 0 : idx[d]);
        }
        a_off = a_off * M * K + idx[nd - 2] * K;
        b_off = b_off * K * N + idx[nd - 1];
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += double(a.data()[a_off + k]) * b.data()[b_off + k * N];
        out.data()[flat] = static_cast<real>(s);
    }
    return out;
}

Tensor matmul_of(const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }

}  // namespace

TEST_CASE("matmul: hand-computed 2-D product", "[op:matmul][forward][ex:matmul-backward]") {
    const Tensor a = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor b = Tensor::from_vector({3, 2}, {7, 8, 9, 10, 11, 12});
    require_close(matmul(a, b), Tensor::from_vector({2, 2}, {58, 64, 139, 154}), 1e-12);
    require_close(matmul(b, a), Tensor::from_vector({3, 3}, {39, 54, 69, 49, 68, 87, 59, 82, 105}), 1e-12);
}

TEST_CASE("matmul: batched forward with broadcast batch dimensions matches a naive loop", "[op:matmul][forward]") {
    Rng rng(1);
    const std::vector<std::pair<Shape, Shape>> cases = {
        {{2, 1, 3, 4}, {5, 4, 6}},  // the docstring example -> [2, 5, 3, 6]
        {{3, 5, 2}, {2, 4}},        // one weight for the whole batch
        {{2, 3}, {4, 3, 5}},        // one left matrix for the whole batch
        {{2, 3, 4}, {2, 4, 5}},     // no broadcasting
        {{1, 3, 4}, {2, 4, 5}},    {{3, 1, 5, 2}, {1, 4, 2, 3}}, {{2, 1, 7}, {1, 7, 1}}, {{4, 1, 1}, {1, 3}},
    };
    for (const auto& [sa, sb] : cases) {
        INFO(shape_str(sa) << " @ " << shape_str(sb));
        const Tensor a = rand_tensor(sa, rng, -1, 1, false), b = rand_tensor(sb, rng, -1, 1, false);
        require_close(matmul(a, b), naive_matmul(a, b), 1e-12);
    }
    CHECK(matmul(Tensor::zeros({2, 1, 3, 4}), Tensor::zeros({5, 4, 6})).shape() == Shape{2, 5, 3, 6});
}

TEST_CASE("matmul: an empty inner dimension gives zeros", "[op:matmul][forward]") {
    require_close(matmul(Tensor::zeros({2, 0}), Tensor::zeros({0, 3})), Tensor::zeros({2, 3}), 0);
    CHECK(matmul(Tensor::zeros({0, 2, 4}), Tensor::zeros({4, 3})).shape() == Shape{0, 2, 3});
}

TEST_CASE("matmul: gradcheck of 2-D products with odd shapes", "[op:matmul][gradcheck][ex:matmul-backward]") {
    Rng rng(2);
    const std::vector<std::pair<Shape, Shape>> cases = {
        {{3, 4}, {4, 5}}, {{7, 11}, {11, 13}}, {{1, 1}, {1, 1}}, {{1, 5}, {5, 1}}, {{5, 1}, {1, 7}}, {{2, 3}, {3, 1}},
    };
    uint64_t seed = 10;
    for (const auto& [sa, sb] : cases) {
        INFO(shape_str(sa) << " @ " << shape_str(sb));
        check_gradients(matmul_of, {rand_tensor(sa, rng), rand_tensor(sb, rng)}, ++seed);
    }
}

TEST_CASE("matmul: gradcheck with broadcast batch dimensions", "[op:matmul][gradcheck][ex:matmul-backward]") {
    Rng rng(3);
    const std::vector<std::pair<Shape, Shape>> cases = {
        {{2, 1, 3, 4}, {5, 4, 6}}, {{3, 5, 2}, {2, 4}},          {{2, 3}, {4, 3, 5}},    {{2, 3, 4}, {2, 4, 5}},
        {{1, 3, 4}, {2, 4, 5}},    {{3, 1, 5, 2}, {1, 4, 2, 3}}, {{2, 1, 7}, {1, 7, 1}}, {{4, 1, 1}, {1, 3}},
    };
    uint64_t seed = 20;
    for (const auto& [sa, sb] : cases) {
        INFO(shape_str(sa) << " @ " << shape_str(sb));
        check_gradients(matmul_of, {rand_tensor(sa, rng), rand_tensor(sb, rng)}, ++seed);
    }
}

TEST_CASE("matmul: gradcheck past the gemm cache blocks", "[op:matmul][gradcheck][ex:matmul-backward]") {
    // The forward has K = 300 > gemm's K block (256); the forward and dA have M = 150 and dB
    // has M = 300 > its A block (144). 200 sampled elements per input keep it fast.
    Rng rng(4);
    GradcheckOptions options = options_for_large_sums();  // f sums 300 outputs of 300 products each
    options.max_elements_per_input = 200;
    check_gradients(matmul_of, {rand_tensor({150, 300}, rng), rand_tensor({300, 2}, rng)}, 30, options);
}

TEST_CASE("matmul: gradcheck when only one input requires grad, and of x @ x",
          "[op:matmul][gradcheck][ex:matmul-backward]") {
    Rng rng(5);
    check_gradients(matmul_of, {rand_tensor({2, 3, 4}, rng), rand_tensor({4, 5}, rng, -1, 1, false)}, 40);
    check_gradients(matmul_of, {rand_tensor({3, 4}, rng, -1, 1, false), rand_tensor({2, 4, 5}, rng)}, 41);
    // The same tensor on both sides: both gradients land in one .grad.
    check_gradients([](const std::vector<Tensor>& in) { return matmul(in[0], in[0]); }, {rand_tensor({2, 5, 5}, rng)},
                    42);
}

TEST_CASE("matmul: errors name the shapes", "[op:matmul][errors]") {
    require_error(
        [] {
            matmul(Tensor::zeros({3}), Tensor::zeros({3, 4}));
        },
        {"matmul", "[3]", "[3, 4]", "2 dimensions"});
    require_error([] { matmul(Tensor::zeros({3, 4}), Tensor::zeros({4})); }, {"matmul", "[3, 4]", "[4]"});
    require_error(
        [] {
            matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}));
        },
        {"matmul", "inner", "[2, 3]", "[4, 5]"});
    require_error([] { matmul(Tensor::zeros({6, 2, 3}), Tensor::zeros({6, 2, 3})); }, {"matmul", "[6, 2, 3]"});
    require_error(
        [] {
            matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({5, 4, 6}));
        },
        {"matmul", "batch", "[2, 3, 4]", "[5, 4, 6]", "2 vs 5"});
    require_error(
        [] {
            matmul(Tensor::zeros({2, 7, 3, 4}), Tensor::zeros({3, 4, 6}));
        },
        {"matmul", "batch", "[2, 7, 3, 4]", "[3, 4, 6]"});
}

TEST_CASE("matmul_transposed: equals matmul(a, transpose(b)) * alpha, batched and broadcast",
          "[op:matmul_transposed][forward]") {
    Rng rng(50);
    for (auto [a_shape, b_shape] : {std::pair<Shape, Shape>{{3, 4}, {5, 4}},
                                    {{2, 3, 7, 6}, {2, 3, 5, 6}},
                                    {{2, 65, 32}, {65, 32}},
                                    {{4, 3, 6}, {2, 1, 5, 6}}}) {
        Tensor a = rand_tensor(a_shape, rng, -1, 1, false), b = rand_tensor(b_shape, rng, -1, 1, false);
        require_close(matmul_transposed(a, b, real(0.3)), matmul(a, transpose(b, -2, -1)) * real(0.3), 1e-12,
                      shape_str(a_shape) + " @ " + shape_str(b_shape) + "^T");
    }
}

TEST_CASE("matmul_transposed: gradcheck, with a scale, batched, broadcast and with an input repeated",
          "[op:matmul_transposed][gradcheck][ex:matmul-backward]") {
    Rng rng(51);
    auto op = [](const std::vector<Tensor>& in) { return matmul_transposed(in[0], in[1], real(0.7)); };
    check_gradients(op, {rand_tensor({3, 5}, rng), rand_tensor({4, 5}, rng)}, 60);
    check_gradients(op, {rand_tensor({2, 2, 7, 3}, rng), rand_tensor({2, 2, 6, 3}, rng)}, 61);
    check_gradients(op, {rand_tensor({2, 3, 4}, rng), rand_tensor({5, 4}, rng)}, 62);
    check_gradients(op, {rand_tensor({3, 4}, rng), rand_tensor({2, 5, 4}, rng)}, 63);
    // Past the gemm blocks (K > 256) and with full 12-row slivers read in place.
    check_gradients(op, {rand_tensor({13, 260}, rng, -0.5, 0.5), rand_tensor({3, 260}, rng, -0.5, 0.5)}, 64);
    // q @ q^T: both gradients land in one .grad.
    check_gradients([](const std::vector<Tensor>& in) { return matmul_transposed(in[0], in[0], real(0.5)); },
                    {rand_tensor({2, 5, 3}, rng)}, 65);
}

TEST_CASE("matmul_transposed: errors name the op and the shapes", "[op:matmul_transposed][errors]") {
    require_error(
        [] {
            matmul_transposed(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}));
        },
        {"matmul_transposed", "inner", "[2, 3]", "transpose of [4, 5]", "3 vs 5"});
    require_error(
        [] {
            matmul_transposed(Tensor::zeros({3}), Tensor::zeros({4, 3}));
        },
        {"matmul_transposed", "2 dimensions", "[3]"});
    require_error(
        [] {
            matmul_transposed(Tensor::zeros({2, 3, 4}), Tensor::zeros({5, 6, 4}));
        },
        {"matmul_transposed", "batch", "[2, 3, 4]", "[5, 6, 4]"});
}

}  // namespace patchgrad
