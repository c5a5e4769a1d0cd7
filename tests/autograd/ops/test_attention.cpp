// scaled_dot_product_attention: the one-op attention against the same computation written
// with the ops chapter 7 uses step by step, its gradient checks, and its errors.
#include <cmath>
#include <limits>
#include <vector>

#include "catch.h"
#include "patchgrad/autograd/cpu/rows/attention_heads.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

const real kInf = std::numeric_limits<real>::infinity();

// [hide:attention-forward]
// Chapter 7's steps: split qkv into heads (a permuted copy), scores, softmax, A v, heads
// concatenated (another copy). A learned scale multiplies each head's scores and hides the
// diagonal.
Tensor step_by_step(const Tensor& qkv, int64_t heads, const Tensor& key_bias, const Tensor& head_scale) {
    const int64_t B = qkv.size(0), N = qkv.size(1), D = qkv.size(2) / 3, d = D / heads;
    const Tensor t = permute(reshape(qkv, {B, N, 3, heads, d}), {2, 0, 3, 1, 4});
    const Tensor q = select(t, 0, 0), k = select(t, 0, 1), v = select(t, 0, 2);
    Tensor s;
    if (head_scale.defined()) {
        std::vector<real> diagonal(N * N, 0);
        for (int64_t i = 0; i < N; ++i) diagonal[i * N + i] = -kInf;
        s = matmul_transposed(q, k) * reshape(head_scale, {1, heads, 1, 1}) +
            Tensor::from_vector({N, N}, std::move(diagonal));
    } else {
        s = matmul_transposed(q, k, real(1 / std::sqrt(double(d))));
    }
    if (key_bias.defined()) s = s + key_bias;
    return reshape(permute(matmul(softmax(s, -1), v), {0, 2, 1, 3}), {B, N, D});
}
// [/hide:attention-forward]

struct Case {
    int64_t B, N, heads, d;
    bool bias, learned;
};
const Case kCases[] = {
    {2, 5, 3, 2, false, false}, {1, 1, 1, 4, false, false}, {3, 7, 2, 3, true, false},
    {2, 6, 2, 2, false, true},  {2, 6, 1, 3, true, true},   {1, 9, 4, 1, true, false},
};

// The checksums (test_util.h) of the reference's output for each case.
const double kChecksums[] = {30.017099164449927,  -2.0498951213390662, -89.461102440143975,
                             -10.199798118507919, 24.840925902990328,  6.8708465990583747};

// Hides keys 2 and 4 (and the last one when N > 6); key 0, the class token, stays visible.
Tensor key_bias_for(int64_t N) {
    std::vector<real> bias(N, 0);
    for (int64_t j = 1; j < N; ++j)
        if (j == 2 || j == 4 || j == 7) bias[j] = -kInf;
    return Tensor::from_vector({N}, std::move(bias));
}

struct Inputs {
    Tensor qkv, key_bias, head_scale;
};
Inputs inputs_for(const Case& c, Rng& rng) {
    Inputs in;
    in.qkv = rand_tensor({c.B, c.N, 3 * c.heads * c.d}, rng);
    if (c.bias) in.key_bias = key_bias_for(c.N);
    if (c.learned) in.head_scale = rand_tensor({c.heads}, rng, real(0.2), real(0.8));
    return in;
}

// [hide:attention-backward]
// The gradients of sum(w * f(qkv, head_scale)) for a fixed random w: [qkv's, head_scale's].
std::vector<Tensor> gradients(const std::function<Tensor(const Tensor&, const Tensor&)>& f, const Inputs& in) {
    Tensor qkv = in.qkv.detach().requires_grad_();
    Tensor scale = in.head_scale.defined() ? in.head_scale.detach().requires_grad_() : Tensor();
    const Tensor y = f(qkv, scale);
    Rng rng(5);
    weighted_sum(y, Tensor::uniform(y.shape(), -1, 1, rng)).backward();
    return {qkv.grad(), scale.defined() ? scale.grad() : Tensor()};
}
// [/hide:attention-backward]

}  // namespace

