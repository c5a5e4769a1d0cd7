// The MLP op in the float32 build: the same bits as linear, gelu and linear under both matmul
// precisions and at every instruction-set level, at sizes where gemm blocks its rows.
#include <vector>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/precision.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("mlp: the same bits as linear, gelu and linear in float32 and bf16", "[op:mlp][bf16]") {
    Rng rng(21);
    // 700 rows of cifar-tiny-like widths: many row blocks, edges at the ends.
    const std::vector<Tensor> inputs = {rand_tensor({7, 100, 40}, rng, -2, 2), rand_tensor({96, 40}, rng),
                                        rand_tensor({96}, rng), rand_tensor({40, 96}, rng), rand_tensor({40}, rng)};
    for (const MatmulPrecision precision : {MatmulPrecision::Fp32, MatmulPrecision::Bf16})
        for_each_isa([&](Isa) {
            INFO("precision " << (precision == MatmulPrecision::Bf16 ? "bf16" : "fp32"));
            MatmulPrecisionGuard guard(precision);
            for (const GeluApproximation a : {GeluApproximation::None, GeluApproximation::Tanh}) {
                // The second pair passes x (t[0]) as the residual too (in = out = 40).
                const auto fused = values_and_gradients(
                    2, [a](const std::vector<Tensor>& t) { return mlp(t[0], t[1], t[2], t[3], t[4], a); }, inputs);
                const auto steps = values_and_gradients(
                    2, [a](const std::vector<Tensor>& t) { return mlp_through_ops(t[0], t[1], t[2], t[3], t[4], a); },
                    inputs);
                const auto fused_residual = values_and_gradients(
                    2, [a](const std::vector<Tensor>& t) { return mlp(t[0], t[1], t[2], t[3], t[4], a, t[0]); },
                    inputs);
                const auto steps_residual = values_and_gradients(
                    2,
                    [a](const std::vector<Tensor>& t) {
                        return mlp_through_ops(t[0], t[1], t[2], t[3], t[4], a, t[0]);
                    },
                    inputs);
                REQUIRE(fused.size() == steps.size());
                REQUIRE(fused_residual.size() == steps_residual.size());
                for (size_t k = 0; k < fused.size(); ++k) {
                    INFO("0: the value, 1: x's gradient, 2-5: W1's, b1's, W2's, b2's; k = " << k);
                    CHECK(fused[k] == steps[k]);
                    CHECK(fused_residual[k] == steps_residual[k]);
                }
            }
        });
}
