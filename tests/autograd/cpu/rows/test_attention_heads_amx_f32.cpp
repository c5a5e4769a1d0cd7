// attention's per-head kernel on AMX's tiles (autograd/cpu/rows/attention_heads_amx.h), which
// the bf16 precision runs where gemm_bf16's kernel is AMX's, against float64 arithmetic on the
// same bf16-rounded inputs: the formulas of chapter 7 with each product's operands rounded where
// the kernel rounds them. Only where the CPU has AMX: elsewhere nothing runs the kernel.
#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "catch.h"
#include "patchgrad/autograd/cpu/bf16/bf16.h"
#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/cpu/rows/attention_heads_amx.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/precision.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

// [hide:attention-backward]
#if defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE)
namespace {

double rounded(real x) { return bf16_to_float(round_to_bf16(x)); }

struct Heads {
    int64_t B, N, heads, d;
    bool bias, learned, grad_already_there;
};

// A sum of products and the bound its float32 evaluation must meet: float32 sums of up to 96
// exact products (1e-5 of the sum of magnitudes), plus, where one operand is rounded from a
// float32 value that the reference computes in float64 (dS), two of the largest terms times
// bf16's half unit, for a value that rounds the other way.
struct Sum {
    double value = 0, magnitude = 0, largest = 0;
    void add(double x) {
        value += x;
        magnitude += std::abs(x);
        largest = std::max(largest, std::abs(x));
    }
    double bound(bool rounding_may_differ) const {
        return 1e-5 * magnitude + (rounding_may_differ ? 2 * std::ldexp(largest, -8) : 0) + 1e-7;
    }
};

void check_close(real got, const Sum& want, bool rounding_may_differ, const char* what) {
    INFO(what << ": " << got << " against " << want.value);
    CHECK(std::abs(got - want.value) <= want.bound(rounding_may_differ));
}

void check_heads(const Heads& c) {
    INFO("B " << c.B << " N " << c.N << " heads " << c.heads << " d " << c.d << " key bias " << c.bias
              << " learned scale " << c.learned << " gradient already there " << c.grad_already_there);
    const int64_t B = c.B, N = c.N, H = c.heads, d = c.d, D = H * d, ld = 3 * D;
    Rng rng(N * 100 + d);
    Tensor qkv = rand_tensor({B, N, ld}, rng, -2, 2);
    Tensor scale = c.learned ? rand_tensor({H}, rng, real(0.2), real(0.8)) : Tensor();
    std::vector<real> bias(N, 0);
    Tensor key_bias;
    if (c.bias) {
        for (int64_t j = 0; j < N; ++j) bias[j] = j % 5 == 3 ? -std::numeric_limits<real>::infinity() : real(0.1 * j);
        key_bias = Tensor::from_vector({N}, bias);
    }
    Tensor attention;
    const Tensor out = scaled_dot_product_attention(qkv, H, key_bias, scale, &attention);
    const Tensor dout = Tensor::uniform(out.shape(), -1, 1, rng);
    const Tensor extra = Tensor::uniform(qkv.shape(), -1, 1, rng);
    Tensor loss = weighted_sum(out, dout);
    if (c.grad_already_there) loss = loss + weighted_sum(qkv, extra);
    loss.backward();

    const Tensor grad = qkv.grad();  // (held: a pointer into a temporary's data would dangle)
    const real* x = qkv.data();
    const real* a = attention.data();
    std::vector<double> dscale(H, 0);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            const real* q = x + b * N * ld + h * d;
            const real *k = q + D, *v = q + 2 * D;
            const real* at = a + (b * H + h) * N * N;
            const real* dot = dout.data() + b * N * D + h * d;
            const double s = c.learned ? scale.data()[h] : 1 / std::sqrt(double(d));
            // A = softmax(s q k^T + bias), q and k rounded; the diagonal masked with a learned scale.
            for (int64_t i = 0; i < N; ++i) {
                std::vector<double> z(N);
                double m = -INFINITY;
                for (int64_t j = 0; j < N; ++j) {
                    double dotqk = 0;
                    for (int64_t u = 0; u < d; ++u) dotqk += rounded(q[i * ld + u]) * rounded(k[j * ld + u]);
                    z[j] = (c.learned && i == j) ? -INFINITY : s * dotqk + bias[j];
                    m = std::max(m, z[j]);
                }
                double total = 0;
                for (double& e : z) total += (e = std::exp(e - m));
                for (int64_t j = 0; j < N; ++j) {
                    INFO("A[" << i << "][" << j << "]");
                    CHECK(std::abs(at[i * N + j] - z[j] / total) <= 2e-4);
                }
            }
            // O = A v with the kernel's own A, both rounded.
            for (int64_t i = 0; i < N; ++i)
                for (int64_t u = 0; u < d; ++u) {
                    Sum o;
                    for (int64_t j = 0; j < N; ++j) o.add(rounded(at[i * N + j]) * rounded(v[j * ld + u]));
                    check_close(out.data()[b * N * D + i * D + h * d + u], o, false, "output");
                }
            // dA = dO v^T and dS = A * (dA - rowsum(dA * A)), in float64.
            std::vector<double> ds(N * N);
            for (int64_t i = 0; i < N; ++i) {
                std::vector<double> da(N);
                double row = 0;
                for (int64_t j = 0; j < N; ++j) {
                    for (int64_t u = 0; u < d; ++u) da[j] += rounded(dot[i * D + u]) * rounded(v[j * ld + u]);
                    row += da[j] * at[i * N + j];
                }
                for (int64_t j = 0; j < N; ++j) ds[i * N + j] = at[i * N + j] * (da[j] - row);
            }
            // dq = s dS k, dk = s dS^T q, dv = A^T dO, each operand rounded; <q, dS k> for the scale.
            const auto rounded_ds = [&](int64_t i, int64_t j) { return rounded(static_cast<real>(ds[i * N + j])); };
            const real* g = grad.data() + b * N * ld + h * d;
            const real* before = extra.data() + b * N * ld + h * d;
            for (int64_t i = 0; i < N; ++i)
                for (int64_t u = 0; u < d; ++u) {
                    Sum dsk, dk, dv;
                    for (int64_t j = 0; j < N; ++j) {
                        dsk.add(rounded_ds(i, j) * rounded(k[j * ld + u]));
                        dk.add(s * rounded_ds(j, i) * rounded(q[j * ld + u]));
                        dv.add(rounded(at[j * N + i]) * rounded(dot[j * D + u]));
                    }
                    dscale[h] += q[i * ld + u] * dsk.value;
                    Sum dq = dsk;
                    dq.value *= s, dq.magnitude *= s, dq.largest *= s;
                    if (c.grad_already_there) {  // the gradient that arrived first
                        dq.add(before[i * ld + u]);
                        dk.add(before[i * ld + D + u]);
                        dv.add(before[i * ld + 2 * D + u]);
                    }
                    check_close(g[i * ld + u], dq, true, "dq");
                    check_close(g[i * ld + D + u], dk, true, "dk");
                    check_close(g[i * ld + 2 * D + u], dv, false, "dv");
                }
        }
    if (c.learned)
        for (int64_t h = 0; h < H; ++h) {
            INFO("head_scale's gradient, head " << h);
            CHECK(std::abs(scale.grad().data()[h] - dscale[h]) <= 1e-3 * (1 + std::abs(dscale[h])));
        }