TEST_CASE("scaled_dot_product_attention: the values and gradients of chapter 7's steps",
          "[op:scaled_dot_product_attention][forward]") {
    Rng rng(1);
    for (const Case& c : kCases) {
        INFO("B " << c.B << " N " << c.N << " heads " << c.heads << " d " << c.d << " key bias " << c.bias
                  << " learned scale " << c.learned);
        const Inputs in = inputs_for(c, rng);
        Tensor attention, fused;
        {
            NoGradGuard values_only;  // (a handout of exercise attention-backward records no gradient here)
            fused = scaled_dot_product_attention(in.qkv, c.heads, in.key_bias, in.head_scale, &attention);
        }
        // [hide:attention-forward]
        require_close(fused, step_by_step(in.qkv, c.heads, in.key_bias, in.head_scale), 1e-12);
        // [/hide:attention-forward]
        // The reference's checksum: what a handout of attention-forward keeps of this comparison.
        CHECK(checksum(fused) == Approx(kChecksums[&c - kCases]).epsilon(1e-10));
        REQUIRE(attention.shape() == Shape{c.B, c.heads, c.N, c.N});
        for (int64_t row = 0; row < c.B * c.heads * c.N; ++row) {
            double sum = 0;
            for (int64_t j = 0; j < c.N; ++j) {
                const real a = attention.data()[row * c.N + j];
                if (c.bias && c.N > 1 && (j == 2 || j == 4 || j == 7)) CHECK(a == 0);
                if (c.learned && j == row % c.N) CHECK(a == 0);
                sum += a;
            }
            CHECK(sum == Approx(1).epsilon(1e-12));
        }

        // [hide:attention-backward]
        // [hide:attention-forward]
        const auto ours = gradients(
            [&](const Tensor& q, const Tensor& s) { return scaled_dot_product_attention(q, c.heads, in.key_bias, s); },
            in);
        const auto steps =
            gradients([&](const Tensor& q, const Tensor& s) { return step_by_step(q, c.heads, in.key_bias, s); }, in);
        require_close(ours[0], steps[0], 1e-12);
        if (c.learned) require_close(ours[1], steps[1], 1e-12);
        // [/hide:attention-forward]
        // [/hide:attention-backward]
    }
}

// [hide:attention-backward]
TEST_CASE("scaled_dot_product_attention: gradcheck w.r.t. qkv and the learned scales",
          "[op:scaled_dot_product_attention][gradcheck]") {
    Rng rng(2);
    uint64_t seed = 10;
    for (const Case& c : kCases) {
        INFO("B " << c.B << " N " << c.N << " heads " << c.heads << " d " << c.d << " key bias " << c.bias
                  << " learned scale " << c.learned);
        const Inputs in = inputs_for(c, rng);
        if (c.learned)
            check_gradients(
                [&](const std::vector<Tensor>& x) {
                    return scaled_dot_product_attention(x[0], c.heads, in.key_bias, x[1]);
                },
                {in.qkv, in.head_scale}, ++seed);
        else
            check_gradients(
                [&](const std::vector<Tensor>& x) { return scaled_dot_product_attention(x[0], c.heads, in.key_bias); },
                {in.qkv}, ++seed);
    }
    // Only the scales want a gradient: qkv's is never written.
    const Inputs in = inputs_for(kCases[3], rng);
    const Tensor qkv = in.qkv.detach();
    check_gradients(
        [&](const std::vector<Tensor>& x) {
            return scaled_dot_product_attention(qkv, kCases[3].heads, Tensor(), x[0]);
        },
        {in.head_scale}, ++seed);
    CHECK_FALSE(qkv.has_grad());
}

