// The float64 build has no bf16 products: it exists for gradient checks (gemm_bf16.h).
#include "catch.h"
#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"

namespace patchgrad {

TEST_CASE("bf16: the float64 build refuses the bf16 precision and stays in float64", "[op:gemm][bf16][errors]") {
    REQUIRE_THROWS_WITH(set_matmul_precision(MatmulPrecision::Bf16),
                        "set_matmul_precision: bf16 products exist in the float32 build only (this is the float64 "
                        "build)");
    CHECK(matmul_precision() == MatmulPrecision::Fp32);
    CHECK_FALSE(bf16_native());
}

}  // namespace patchgrad
