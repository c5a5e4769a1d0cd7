// step_sample.h: `train` and `bench --precision bf16` time a sample of the step in both
// precisions and say how bf16 compares; in float32, where bf16 exists.
#include <cmath>
#include <string>

#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/vit/train/step_sample.h"
#include "patchgrad/vit/train/train_options.h"
#include "test_util.h"

using namespace patchgrad;

TEST_CASE("bf16: the step sample measures bf16 against float32, and the note warns where bf16 is slower", "[bf16]") {
    MatmulPrecisionGuard bf16(MatmulPrecision::Bf16);
    const double speedup = measure_bf16_speedup();
    CHECK(std::isfinite(speedup));
    CHECK(speedup > 0);
    CHECK(matmul_precision() == MatmulPrecision::Bf16);  // the caller's setting, as it was
    // On an AMD EPYC Zen 5 the sample ran about 1.5x as fast in bf16; on an Intel Xeon whose
    // vdpbf16ps issues at a quarter of the FMA's rate, bf16 is slower, and the note says so.
    CHECK(bf16_speed_note(1.456) ==
          "           bf16 ran a sample of the step 1.46x as fast as float32 here (measured now)");
    CHECK(bf16_speed_note(0.72) ==
          "warning: bf16 ran a sample of the step at 0.72x float32's speed on this CPU (measured now): "
          "--precision fp32 trains faster here (chapter 12.9)");
    CHECK(bf16_speed_note(1.0).find("step 1.00x as fast") != std::string::npos);  // equal is no warning
}

TEST_CASE("bf16: the precision line names fp32, or bf16 with its kernel", "[bf16]") {
    CHECK(matmul_precision_description(MatmulPrecision::Fp32) == "fp32");
    CHECK(matmul_precision_description(MatmulPrecision::Bf16) ==
          "bf16 matrix products, float32 elsewhere; " + gemm_bf16_description());
    if (!bf16_native()) CHECK(bf16_header_note(MatmulPrecision::Bf16).empty());  // the emulation needs no note
    CHECK(bf16_header_note(MatmulPrecision::Fp32).empty());
}