TEST_CASE("scaled_dot_product_attention: the A it hands out is a copy, backward keeps its own",
          "[op:scaled_dot_product_attention]") {
    Rng rng(3);
    const Inputs in = inputs_for(kCases[0], rng);
    Tensor attention;
    const auto reference =
        gradients([](const Tensor& q, const Tensor&) { return scaled_dot_product_attention(q, 3); }, in);
    const auto with_copy = gradients(
        [&](const Tensor& q, const Tensor&) {
            const Tensor y = scaled_dot_product_attention(q, 3, Tensor(), Tensor(), &attention);
            for (int64_t i = 0; i < attention.numel(); ++i) attention.data()[i] = 7;
            return y;
        },
        in);
    require_close(with_copy[0], reference[0], 0);
}
// [/hide:attention-backward]

TEST_CASE("scaled_dot_product_attention: errors name the op, the shapes and what is missing",
          "[op:scaled_dot_product_attention][errors]") {
    const char* op = "scaled_dot_product_attention";
    require_error([&] { scaled_dot_product_attention(Tensor(), 2); }, {op, "undefined"});
    require_error([&] { scaled_dot_product_attention(Tensor::zeros({5, 12}), 2); }, {op, "[5, 12]", "[B, N, 3 * D]"});
    require_error([&] { scaled_dot_product_attention(Tensor::zeros({2, 5, 12}), 3); }, {op, "[2, 5, 12]", "3 heads"});
    require_error([&] { scaled_dot_product_attention(Tensor::zeros({2, 5, 12}), 0); }, {op, "[2, 5, 12]", "0 heads"});
    require_error([&] { scaled_dot_product_attention(Tensor::zeros({2, 5, 0}), 1); }, {op, "[2, 5, 0]"});
    require_error(
        [&] {
            scaled_dot_product_attention(Tensor::zeros({2, 5, 12}), 2, Tensor::zeros({4}));
        },
        {op, "key_bias [4]", "[5]", "[2, 5, 12]"});
    require_error(
        [&] {
            scaled_dot_product_attention(Tensor::zeros({2, 5, 12}), 2, Tensor::zeros({5}).requires_grad_());
        },
        {op, "key_bias", "no gradient"});
    require_error(
        [&] {
            scaled_dot_product_attention(Tensor::zeros({2, 5, 12}), 2, Tensor(), Tensor::zeros({3}));
        },
        {op, "head_scale [3]", "[2]"});
    require_error(
        [&] {
            scaled_dot_product_attention(Tensor::zeros({2, 3, 12}), 2, Tensor::full({3}, -kInf));
        },
        {op, "0 of the 3 keys are visible"});
    // A learned scale hides the diagonal: the one visible key's own row would be empty.
    require_error(
        [&] {
            scaled_dot_product_attention(Tensor::zeros({2, 3, 12}), 2, Tensor::from_vector({3}, {0, -kInf, -kInf}),
                                         Tensor::ones({2}));
        },
        {op, "another", "1 of the 3 keys are visible"});
}

TEST_CASE("attention_heads: a null A is refused where no kernel computes it again",
          "[op:scaled_dot_product_attention][errors]") {
    // Heads of 20, which AMX's tiles never take (attention_heads_amx.h): so no kernel here
    // computes A again, on any CPU and in either precision.
    std::vector<real> qkv(3 * 3 * 40, real(0.5)), out(3 * 40), dout(3 * 40, real(1)), dqkv(qkv.size());
    const AttentionHeads x{qkv.data(), 2, 3, 40, nullptr, real(0.2), nullptr};
    CHECK_FALSE(attention_heads_recompute(x));
    require_error([&] { attention_heads_forward(x, 0, 2, nullptr, out.data()); }, {"attention_heads_forward", "no A"});
    // [hide:attention-backward]
    require_error([&] { attention_heads_backward(x, 0, 2, nullptr, dout.data(), dqkv.data(), 0, nullptr); },
                  {"attention_heads_backward", "no A"});
    // [/hide:attention-backward]
}

}  // namespace patchgrad
