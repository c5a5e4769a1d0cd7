// trainer.h — training a ViT on CIFAR-10 end to end, as a library: what `patchgrad train`
// and `patchgrad eval` run (vit/cli/train.cpp, eval.cpp), and what the tests drive on tiny
// synthetic data (tests/vit/train/test_trainer.cpp).
//
// One optimizer step, as in timm's train loop:
//
//   indices = Batcher(train size, batch, seed).batch(epoch, step)      the same batches on resume
//   rng     = Rng(derive_seed(seed, {epoch, step}))                   the same augmentation on resume
//   batch   = augment(train.subset(indices), rng)                      crop/flip, RandAugment, erasing
//   x       = mixup/cutmix(to_tensor(batch, CIFAR-10 mean/std), rng)   when --mixup/--cutmix
//   loss    = cross_entropy(model(x), labels, smoothing)              mixed_cross_entropy when mixing
//   loss.backward(); clip_grad_norm; lr = schedule(global step); optimizer.step(); zero_grad()
//
// Everything random is a function of (seed, epoch, step) or lives in the checkpoint (the
// model's dropout generator), and the ops give the same bits on any number of threads, so
// a run stopped at any step and resumed ends with bit-identical weights to an uninterrupted
// one, on any thread count.
//
// What a run writes into its output directory:
//   metrics.csv        one row per epoch (EpochRecord), rewritten atomically each epoch
//   metrics.png        loss curves left, accuracy curves right, rewritten each epoch
//   last.safetensors   + last.state.safetensors (optimizer): every epoch, and when stopped
//   best.safetensors   the weights whenever the evaluation accuracy improves
//   results.json       at the end: the final test accuracy, loss, parameters, wall time
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "datasets/image_set.h"
#include "datasets/normalize.h"
#include "vit/pictures/chart.h"
#include "vit/train/checkpoint.h"
#include "vit/vision_transformer.h"

namespace patchgrad {

// A training run's settings; the CLI flag of each is its name with '-' for '_'.
// preset_options gives the named recipes; the defaults here are neutral, not a recipe.
struct TrainOptions {
    // ---- the recipe: fixed for the life of a run (a resume must use the same) ----
    std::string preset = "custom";
    ViTConfig config = vit_config("cifar-tiny");  // the model, drop_path and dropout included
    int64_t epochs = 1;
    int64_t batch = 128;
    std::string optimizer = "adamw";  // "sgd", "adam" or "adamw"
    double lr = 1e-3;
    double weight_decay = 0;
    double momentum = 0.9;            // SGD only
    bool nesterov = false;            // SGD only
    double warmup_epochs = 0;         // linear warmup; fractional ones are rounded to whole steps, capped at the run
    std::string schedule = "cosine";  // "cosine", "step" (x0.1 after each third) or "constant"
    double min_lr = 0;                // where cosine ends
    double label_smoothing = 0;
    double clip_grad = 0;               // max global gradient norm; 0 = no clipping
    std::string augment = "crop-flip";  // or "none"
    std::string rand_augment = "none";  // timm's string, e.g. "rand-m9-n2", or "none"
    double erasing = 0;                 // random erasing probability
    double mixup = 0;                   // Beta(alpha, alpha) of mixup; 0 = off
    double cutmix = 0;                  // of cutmix; 0 = off (both on: half the batches each)
    int64_t validation = 5000;          // training images held out for the per-epoch evaluation; 0 = use the test set
    uint64_t seed = 0;

    // ---- how to run it: may differ between a run and its resume ----
    std::string data_dir = "data/cifar-10-batches-bin";
    std::string data_source = "default";  // where data_dir came from, for messages (resolve_data_dir)
    std::string out_dir = "runs/cifar-tiny";
    int64_t threads = 0;     // 0 = auto: the count choose_thread_count measures to pay here (thread_choice.h)
    bool resume = false;     // continue from out_dir/last.safetensors
    bool overwrite = false;  // out_dir may hold a run, which is deleted first (else it is refused)
    int64_t max_steps = 0;   // stop (and save) after this many optimizer steps of the run; 0 = no limit
    int64_t log_every = 0;   // steps between progress lines when not on a terminal; 0 = ~10 per epoch
};

// The named recipes ("default", "quick"), kept in one table in trainer.cpp (kPresets;
// `patchgrad train --help` prints them).
// config_name, when not empty, replaces the preset's model (its drop_path and dropout kept).
// Unknown names throw std::invalid_argument listing the known ones.
TrainOptions preset_options(const std::string& preset, const std::string& config_name = "");
std::vector<std::string> preset_names();

// Throws std::invalid_argument "train options: --<flag> ..." naming the first option that
// makes no sense (epochs < 1, lr <= 0, an unknown optimizer, schedule or augmentation, a
// bad RandAugment string, a model that does not take 32x32 CIFAR-10 images, ...).
void validate(const TrainOptions& options);

// The recipe options as the checkpoint's "train.<flag>" metadata, and back: a resume starts
// from the checkpoint's recipe, and check_recipe refuses one that changed.
Metadata recipe_metadata(const TrainOptions& options);
void apply_checkpoint_recipe(TrainOptions& options, const Checkpoint& checkpoint);
// "checkpoint <path>: --lr 0.001 in the checkpoint, 0.002 requested" for the first option
// that differs (or is missing from the checkpoint).
void check_recipe(const Checkpoint& checkpoint, const TrainOptions& options);
// The recipe as the flags that give it, for the log: " --preset quick --epochs 15 ... --seed 0"
// (switches such as --nesterov only when on).
std::string recipe_flags(const TrainOptions& options);

// ---- evaluation ------------------------------------------------------------------------

struct Evaluation {
    int64_t images = 0;
    double loss = 0;      // mean cross-entropy, no label smoothing
    double accuracy = 0;  // fraction of images whose largest logit is their label
    std::vector<std::string> class_names;
    std::vector<int64_t> confusion;  // [K, K] row-major: row = true class, column = predicted

