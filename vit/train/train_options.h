// train_options.h — a training run's settings (TrainOptions), the named recipes (presets), and
// ONE table of the options (train_options()) from which everything else about them is made:
//
//   the command line     `patchgrad train` reads each row's flag (vit/cli/train.cpp)
//   --help               its lines, in table order (options_help)
//   validate             each row's check, after the model's
//   checkpoints          the recipe rows as "train.<flag>" metadata, read back on --resume and
//                        compared (recipe_metadata, apply_checkpoint_recipe, check_recipe)
//   the log              the recipe as flags (recipe_flags)
//   PyTorch              `patchgrad train --print-recipe` (recipe_json), which
//                        vit/scripts/train_torch.py reads instead of our source
//
// To add an option: add its member to TrainOptions and one row to the table in
// train_options.cpp (flag, value name, kind, help, member, check), and a line for it in the
// table test (tests/vit/train/test_train_options.cpp, which fails for a row it does not know).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "patchgrad/autograd/enum_names.h"
#include "patchgrad/autograd/optim/lr_schedule.h"
#include "patchgrad/autograd/precision.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/evaluation.h"
#include "patchgrad/vit/vision_transformer.h"

namespace patchgrad {

enum class OptimizerKind { Sgd, Adam, AdamW };
enum class AugmentKind { CropFlip, None };

// Each enum's names, as flags, checkpoints and --help spell them: one table per enum.
template <>
struct EnumNames<OptimizerKind> {
    static constexpr std::pair<OptimizerKind, const char*> table[] = {
        {OptimizerKind::Sgd, "sgd"}, {OptimizerKind::Adam, "adam"}, {OptimizerKind::AdamW, "adamw"}};
};
template <>
struct EnumNames<AugmentKind> {
    static constexpr std::pair<AugmentKind, const char*> table[] = {{AugmentKind::CropFlip, "crop-flip"},
                                                                    {AugmentKind::None, "none"}};
};

// A training run's settings; the CLI flag of each is in the table (train_options()).
// preset_options gives the named recipes; the defaults here are neutral, not a recipe.
struct TrainOptions {
    // ---- the recipe: fixed for the life of a run (a resume must use the same) ----
    std::string preset = "custom";
    ViTConfig config = vit_config("cifar-tiny");  // the model, drop_path and dropout included
    int64_t epochs = 1;
    int64_t batch = 128;
    OptimizerKind optimizer = OptimizerKind::AdamW;
    double lr = 1e-3;
    double weight_decay = 0;
    double momentum = 0.9;     // SGD only
    bool nesterov = false;     // SGD only
    double warmup_epochs = 0;  // linear warmup; fractional ones are rounded to whole steps, capped at the run
    ScheduleKind schedule = ScheduleKind::Cosine;  // Step: x0.1 after each third
    double min_lr = 0;                             // where cosine ends
    double label_smoothing = 0;
    double clip_grad = 0;  // max global gradient norm; 0 = no clipping
    AugmentKind augment = AugmentKind::CropFlip;
    std::string rand_augment = "none";  // timm's string, e.g. "rand-m9-n2", or "none"
    double erasing = 0;                 // random erasing probability
    double mixup = 0;                   // Beta(alpha, alpha) of mixup; 0 = off
    double cutmix = 0;                  // of cutmix; 0 = off (both on: half the batches each)
    double ema = 0;                     // decay of the weights' moving average, evaluated instead of them; 0 = off
    // The last epochs that train on every patch (patch dropout off, as in evaluation); 0 = none.
    int64_t full_patch_epochs = 0;
    TestTimeAugment tta = TestTimeAugment::None;  // what the evaluations show the model of each image
    int64_t validation = 5000;  // training images held out for the per-epoch evaluation; 0 = use the test set
    uint64_t seed = 0;
    // A weights file (last or best.safetensors of a run of the same model) that a new run
    // starts from instead of random weights, or "none". Fine-tuning: the optimizer, the
    // schedule and the epochs start anew; a resume reads its own checkpoint, never this file.
    std::string init = "none";