    // Again, not asking for A: the forward does not store it, the backward computes it again
    // (attention_heads_recompute), and every result has the same bits.
    Rng same(N * 100 + d);
    Tensor qkv2 = rand_tensor({B, N, ld}, same, -2, 2);
    Tensor scale2 = c.learned ? rand_tensor({H}, same, real(0.2), real(0.8)) : Tensor();
    REQUIRE(attention_heads_recompute({qkv2.data(), H, N, D, nullptr, 1, nullptr}));
    const Tensor out2 = scaled_dot_product_attention(qkv2, H, key_bias, scale2);
    Tensor loss2 = weighted_sum(out2, dout);
    if (c.grad_already_there) loss2 = loss2 + weighted_sum(qkv2, extra);
    loss2.backward();
    CHECK(out2.to_vector() == out.to_vector());
    CHECK(qkv2.grad().to_vector() == grad.to_vector());
    if (c.learned) CHECK(scale2.grad().to_vector() == scale.grad().to_vector());
}

}  // namespace
#endif

TEST_CASE("attention: the AMX head kernel agrees with float64 on the same bf16 inputs", "[.][attention-amx]") {
    // Hidden from the default run: CTest runs it as "attention: the AMX head kernel ...", which
    // counts as skipped where the line below says so.
#if defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE)
    const MatmulPrecisionGuard bf16(MatmulPrecision::Bf16);
    if (!gemm_bf16_is_amx()) {
        std::cout << "skipped: no AMX (the bf16 kernel here: " << gemm_bf16_description() << ")\n";
        return;
    }
    // One to six tiles of tokens with every partial last tile's kind, head sizes of whole tiles
    // (32, 64) and of partial ones (24 as cifar-micro's, 8, 40, 48), and what the heads may carry.
    const Heads cases[] = {
        {2, 65, 4, 32, false, false, false}, {2, 65, 4, 32, true, true, true},   {1, 1, 1, 32, false, false, false},
        {2, 16, 3, 64, false, true, false},  {1, 33, 2, 32, false, false, true}, {2, 96, 1, 64, true, true, false},
        {2, 80, 2, 32, true, false, true},   {1, 96, 2, 32, false, true, false}, {2, 17, 2, 64, true, false, false},
        {2, 65, 4, 24, false, false, false}, {2, 65, 4, 24, true, true, true},   {1, 40, 3, 8, false, true, false},
        {2, 50, 2, 40, true, false, true},   {1, 96, 2, 48, false, true, true},  {2, 7, 3, 24, true, false, false},
    };
    for (const Heads& c : cases) check_heads(c);
    // A NaN in q reaches its row's output.
    Rng rng(4);
    Tensor qkv = rand_tensor({1, 20, 3 * 64}, rng, -1, 1, false);
    qkv.data()[5 * 192 + 3] = std::numeric_limits<real>::quiet_NaN();  // q of head 0, row 5
    const Tensor out = scaled_dot_product_attention(qkv, 2);
    for (int64_t j = 0; j < 32; ++j) CHECK(std::isnan(out.data()[5 * 64 + j]));
    CHECK(std::isfinite(out.data()[4 * 64]));
    // What the tiles do not take goes to the other kernels.
    CHECK(attention_heads_amx_fits({nullptr, 4, 65, 128, nullptr, 1, nullptr}));
    CHECK_FALSE(attention_heads_amx_fits({nullptr, 2, 97, 64, nullptr, 1, nullptr}));   // N above 96
    CHECK(attention_heads_amx_fits({nullptr, 4, 65, 96, nullptr, 1, nullptr}));         // d = 24
    CHECK_FALSE(attention_heads_amx_fits({nullptr, 4, 65, 80, nullptr, 1, nullptr}));   // d = 20
    CHECK_FALSE(attention_heads_amx_fits({nullptr, 2, 65, 8, nullptr, 1, nullptr}));    // d = 4
    CHECK_FALSE(attention_heads_amx_fits({nullptr, 1, 65, 128, nullptr, 1, nullptr}));  // d = 128
#else
    std::cout << "skipped: no AMX (not an x86-64 float32 build)\n";
#endif
}
// [/hide:attention-backward]

}  // namespace patchgrad