    int64_t num_classes() const { return static_cast<int64_t>(class_names.size()); }
    // Per class: correct / images of that class; NaN for a class without images.
    std::vector<double> class_accuracy() const;
};

// The model in eval mode (no dropout, no drop path) under NoGradGuard, batch after batch;
// its train/eval mode is restored afterwards. Throws std::invalid_argument when the images
// or the class count do not fit the model, and std::runtime_error naming the first
// parameter that holds NaN or infinity when the mean loss is not finite (a broken model
// must not report "accuracy 10%, loss nan" as a result).
Evaluation evaluate(VisionTransformer& model, const ImageSet& set, const ChannelStats& stats, int64_t batch_size);

// The accuracy line, a table of per-class accuracy with class names, and the confusion
// matrix with abbreviated class names as column headers, every column aligned.
std::string format_evaluation(const Evaluation& evaluation);

// ---- metrics -----------------------------------------------------------------------------

// One row of metrics.csv. Accuracies are fractions; eval_set is "validation" or "test".
struct EpochRecord {
    int64_t epoch = 0;  // 1-based
    int64_t step = 0;   // global optimizer steps at the end of the epoch
    double lr = 0;      // the learning rate of the epoch's last step
    // The loss the optimizer saw (label smoothing and mixing included, so it sits above the
    // plain eval_loss) and the accuracy on the augmented batches, mixed ones counted by lambda.
    double train_loss = 0, train_acc = 0;
    std::string eval_set;
    double eval_loss = 0, eval_acc = 0;
    double epoch_seconds = 0;    // training and evaluation of this epoch
    double elapsed_seconds = 0;  // of the whole run, over all its sessions
    double img_per_s = 0;        // training images per second of training time
};

constexpr const char* kMetricsHeader =
    "epoch,step,lr,train_loss,train_acc,eval_set,eval_loss,eval_acc,epoch_seconds,elapsed_seconds,img_per_s";

// Atomic writes (temporary file, then rename); std::runtime_error naming the path on failure.
void write_metrics_csv(const std::string& path, const std::vector<EpochRecord>& history);
void write_metrics_chart(const std::string& path, const std::vector<EpochRecord>& history);
// One curve of that chart: field * scale against the epoch (scale 100 for accuracies in %).
Series epoch_series(const std::string& name, const std::vector<EpochRecord>& history, double EpochRecord::*field,
                    double scale);
// Throws std::invalid_argument naming the path and line for a file not written by
// write_metrics_csv.
std::vector<EpochRecord> read_metrics_csv(const std::string& path);

// ---- the run -----------------------------------------------------------------------------

struct TrainOutput {
    std::ostream* out = &std::cout;        // the header, one line per epoch, the final result
    std::ostream* log = &std::cerr;        // progress
    bool terminal = false;                 // live progress bar on `log` instead of periodic lines
    std::function<bool()> stop_requested;  // polled after every step (Ctrl-C): save and stop
};

enum class StopReason { Finished, MaxSteps, Interrupted };

struct TrainResult {
    StopReason stop = StopReason::Finished;
    TrainingState state;               // where the run stands
    std::vector<EpochRecord> history;  // every epoch of the run, earlier sessions included
    std::string checkpoint;            // the last.safetensors written
    std::optional<Evaluation> test;    // the final test evaluation, when finished
};

// Trains as described at the top. Throws std::invalid_argument for bad options (validate),
// a checkpoint that does not fit on --resume, or a missing --resume checkpoint; and
// std::runtime_error for an output directory that cannot be written (before training
// starts), missing or broken data files, or a loss that is no longer finite.
TrainResult train(const TrainOptions& options, const TrainOutput& output = {});

}  // namespace patchgrad