    // ---- how to run it: may differ between a run and its resume ----
    std::string data_dir = "data/cifar-10-batches-bin";
    std::string data_source = "default";  // where data_dir came from, for messages (resolve_data_dir)
    std::string out_dir = "runs/cifar-tiny";
    int64_t threads = 0;  // 0 = auto: the count choose_thread_count measures to pay here (thread_choice.h)
    // bf16: matrix products with bf16 inputs and float32 sums (precision.h). A running option like
    // the threads: it changes the speed and the rounding, not the recipe, and checkpoints stay float32.
    MatmulPrecision precision = MatmulPrecision::Fp32;
    bool resume = false;     // continue from out_dir/last.safetensors
    bool overwrite = false;  // out_dir may hold a run, which is deleted first (else it is refused)
    int64_t max_steps = 0;   // stop (and save) after this many optimizer steps of the run; 0 = no limit
    int64_t log_every = 0;   // steps between progress lines when not on a terminal; 0 = ~10 per epoch
};

// ---- the table -----------------------------------------------------------------------------

enum class OptionKind {
    Recipe,   // stored as train.<flag> in checkpoints; a resume must use the same
    Model,    // a field of TrainOptions::config: stored as config.<field>, compared by check_config
    Running,  // how to run it: may differ between a run and its resume
};

// Integer members whose text reads differently from a positive count (a plain int64_t*).
struct Count {
    int64_t* value;  // 0 or a positive integer ("--max-steps 0": no limit)
};
struct ThreadCount {
    int64_t* value;  // "auto" (0) or 1..kMaxThreads
};

// A pointer to a row's member; its type also says how the flag's text reads. real is float
// or double (autograd/real.h): the model's drop_path and dropout are one of the two.
using OptionField =
    std::variant<int64_t*, Count, ThreadCount, uint64_t*, double*, float*, bool*, std::string*, OptimizerKind*,
                 ScheduleKind*, AugmentKind*, MatmulPrecision*, Pool*, TestTimeAugment*>;

struct TrainOption {
    const char* flag;        // "weight-decay": --weight-decay, and train.weight-decay in checkpoints
    const char* value_name;  // "WD" in --help; "" for a switch (a bool member: the flag alone sets it)
    OptionKind kind;
    const char* help;  // --help's text; each '\n' starts a continuation line
    OptionField (*field)(TrainOptions& o);
    // What is wrong with the value in `o`, as the words after "--<flag> " ("must be positive,
    // got 0"), or "" when it is fine; null when every value its type holds is fine.
    std::string (*check)(const TrainOptions& o);
    // The value at which the log's recipe line leaves the option out, so that runs without a
    // newer option log as before; null: always shown. (A switch is left out when off.)
    const char* unlogged = nullptr;

    bool is_switch() const { return *value_name == '\0'; }
};

// Every option, in --help's order.
const std::vector<TrainOption>& train_options();
// The row of --<flag>, or null.
const TrainOption* find_train_option(const std::string& flag);

// The member's value as checkpoint metadata and the log write it ("0.001", "adamw", "true").
std::string option_text(const TrainOption& option, const TrainOptions& o);
// Sets the member from metadata text; throws std::invalid_argument "<where>: <key> '<text>'
// is not ..." (read_metadata_text's messages; for an enum, "is not sgd, adam or adamw").
void read_option_text(const TrainOption& option, TrainOptions& o, const std::string& text, const std::string& where,
                      const std::string& key);

// Whether epoch `epoch` (0-based) trains with the model's patch dropout: every epoch but the
// last --full-patch-epochs.
bool drops_patches_in(const TrainOptions& o, int64_t epoch);
// The model as the last --full-patch-epochs train it: `config` without patch dropout.
ViTConfig with_every_patch(ViTConfig config);
// The training compute of a run's first `epochs` epochs of `images_per_epoch` images, in TFLOP
// (training_tflop of vit/summary.h): each pass at patch dropout's cost, or at every patch's in
// the last --full-patch-epochs.
double run_training_tflop(const TrainOptions& o, double epochs, int64_t images_per_epoch);

// ---- presets, validation, the recipe in checkpoints -----------------------------------------

// The named recipes ("default", "quick"), each a list of assignments in train_options.cpp
// (kPresets; `patchgrad train --help` summarises them). config_name, when not empty, replaces
// the preset's model (its drop_path and dropout kept). Unknown names throw
// std::invalid_argument listing the known ones.
TrainOptions preset_options(const std::string& preset, const std::string& config_name = "");
std::vector<std::string> preset_names();

// Throws std::invalid_argument "train options: --<flag> ..." naming the first option that
// makes no sense: the model first (one that does not take 32x32 CIFAR-10 images, or does not
// fit in memory), then each row's check in table order (epochs < 1, lr <= 0, a bad RandAugment
// string, ...).
void validate(const TrainOptions& options);

// The recipe rows as the checkpoint's "train.<flag>" metadata, and back: a resume starts from
// the checkpoint's recipe (and its config), and check_recipe refuses one that changed.
Metadata recipe_metadata(const TrainOptions& options);
void apply_checkpoint_recipe(TrainOptions& options, const Checkpoint& checkpoint);
// One recipe option's text in a checkpoint: its train.<flag> entry or, for an option that older
// files lack, what they were trained with (--ema 0, --tta none). Throws naming the file when
// any other entry is missing.
const std::string& checkpoint_recipe_entry(const Checkpoint& checkpoint, const std::string& flag);
// "checkpoint <path>: --lr 0.001 in the checkpoint, 0.002 requested" for the first option
// that differs (or is missing from the checkpoint).
void check_recipe(const Checkpoint& checkpoint, const TrainOptions& options);
// The recipe as the flags that give it, for the log: " --preset quick --epochs 15 ... --seed 0"
// (an option at its row's `unlogged` value left out: switches such as --nesterov when off,
// --init when none).
std::string recipe_flags(const TrainOptions& options);
// The recipe as one JSON object, for other programs (vit/scripts/train_torch.py): every
// recipe and model row under its flag name, numbers as JSON numbers (written to read back
// exactly), switches as true/false, names as strings; and "config", the model's name.
std::string recipe_json(const TrainOptions& options);

// What the "precision:" line of the headers of `train`, `bench` and `eval` says: "fp32", or
// "bf16 matrix products, float32 elsewhere; " and the kernel's gemm_bf16_description().
std::string matmul_precision_description(MatmulPrecision precision);

// The options part of `patchgrad train --help`: "recipe (...):" then "running:", one entry
// per row; the preset entry lists every preset with a one-line summary.
std::string options_help();

}  // namespace patchgrad
