// `patchgrad eval --precision bf16` (vit/cli/eval.cpp) in float32, where bf16 products exist:
// a run trained with --precision bf16 evaluated itself in bf16, and eval reproduces it.
#include <string>

#include "autograd/cpu/gemm_bf16.h"
#include "catch.h"
#include "cli_test_util.h"
#include "test_util.h"
#include "vit/cli/cli.h"
#include "vit/trainer_test_util.h"

namespace patchgrad::cli {
namespace {

using namespace patchgrad::test;

TEST_CASE("eval --precision bf16 gives a bf16 run's own test figures, and fp32 the same weights in float32",
          "[cli][eval][bf16]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.learning_only(2);
    o.precision = MatmulPrecision::bf16;
    const TrainResult r = quiet(o);
    REQUIRE(r.test.has_value());
    const std::string last = o.out_dir + "/last.safetensors";
    const std::string trained = format_evaluation(*r.test);

    Captured bf16;
    REQUIRE(eval_command({"--checkpoint", last, "--data", run.data_dir(), "--precision", "bf16"}) == 0);
    CHECK(matmul_precision() == MatmulPrecision::fp32);  // the setting ended with the command
    INFO(bf16.out.str());
    CHECK(bf16.out.str().find("\nprecision: bf16 matrix products, float32 elsewhere; bf16 ") != std::string::npos);
    // The whole report (accuracy, loss to 4 digits, per class, confusion matrix) as train's.
    CHECK(bf16.out.str().find(trained) != std::string::npos);

    Captured fp32;
    REQUIRE(eval_command({"--checkpoint", last, "--data", run.data_dir()}) == 0);
    CHECK(fp32.out.str().find("\nprecision: fp32\n") != std::string::npos);
    CHECK(fp32.out.str().find(trained.substr(0, trained.find('\n'))) == std::string::npos);
}

}  // namespace
}  // namespace patchgrad::cli
