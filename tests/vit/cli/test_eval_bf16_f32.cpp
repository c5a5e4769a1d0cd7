// `patchgrad eval --precision bf16` (vit/cli/eval.cpp) in float32, where bf16 products exist:
// a run trained with --precision bf16 evaluated itself in bf16, and eval reproduces it.
#include <string>
#include <vector>

#include "catch.h"
#include "cli_test_util.h"
#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/evaluation.h"
#include "patchgrad/vit/train/train_options.h"
#include "test_util.h"
#include "vit/trainer_test_util.h"

namespace patchgrad::cli {
namespace {

using namespace patchgrad::test;

TEST_CASE("eval --precision bf16 gives a bf16 run's own test figures, and fp32 the same weights in float32",
          "[cli][eval][bf16]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.learning_only(2);
    o.precision = MatmulPrecision::Bf16;
    const TrainResult r = quiet(o);
    REQUIRE(r.test.has_value());
    const std::string last = o.out_dir + "/last.safetensors";
    const std::string trained = format_evaluation(*r.test);

    Captured bf16;
    REQUIRE(eval_command({"--checkpoint", last, "--data", run.data_dir(), "--precision", "bf16"}) == 0);
    CHECK(matmul_precision() == MatmulPrecision::Fp32);  // the setting ended with the command
    INFO(bf16.out.str());
    CHECK(bf16.out.str().find("\nprecision: bf16 matrix products, float32 elsewhere; bf16 ") != std::string::npos);
    // The whole report (accuracy, loss to 4 digits, per class, confusion matrix) as train's.
    CHECK(bf16.out.str().find(trained) != std::string::npos);

    Captured fp32;
    REQUIRE(eval_command({"--checkpoint", last, "--data", run.data_dir()}) == 0);
    CHECK(fp32.out.str().find("\nprecision: fp32\n") != std::string::npos);

    // The same weights evaluated here in float32 give fp32's whole report. (A 4-digit report of
    // 10 images need not tell the precisions apart: bf16's error can hide below its digits.)
    const Checkpoint checkpoint = load_checkpoint(last);
    VisionTransformer model(checkpoint.config, 0);
    load_weights(model, checkpoint);
    const ImageSet set = load_cifar10_test(run.data_dir());
    const auto tta = parse_enum<TestTimeAugment>(checkpoint_recipe_entry(checkpoint, "tta"), "train.tta");
    CHECK(fp32.out.str().find(format_evaluation(evaluate(model, set, ChannelStats::cifar10(), 256, tta))) !=
          std::string::npos);

    // What must differ, where it is sure to: the probabilities themselves, bit for bit (every
    // product of the model rounds its inputs to bf16 in one and not in the other).
    const auto fp32_classes = top_classes(model, set, ChannelStats::cifar10(), 10);
    std::vector<std::vector<ClassProbability>> bf16_classes;
    {
        const MatmulPrecisionGuard guard(MatmulPrecision::Bf16);
        bf16_classes = top_classes(model, set, ChannelStats::cifar10(), 10);
    }
    REQUIRE(bf16_classes.size() == fp32_classes.size());
    int64_t differing = 0;
    for (size_t i = 0; i < fp32_classes.size(); ++i)
        for (size_t j = 0; j < fp32_classes[i].size(); ++j)
            differing += bf16_classes[i][j].label != fp32_classes[i][j].label ||
                         bf16_classes[i][j].probability != fp32_classes[i][j].probability;
    CHECK(differing > 0);
}

}  // namespace
}  // namespace patchgrad::cli
