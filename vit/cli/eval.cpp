// `patchgrad eval`: how good a trained checkpoint is on CIFAR-10's test set or any file in
// its format. The model is rebuilt from the checkpoint's own metadata, so the file is all
// it needs.
//
//   patchgrad eval --checkpoint PATH [--data DIR [--split NAME] | --file FILE.bin] [--tta NAME] [--batch N]
//                  [--threads T] [--precision P]
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/datasets/split.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/evaluation.h"
#include "patchgrad/vit/train/train_options.h"

namespace patchgrad::cli {

namespace {

void print_help() {
    std::cout
        << "usage: patchgrad eval --checkpoint PATH [--data DIR [--split NAME] | --file FILE.bin] [--tta NAME]\n"
           "                      [--batch N] [--threads T] [--precision P]\n"
           "\n"
           "Evaluates a checkpoint written by 'patchgrad train' (last.safetensors, best.safetensors) and\n"
           "prints the accuracy, the accuracy of every class and the confusion matrix. A run's resume file\n"
           "(last.state.safetensors) holds its trained weights: with --ema they differ from last.safetensors,\n"
           "which holds their moving average.\n"
           "\n"
           "  --checkpoint PATH   the checkpoint; the model is rebuilt from its metadata\n"
           "  --data DIR          evaluate on DIR/test_batch.bin (default: $PATCHGRAD_DATA, else "
        << kDefaultDataDir
        << ")\n"
           "  --split NAME        test (test_batch.bin, the default) or validation: the images the run held\n"
           "                      out of data_batch_1..5 (its --validation count, chosen by its --seed)\n"
           "  --file FILE.bin     evaluate on any file of CIFAR-10 binary records instead\n"
           "  --tta NAME          test-time augmentation: none, or flip (mean logits of each image and its\n"
           "                      mirror image); default: the one the run was trained with (train --tta)\n"
           "  --batch N           images per forward pass (default: 256)\n"
           "  --threads T         threads, or auto (measured, as in train; default: 1); the results are identical\n"
           "                      for any T\n"
           "  --precision P       fp32 (the default) or bf16: matrix products with bf16 inputs and float32\n"
           "                      sums, as 'train --precision bf16' evaluates; a checkpoint is float32 either way\n"
           "  -h, --help          show this help\n";
}

// "trained 12 epochs" or "trained 3 epochs and 170 steps" (a checkpoint saved mid-epoch).
std::string training_so_far(const TrainingState& state) {
    std::string s = "trained " + std::to_string(state.epoch) + " epoch" + (state.epoch == 1 ? "" : "s");
    if (state.step_in_epoch > 0) s += " and " + std::to_string(state.step_in_epoch) + " steps";
    return s + " (global step " + std::to_string(state.global_step) + ")";
}

}  // namespace

int eval_command(const std::vector<std::string>& args) {
    const Flags flags = parse_flags(
        args, {"--checkpoint", "--data", "--split", "--file", "--tta", "--batch", "--threads", "--precision"});
    if (flags.help) {
        print_help();
        return 0;
    }
    if (!flags.given("--checkpoint")) throw UsageError("--checkpoint PATH is required");
    data_dir_from_flags(flags);  // an empty --data is refused before anything is loaded
    if (flags.given("--data") && flags.given("--file"))
        throw UsageError("give --data DIR or --file FILE.bin, not both");
    if (flags.given("--split") && flags.given("--file"))
        throw UsageError("--split chooses images of --data, not of --file");
    const std::string split = flags.value_or("--split", "test");
    if (split != "test" && split != "validation")
        throw UsageError("--split must be test or validation, got '" + split + "'");
    const int64_t batch = parse_positive_int("--batch", flags.value_or("--batch", "256"));
    use_threads(parse_threads(flags.value_or("--threads", "1")));
    // A run trained with --precision bf16 evaluated itself in bf16; this reproduces its figures.
    const MatmulPrecisionGuard precision(
        parse_enum_flag<MatmulPrecision>("--precision", flags.value_or("--precision", "fp32")));
    std::optional<TestTimeAugment> tta_flag;
    if (flags.given("--tta")) tta_flag = parse_enum_flag<TestTimeAugment>("--tta", flags.values.at("--tta"));

    // load_checkpoint checks the file's tensors against its config, so the model built below
    // is no bigger than the file, whatever its metadata says.
    const Checkpoint checkpoint = load_checkpoint(flags.values.at("--checkpoint"));
    // The run's own test-time augmentation unless told otherwise.
    const TestTimeAugment tta =
        tta_flag ? *tta_flag
                 : parse_enum<TestTimeAugment>(checkpoint_recipe_entry(checkpoint, "tta"), "checkpoint train.tta");
    std::cout << "checkpoint " << checkpoint.path << ": " << describe(checkpoint.config) << "; "
              << training_so_far(checkpoint.state) << "\n";
    std::cout << "precision: " << matmul_precision_description(matmul_precision()) << "\n";

    ImageSet set;
    if (flags.given("--file")) {
        set = load_cifar10_file(flags.values.at("--file"), &std::cerr);
        std::cout << "data: " << flags.values.at("--file");
    } else {
        const DataDir dir = data_dir_from_flags(flags);
        if (split == "test") {
            set = load_cifar10_test(dir.path, &std::cerr);
            std::cout << "data: " << kCifar10TestFile << " in " << dir.path << " (" << dir.source << ")";
        } else {
            // The run's own split, from its recipe: split_validation as train() calls it.
            TrainOptions recipe;
            apply_checkpoint_recipe(recipe, checkpoint);
            if (recipe.validation == 0)
                throw UsageError("--split validation: the run held no images out (--validation 0)");
            set = split_validation(load_cifar10_train(dir.path, &std::cerr), recipe.validation, recipe.seed).validation;
            std::cout << "data: the run's validation split (--validation " << recipe.validation << ", --seed "
                      << recipe.seed << ") of the training files in " << dir.path << " (" << dir.source << ")";
        }
    }
    std::cout << ", " << set.size() << " images; test-time augmentation " << enum_name(tta) << "\n\n" << std::flush;
    VisionTransformer model(checkpoint.config, 0);
    load_weights(model, checkpoint);
    std::cout << format_evaluation(
        evaluate(model, set, ChannelStats::cifar10_for(checkpoint.config.channels), batch, tta));
    return 0;
}

}  // namespace patchgrad::cli
