// test_trainer_bf16_f32.cpp — training with --precision bf16 (autograd/cpu/bf16/gemm_bf16.h) on the
// tiny ViT and synthetic CIFAR-10 of test_trainer.cpp, in float32 (bf16 exists only there).
#include <cmath>

#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "test_util.h"
#include "vit/trainer_test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("train: --precision bf16 learns like float32 from the same seed, and says so in its header",
          "[trainer][bf16]") {
    TinyRun run;
    TrainOptions o = run.learning_only(6);
    QuietTrain fp32_run, bf16_run;
    const TrainResult fp32 = fp32_run(o);
    o.precision = MatmulPrecision::Bf16;
    o.out_dir += "-bf16";
    const TrainResult bf16 = bf16_run(o);
    CHECK(matmul_precision() == MatmulPrecision::Fp32);  // the run's setting ended with it

    INFO(bf16_run.out.str());
    CHECK(fp32_run.out.str().find("precision: fp32\n") != std::string::npos);
    CHECK(bf16_run.out.str().find("precision: bf16 matrix products, float32 elsewhere; bf16 ") != std::string::npos);
    // A native bf16 kernel's run says how a sample of the step compared with float32 here (or
    // warns that float32 is faster); the emulation's header already says it is not faster.
    CHECK((bf16_run.out.str().find("bf16 ran a sample of the step ") != std::string::npos) == bf16_native());
    // The band: the same training, each product's inputs rounded by at most 2^-8, so the curves
    // part only slowly. Per epoch, the training loss within 2% of float32's; the first epoch's
    // within 0.5% (the runs have had the least time to part). Measured here: 0.01% to 0.08%.
    REQUIRE(bf16.history.size() == fp32.history.size());
    for (size_t e = 0; e < fp32.history.size(); ++e) {
        INFO("epoch " << e + 1 << ": train loss fp32 " << fp32.history[e].train_loss << ", bf16 "
                      << bf16.history[e].train_loss);
        CHECK(std::abs(bf16.history[e].train_loss - fp32.history[e].train_loss) <=
              (e == 0 ? 0.005 : 0.02) * fp32.history[e].train_loss);
    }
    CHECK(bf16.history.back().train_loss < 0.8 * bf16.history.front().train_loss);
    CHECK(bf16.history.front().train_loss != fp32.history.front().train_loss);  // bf16 did change the numbers
}
