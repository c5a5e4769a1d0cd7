// A LayerNorm in front of linear's and mlp's first product (InputNorm, autograd/ops.h) in the
// float32 build: the same bits as layer_norm followed by the op, under both matmul precisions,
// at every instruction-set level and for 1 and 16 threads, at sizes where gemm blocks its rows.
#include <functional>
#include <vector>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/precision.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {

// Value and gradients of fused(t) and of steps(t) on the same inputs: bit for bit.
void check_same_bits(const std::function<Tensor(const std::vector<Tensor>&)>& fused,
                     const std::function<Tensor(const std::vector<Tensor>&)>& steps, const std::vector<Tensor>& inputs,
                     int threads) {
    const auto a = values_and_gradients(threads, fused, inputs);
    const auto b = values_and_gradients(threads, steps, inputs);
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) {
        INFO("0: the value, k > 0: the gradient of input k - 1; k = " << k);
        CHECK(a[k] == b[k]);
    }
}

InputNorm norm_of(const std::vector<Tensor>& t, size_t i) { return InputNorm{true, t[i], t[i + 1], 1e-5}; }

}  // namespace

TEST_CASE("input norm: linear and mlp give the bits of layer_norm and the op, in float32 and bf16",
          "[op:linear][op:mlp][bf16]") {
    // 700 rows: cifar-tiny's width (one group of B's slivers per row of tiles), a wide qkv (the
    // rows of A computed a block at a time) and a width of no whole vectors.
    struct Case {
        int64_t in, out, hidden;
    };
    for (const Case c : {Case{128, 384, 256}, Case{100, 1000, 64}, Case{40, 96, 72}}) {
        INFO("in " << c.in << " out " << c.out << " hidden " << c.hidden);
        Rng rng(31);
        const Tensor x = rand_tensor({7, 100, c.in}, rng, -2, 2), weight = rand_tensor({c.in}, rng, 0.5, 1.5),
                     bias = rand_tensor({c.in}, rng);
        const std::vector<Tensor> linear_inputs = {x, weight, bias, rand_tensor({c.out, c.in}, rng),
                                                   rand_tensor({c.out}, rng)};
        const std::vector<Tensor> mlp_inputs = {x,
                                                weight,
                                                bias,
                                                rand_tensor({c.hidden, c.in}, rng),
                                                rand_tensor({c.hidden}, rng),
                                                rand_tensor({c.in, c.hidden}, rng),
                                                rand_tensor({c.in}, rng)};
        for (const MatmulPrecision precision : {MatmulPrecision::Fp32, MatmulPrecision::Bf16})
            for_each_isa([&](Isa) {
                INFO("precision " << (precision == MatmulPrecision::Bf16 ? "bf16" : "fp32"));
                MatmulPrecisionGuard guard(precision);
                for (int threads : {1, 16}) {
                    INFO(threads << " threads");
                    // qkv's forward, and the MLP branch of a block with x its residual.
                    check_same_bits(
                        [](const std::vector<Tensor>& t) { return linear(t[0], t[3], t[4], Tensor(), norm_of(t, 1)); },
                        [](const std::vector<Tensor>& t) {
                            return linear(layer_norm(t[0], t[1], t[2], 1e-5), t[3], t[4]);
                        },
                        linear_inputs, threads);
                    check_same_bits(
                        [](const std::vector<Tensor>& t) {
                            return mlp(t[0], t[3], t[4], t[5], t[6], GeluApproximation::None, t[0], norm_of(t, 1));
                        },
                        [](const std::vector<Tensor>& t) {
                            return mlp(layer_norm(t[0], t[1], t[2], 1e-5), t[3], t[4], t[5], t[6],
                                       GeluApproximation::None, t[0]);
                        },
                        mlp_inputs, threads);
                }
            });
    }
}
