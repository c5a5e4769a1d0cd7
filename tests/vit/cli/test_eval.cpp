// Tests for vit/cli/eval.cpp end to end: a tiny run trained on synthetic CIFAR-10, then
// `patchgrad eval` on its files, called as main() calls it, its output captured.
#include <string>
#include <vector>

#include "catch.h"
#include "cli_test_util.h"
#include "patchgrad/vit/cli/cli.h"
#include "test_util.h"
#include "vit/trainer_test_util.h"

namespace patchgrad::cli {
namespace {

using namespace patchgrad::test;

// "accuracy 40.00% (4 of 10 images), mean loss 2.2931": the line format_evaluation starts with.
std::string accuracy_line(const Evaluation& e) {
    return format_evaluation(e).substr(0, format_evaluation(e).find('\n'));
}

TEST_CASE("eval: the test set and the run's validation split, with the run's --tta or another", "[cli][eval]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.learning_only(2);
    o.ema = 0.5;
    o.tta = TestTimeAugment::Flip;
    const TrainResult r = quiet(o);
    REQUIRE(r.test.has_value());
    const std::string last = o.out_dir + "/last.safetensors";
    {
        Captured c;
        REQUIRE(eval_command({"--checkpoint", last, "--data", run.data_dir(), "--batch", "8"}) == 0);
        CHECK(c.out.str().find("test_batch.bin") != std::string::npos);
        CHECK(c.out.str().find("10 images; test-time augmentation flip") != std::string::npos);
        CHECK(c.out.str().find("\nprecision: fp32\n") != std::string::npos);
        CHECK(c.out.str().find(accuracy_line(*r.test)) != std::string::npos);
    }
    {
        // The validation images the run evaluated after its last epoch, with its flips: the
        // same accuracy as its metrics say (metrics.csv rounds, the history does not).
        Captured c;
        REQUIRE(eval_command({"--checkpoint", last, "--data", run.data_dir(), "--split", "validation"}) == 0);
        CHECK(c.out.str().find("the run's validation split (--validation 10, --seed 7)") != std::string::npos);
        char expected[64];
        std::snprintf(expected, sizeof expected, "accuracy %.2f%% (", 100 * r.history.back().eval_acc);
        CHECK(c.out.str().find(expected) != std::string::npos);
    }
    {
        // The resume file holds the trained weights, not their average; --tta none overrides.
        Captured c;
        REQUIRE(eval_command({"--checkpoint", o.out_dir + "/last.state.safetensors", "--data", run.data_dir(), "--tta",
                              "none"}) == 0);
        CHECK(c.out.str().find("test-time augmentation none") != std::string::npos);
    }
    Captured c;
    require_error(
        [&] {
            eval_command({"--checkpoint", last, "--split", "train"});
        },
        {"--split", "test or validation", "'train'"});
    require_error(
        [&] {
            eval_command({"--checkpoint", last, "--split", "test", "--file", "x.bin"});
        },
        {"--split", "--file"});
    require_error(
        [&] {
            eval_command({"--checkpoint", last, "--tta", "crop", "--data", run.data_dir()});
        },
        {"--tta", "crop"});
    require_error(
        [&] {
            eval_command({"--checkpoint", last, "--precision", "fp16", "--data", run.data_dir()});
        },
        {"--precision", "fp16"});
    // Usage errors (exit status 2), found before the checkpoint is read.
    CHECK_THROWS_AS(eval_command({"--checkpoint", "no-such-file", "--tta", "crop"}), UsageError);
    CHECK_THROWS_AS(eval_command({"--checkpoint", "no-such-file", "--precision", "fp16"}), UsageError);
    // This float64 build has no bf16 products: refused in words, not computed in float64.
    require_error(
        [&] {
            eval_command({"--checkpoint", last, "--precision", "bf16", "--data", run.data_dir()});
        },
        {"bf16", "float32 build only"});
}

}  // namespace
}  // namespace patchgrad::cli
