// train_options.cpp — the table of training options, the presets, and what the table drives:
// validation, the recipe in checkpoints, the log's recipe line, --print-recipe and --help.
#include "patchgrad/vit/train/train_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/io/json.h"
#include "patchgrad/datasets/augment.h"
#include "patchgrad/vit/summary.h"

namespace patchgrad {

namespace {

// "" when `ok`, else "<requirement>, got <value>": the words after "--<flag> " of a check.
template <class T>
std::string unless(bool ok, const std::string& requirement, const T& value) {
    return ok ? "" : requirement + ", got " + metadata_text(value);
}

std::string rand_augment_problem(const std::string& spec) {
    if (spec == "none") return "";
    try {
        RandAugment::parse(spec).validate();
    } catch (const std::invalid_argument& e) {
        return "'" + spec + "': " + e.what();
    }
    return "";
}

// One row per option: flag, value name and kind, --help's text, the member, the check.
const std::vector<TrainOption> kOptions = {
    // ---- the recipe ----
    {"preset", "NAME", OptionKind::Recipe,
     "the recipe the other options start from:", [](TrainOptions& o) -> OptionField { return &o.preset; }, nullptr},
    {"config", "NAME", OptionKind::Model, "the model: cifar-micro, cifar-tiny or cifar-small (the preset's)",
     [](TrainOptions& o) -> OptionField { return &o.config.name; }, nullptr},
    {"dim", "D", OptionKind::Model, "override the model's hidden size",
     [](TrainOptions& o) -> OptionField { return &o.config.dim; }, nullptr},
    {"depth", "L", OptionKind::Model, "override the model's blocks",
     [](TrainOptions& o) -> OptionField { return &o.config.depth; }, nullptr},
    {"heads", "H", OptionKind::Model, "override the model's attention heads",
     [](TrainOptions& o) -> OptionField { return &o.config.heads; }, nullptr},
    {"mlp", "M", OptionKind::Model, "override the model's MLP size",
     [](TrainOptions& o) -> OptionField { return &o.config.mlp_dim; }, nullptr},
    {"patch", "P", OptionKind::Model, "override the model's patch size",
     [](TrainOptions& o) -> OptionField { return &o.config.patch_size; }, nullptr},
    {"epochs", "N", OptionKind::Recipe, "epochs", [](TrainOptions& o) -> OptionField { return &o.epochs; },
     [](const TrainOptions& o) { return unless(o.epochs >= 1, "must be at least 1", o.epochs); }},
    {"batch", "B", OptionKind::Recipe, "images per optimizer step",
     [](TrainOptions& o) -> OptionField { return &o.batch; },
     [](const TrainOptions& o) { return unless(o.batch >= 1, "must be at least 1", o.batch); }},
    {"optimizer", "NAME", OptionKind::Recipe, "sgd, adam or adamw",
     [](TrainOptions& o) -> OptionField { return &o.optimizer; }, nullptr},
    {"lr", "LR", OptionKind::Recipe, "peak learning rate", [](TrainOptions& o) -> OptionField { return &o.lr; },
     [](const TrainOptions& o) { return unless(o.lr > 0 && std::isfinite(o.lr), "must be positive", o.lr); }},
    {"weight-decay", "WD", OptionKind::Recipe, "AdamW: decoupled; SGD/Adam: L2 (never on biases, norms, embeddings)",
     [](TrainOptions& o) -> OptionField { return &o.weight_decay; },
     [](const TrainOptions& o) { return unless(o.weight_decay >= 0, "must be >= 0", o.weight_decay); }},
    {"momentum", "M", OptionKind::Recipe, "SGD momentum (default 0.9)",
     [](TrainOptions& o) -> OptionField { return &o.momentum; },
     [](const TrainOptions& o) { return unless(o.momentum >= 0 && o.momentum < 1, "must be in [0, 1)", o.momentum); }},
    {"nesterov", "", OptionKind::Recipe, "SGD with Nesterov momentum",
     [](TrainOptions& o) -> OptionField { return &o.nesterov; },
     [](const TrainOptions& o) {
         // Accepted once, and then silently ignored by AdamW.
         return !o.nesterov || o.optimizer == OptimizerKind::Sgd
                    ? ""
                    : "is for --optimizer sgd, not " + enum_name(o.optimizer);
     }},
    // More warmup than epochs is allowed (a short trial of a recipe): the schedule caps it.
    {"warmup", "E", OptionKind::Recipe, "epochs of linear warmup, may be fractional",
     [](TrainOptions& o) -> OptionField { return &o.warmup_epochs; },
     [](const TrainOptions& o) {
         return unless(o.warmup_epochs >= 0 && std::isfinite(o.warmup_epochs), "must be >= 0", o.warmup_epochs);
     }},
    {"schedule", "NAME", OptionKind::Recipe, "cosine, step (x0.1 after each third of the run) or constant",
     [](TrainOptions& o) -> OptionField { return &o.schedule; }, nullptr},
    {"min-lr", "LR", OptionKind::Recipe, "where cosine ends", [](TrainOptions& o) -> OptionField { return &o.min_lr; },
     [](const TrainOptions& o) {
         return unless(o.min_lr >= 0 && o.min_lr <= o.lr, "must be in [0, lr = " + exact_text(o.lr) + "]", o.min_lr);
     }},
    {"label-smoothing", "E", OptionKind::Recipe, "in [0, 1)",
     [](TrainOptions& o) -> OptionField { return &o.label_smoothing; },
     [](const TrainOptions& o) {
         return unless(o.label_smoothing >= 0 && o.label_smoothing < 1, "must be in [0, 1)", o.label_smoothing);
     }},
    {"clip-grad", "NORM", OptionKind::Recipe, "clip the global gradient norm (0 = off)",
     [](TrainOptions& o) -> OptionField { return &o.clip_grad; },
     [](const TrainOptions& o) { return unless(o.clip_grad >= 0, "must be >= 0 (0 = off)", o.clip_grad); }},
    {"pool", "NAME", OptionKind::Model,
     "cls (the class token, paper eq. 4), mean (of all tokens) or seq (their\nmean weighted by a learned "
     "softmax, Compact Transformers' sequence pooling)",
     [](TrainOptions& o) -> OptionField { return &o.config.pool; }, nullptr},
    {"patch-dropout", "P", OptionKind::Model,
     "fraction of patch tokens each training image drops after the position\nencoding (PatchDropout; "
     "0 = off): cheaper steps, every token seen at evaluation",
     [](TrainOptions& o) -> OptionField { return &o.config.patch_dropout; }, nullptr},
    {"full-patch-epochs", "N", OptionKind::Recipe,
     "the last N epochs train on every patch, patch dropout off (as at evaluation;\n"
     "FLIP's unmasked tuning), each pass at full cost",
     [](TrainOptions& o) -> OptionField { return Count{&o.full_patch_epochs}; },
     [](const TrainOptions& o) {
         if (o.full_patch_epochs == 0) return std::string();
         if (o.config.patch_dropout <= 0) return std::string("is for a run with --patch-dropout above 0");
         return unless(o.full_patch_epochs > 0 && o.full_patch_epochs <= o.epochs,
                       "must be in [0, epochs = " + std::to_string(o.epochs) + "]", o.full_patch_epochs);
     }},
    {"lsa", "", OptionKind::Model,
     "Locality Self-Attention: a learned softmax temperature per head, and no\ntoken attends to itself (Lee et al. "
     "2021)",
     [](TrainOptions& o) -> OptionField { return &o.config.lsa; }, nullptr},
    {"drop-path", "P", OptionKind::Model, "stochastic depth of the last block",
     [](TrainOptions& o) -> OptionField { return &o.config.drop_path; }, nullptr},
    {"dropout", "P", OptionKind::Model, "dropout inside the blocks",
     [](TrainOptions& o) -> OptionField { return &o.config.dropout; }, nullptr},
    {"augment", "NAME", OptionKind::Recipe, "crop-flip (4-pixel padded crop + flip) or none",
     [](TrainOptions& o) -> OptionField { return &o.augment; }, nullptr},
    {"rand-augment", "SPEC", OptionKind::Recipe, "timm's RandAugment string (rand-m9-n2, rand-m9-mstd0.5-inc1) or none",
     [](TrainOptions& o) -> OptionField { return &o.rand_augment; },
     [](const TrainOptions& o) { return rand_augment_problem(o.rand_augment); }},
    {"erasing", "P", OptionKind::Recipe, "random erasing probability (0 = off)",
     [](TrainOptions& o) -> OptionField { return &o.erasing; },
     [](const TrainOptions& o) {
         return unless(o.erasing >= 0 && o.erasing <= 1, "must be a probability in [0, 1]", o.erasing);
     }},
    {"mixup", "ALPHA", OptionKind::Recipe, "mixup's Beta(alpha, alpha) (0 = off)",
     [](TrainOptions& o) -> OptionField { return &o.mixup; },
     [](const TrainOptions& o) { return unless(o.mixup >= 0, "must be >= 0 (0 = off)", o.mixup); }},
    {"cutmix", "ALPHA", OptionKind::Recipe, "cutmix's Beta(alpha, alpha) (0 = off; with mixup: half the batches each)",
     [](TrainOptions& o) -> OptionField { return &o.cutmix; },
     [](const TrainOptions& o) { return unless(o.cutmix >= 0, "must be >= 0 (0 = off)", o.cutmix); }},
    {"ema", "DECAY", OptionKind::Recipe,
     "evaluate and save a moving average of the weights, d = min(DECAY,\n(1+t)/(10+t)) at step t (0 = off)",
     [](TrainOptions& o) -> OptionField { return &o.ema; },
     [](const TrainOptions& o) { return unless(o.ema >= 0 && o.ema < 1, "must be in [0, 1) (0 = off)", o.ema); }},
    {"tta", "NAME", OptionKind::Recipe,
     "test-time augmentation of every evaluation: none, or flip (mean logits\nof the image and its mirror image)",
     [](TrainOptions& o) -> OptionField { return &o.tta; }, nullptr},
    {"validation", "N", OptionKind::Recipe,
     "training images held out for the per-epoch evaluation (default 5000;\n0 = evaluate on the test set each epoch)",
     [](TrainOptions& o) -> OptionField { return Count{&o.validation}; },
     [](const TrainOptions& o) {
         return unless(o.validation >= 0 && o.validation % 10 == 0, "must be 0 or a multiple of the 10 classes",
                       o.validation);
     }},
    {"seed", "S", OptionKind::Recipe, "seeds the model, the split, the batches and the augmentation",
     [](TrainOptions& o) -> OptionField { return &o.seed; }, nullptr},
    {"init", "FILE", OptionKind::Recipe,
     "start from the weights of FILE (last or best.safetensors of a run of the\nsame model; its dropouts may differ) "
     "instead of random ones; the\noptimizer, schedule and epochs start anew: fine-tuning (default none)",
     [](TrainOptions& o) -> OptionField { return &o.init; },
     [](const TrainOptions& o) { return o.init.empty() ? std::string("must name a weights file, or none") : ""; },
     "none"},

    // ---- running ----
    {"data", "DIR", OptionKind::Running,
     "CIFAR-10 binary files (else $PATCHGRAD_DATA, else data/cifar-10-batches-bin;\nto get them: bash "
     "datasets/scripts/download_cifar10.sh)",
     [](TrainOptions& o) -> OptionField { return &o.data_dir; }, nullptr},
    {"out", "DIR", OptionKind::Running, "output directory (default: runs/<config>)",
     [](TrainOptions& o) -> OptionField { return &o.out_dir; },
     [](const TrainOptions& o) { return o.out_dir.empty() ? std::string("must not be empty") : ""; }},
    {"resume", "", OptionKind::Running, "continue from OUT/last.safetensors",
     [](TrainOptions& o) -> OptionField { return &o.resume; }, nullptr},
    {"overwrite", "", OptionKind::Running,
     "OUT may hold a run: delete its files and start anew (without it, a\nrun in OUT is refused, never replaced)",
     [](TrainOptions& o) -> OptionField { return &o.overwrite; }, nullptr},
    {"threads", "T", OptionKind::Running,
     "threads, or auto (the default: the fewest that run a sample of the\nstep fastest here, measured at start); the "
     "results are identical for any T",
     [](TrainOptions& o) -> OptionField { return ThreadCount{&o.threads}; },
     [](const TrainOptions& o) {
         return unless(o.threads >= 0 && o.threads <= kMaxThreads,
                       "must be auto (0) or in [1, " + std::to_string(kMaxThreads) + "]", o.threads);
     }},
    {"precision", "P", OptionKind::Running,
     "fp32 (the default) or bf16: matrix products with bf16 inputs and float32\nsums, everything else in float32 "
     "(on a CPU with AMX, attention's per-head\nproducts too); faster only where the CPU multiplies bf16 faster than\n"
     "float32 (chapter 12; with a native kernel the header says how a sample\nof the step compared with float32 here)",
     [](TrainOptions& o) -> OptionField { return &o.precision; }, nullptr},
    {"max-steps", "N", OptionKind::Running, "stop after N optimizer steps of the run, saving a checkpoint",
     [](TrainOptions& o) -> OptionField { return Count{&o.max_steps}; },
     [](const TrainOptions& o) { return unless(o.max_steps >= 0, "must be >= 0 (0 = no limit)", o.max_steps); }},
    {"log-every", "N", OptionKind::Running, "steps between progress lines when stderr is not a terminal",
     [](TrainOptions& o) -> OptionField { return Count{&o.log_every}; },
     [](const TrainOptions& o) { return unless(o.log_every >= 0, "must be >= 0", o.log_every); }},
};

// Calls f with a pointer to the option's member in `o`, Count and ThreadCount unwrapped to
// their int64_t.
template <class F>
auto visit_member(const TrainOption& option, TrainOptions& o, F&& f) {
    return std::visit(
        [&](auto field) {
            if constexpr (std::is_same_v<decltype(field), Count> || std::is_same_v<decltype(field), ThreadCount>)
                return f(field.value);
            else
                return f(field);
        },
        option.field(o));
}

// The same for reading: the accessor hands out a pointer for setting too, which `f` only
// reads through.
template <class F>
auto visit_member(const TrainOption& option, const TrainOptions& o, F&& f) {
    return visit_member(option, const_cast<TrainOptions&>(o), [&](auto* value) {
        const auto* read_only = value;
        return f(read_only);
    });
}

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

}  // namespace

const std::vector<TrainOption>& train_options() { return kOptions; }

const TrainOption* find_train_option(const std::string& flag) {
    for (const TrainOption& option : kOptions)
        if (flag == option.flag) return &option;
    return nullptr;
}

std::string option_text(const TrainOption& option, const TrainOptions& o) {
    return visit_member(option, o, [](const auto* value) { return metadata_text(*value); });
}

void read_option_text(const TrainOption& option, TrainOptions& o, const std::string& text, const std::string& where,
                      const std::string& key) {
    visit_member(option, o, [&](auto* value) { read_metadata_text(text, where, key, *value); });
}

// ---- presets -------------------------------------------------------------------------------

namespace {

// [snippet:presets]
// The named recipes: a model, and the options that differ from TrainOptions' neutral
// defaults (no drop path, no dropout, no regularisation), assigned by name.
struct Preset {
    const char* name;
    const char* config;
    void (*recipe)(TrainOptions& o);
};

// What the recipes share: AdamW with decoupled weight decay, a cosine schedule down to 1e-5
// after a linear warmup, label smoothing, 4-pixel padded crops with flips; and the levers that
// buy more epochs within a budget (chapter 10): half the patches dropped in training
// (three quarters in the long one), sequence pooling, flips at evaluation.
void small_vit_recipe(TrainOptions& o) {
    o.batch = 128;
    o.optimizer = OptimizerKind::AdamW;
    o.weight_decay = 0.05;
    o.schedule = ScheduleKind::Cosine;
    o.min_lr = 1e-5;
    o.label_smoothing = 0.1;
    o.augment = AugmentKind::CropFlip;
    o.config.pool = Pool::Seq;
    o.config.patch_dropout = static_cast<real>(0.5);
    o.tta = TestTimeAugment::Flip;
}

const Preset kPresets[] = {
    // 766 TFLOP (49 epochs of cifar-tiny's 0.348 GFLOP per image pass): patch dropout 0.5
    // makes a pass 0.168 GFLOP, so the budget holds 101 epochs; sequence pooling and flips as
    // in the quick preset, with erasing and drop path for the larger model (chapter 10).
    {"default", "cifar-tiny",
     [](TrainOptions& o) {
         small_vit_recipe(o);
         o.epochs = 101;
         o.lr = 1e-3;
         o.warmup_epochs = 3;
         o.erasing = 0.25;
         o.config.drop_path = static_cast<real>(0.1);
     }},
    // 98 TFLOP (16 epochs of cifar-micro's 0.136 GFLOP per image pass): patch dropout 0.5 makes
    // a pass 0.065 GFLOP, so the budget holds 33 epochs; sequence pooling reads the prediction
    // from every token (chapter 10 compares the choices).
    {"quick", "cifar-micro",
     [](TrainOptions& o) {
         small_vit_recipe(o);
         o.epochs = 33;
         o.lr = 2e-3;
         o.warmup_epochs = 1;
     }},
    // An overnight budget, about 1777 TFLOP: cifar-small (1.8 M parameters) with patch dropout
    // 0.75 (0.188 GFLOP per pass) for 204 epochs, the last 2 on every patch (each costing about 4
    // others) as a model trained on a quarter of its patches gains from whole images; mixup and
    // cutmix as DeiT's, the regularisation of published pure ViTs above 90% on CIFAR-10 (chapter 10).
    {"long", "cifar-small",
     [](TrainOptions& o) {
         small_vit_recipe(o);
         o.config.patch_dropout = static_cast<real>(0.75);
         o.epochs = 204;
         o.full_patch_epochs = 2;
         o.lr = 1e-3;
         o.warmup_epochs = 5;
         o.mixup = 0.8;
         o.cutmix = 1.0;
         o.config.drop_path = static_cast<real>(0.1);
     }},
};
// [/snippet:presets]

}  // namespace

std::vector<std::string> preset_names() {
    std::vector<std::string> names;
    for (const Preset& p : kPresets) names.push_back(p.name);
    return names;
}

TrainOptions preset_options(const std::string& preset, const std::string& config_name) {
    const auto p =
        std::find_if(std::begin(kPresets), std::end(kPresets), [&](const Preset& row) { return row.name == preset; });
    if (p == std::end(kPresets))
        fail("train options: unknown preset '", preset, "' (known: ", joined(preset_names()), ")");
    TrainOptions o;
    o.preset = p->name;
    o.config = vit_config(config_name.empty() ? p->config : config_name);
    o.config.drop_path = 0;
    o.config.dropout = 0;
    p->recipe(o);  // after the model is chosen, so that its pooling and patch dropout apply to any
    o.out_dir = "runs/" + o.config.name;
    return o;
}

// ---- validation ----------------------------------------------------------------------------

namespace {

void validate_model(const ViTConfig& c) {
    check(c.image_height == 32 && c.image_width == 32 && c.channels == 3 && c.num_classes == 10,
          "train options: the model takes ", c.channels, "x", c.image_height, "x", c.image_width, " images in ",
          c.num_classes, " classes; CIFAR-10 has 3x32x32 in 10 (use a cifar-* --config)");
    try {
        // Validates the config, then: the weights, their gradients and the optimizer's two
        // moments (AdamW and Adam; SGD keeps fewer) must fit in memory, before any is allocated.
        check_memory(c, 4);
    } catch (const std::invalid_argument& e) {
        fail("train options: ", e.what());
    }
}

}  // namespace

void validate(const TrainOptions& o) {
    validate_model(o.config);
    for (const TrainOption& option : kOptions) {
        const std::string problem = option.check ? option.check(o) : "";
        check(problem.empty(), "train options: --", option.flag, " ", problem);
    }
}

// ---- the patch dropout schedule ------------------------------------------------------------

bool drops_patches_in(const TrainOptions& o, int64_t epoch) {
    return o.config.patch_dropout > 0 && epoch < o.epochs - o.full_patch_epochs;
}

ViTConfig with_every_patch(ViTConfig config) {
    config.patch_dropout = 0;
    return config;
}

double run_training_tflop(const TrainOptions& o, double epochs, int64_t images_per_epoch) {
    const double dropping = std::min(epochs, double(o.epochs - o.full_patch_epochs));
    return training_tflop(o.config, dropping * double(images_per_epoch)) +
           training_tflop(with_every_patch(o.config), (epochs - dropping) * double(images_per_epoch));
}

// ---- the recipe in checkpoints -------------------------------------------------------------

const std::string& checkpoint_recipe_entry(const Checkpoint& checkpoint, const std::string& flag) {
    // Recipe options added since 0.9.0, and what a checkpoint written without them was trained with.
    static const Metadata kAddedSince090 = {
        {"ema", "0"}, {"tta", "none"}, {"init", "none"}, {"full-patch-epochs", "0"}};
    return metadata_entry(checkpoint.options, flag, "checkpoint " + checkpoint.path, "train.", kAddedSince090);
}

std::string matmul_precision_description(MatmulPrecision precision) {
    return precision == MatmulPrecision::Fp32 ? "fp32"
                                              : "bf16 matrix products, float32 elsewhere; " + gemm_bf16_description();
}

std::string recipe_flags(const TrainOptions& options) {
    std::string flags;
    for (const TrainOption& option : kOptions) {
        if (option.kind != OptionKind::Recipe) continue;
        const std::string text = option_text(option, options);
        const char* unlogged = option.is_switch() ? "false" : option.unlogged;
        if (unlogged && text == unlogged) continue;
        flags += std::string(" --") + option.flag + (option.is_switch() ? "" : " " + text);
    }
    return flags;
}

Metadata recipe_metadata(const TrainOptions& options) {
    Metadata out;
    for (const TrainOption& option : kOptions)
        if (option.kind == OptionKind::Recipe) out[option.flag] = option_text(option, options);
    return out;
}

void apply_checkpoint_recipe(TrainOptions& options, const Checkpoint& checkpoint) {
    options.config = checkpoint.config;
    const std::string where = "checkpoint " + checkpoint.path;
    for (const TrainOption& option : kOptions)
        if (option.kind == OptionKind::Recipe)
            read_option_text(option, options, checkpoint_recipe_entry(checkpoint, option.flag), where,
                             std::string("train.") + option.flag);
}

void check_recipe(const Checkpoint& checkpoint, const TrainOptions& options) {
    for (const TrainOption& option : kOptions) {
        if (option.kind != OptionKind::Recipe) continue;
        const std::string& saved = checkpoint_recipe_entry(checkpoint, option.flag);
        const std::string wanted = valid_utf8(option_text(option, options));  // as the checkpoint holds it
        check(saved == wanted, "checkpoint ", checkpoint.path, ": --", option.flag, " ", saved, " in the checkpoint, ",
              wanted, " requested (a resumed run keeps the recipe it started with)");
    }
}

std::string recipe_json(const TrainOptions& options) {
    std::string json = "{";
    for (const TrainOption& option : kOptions) {
        if (option.kind == OptionKind::Running) continue;
        const std::string text = option_text(option, options);
        const bool is_name = visit_member(option, options, [](const auto* value) {
            using T = std::remove_cv_t<std::remove_pointer_t<decltype(value)>>;
            return std::is_enum_v<T> || std::is_same_v<T, std::string>;
        });
        json += std::string(json.size() == 1 ? "\n  " : ",\n  ") + json_string(option.flag) + ": " +
                (is_name ? json_string(text) : text);
    }
    return json + "\n}\n";
}

// ---- --help --------------------------------------------------------------------------------

namespace {

// "cifar-micro, 16 epochs, adamw lr 0.002, crop-flip": what --help says about a preset.
std::string preset_summary(const TrainOptions& o) {
    std::ostringstream os;
    os << o.config.name << ", " << o.epochs << " epochs, " << enum_name(o.optimizer) << " lr " << o.lr << ", "
       << enum_name(o.augment);
    if (o.rand_augment != "none") os << ", " << o.rand_augment;
    if (o.mixup > 0) os << ", mixup " << o.mixup;
    if (o.cutmix > 0) os << ", cutmix " << o.cutmix;
    if (o.erasing > 0) os << ", erasing " << o.erasing;
    if (o.config.drop_path > 0) os << ", drop path " << o.config.drop_path;
    if (o.config.pool != Pool::Cls) os << ", " << enum_name(o.config.pool) << " pool";
    if (o.config.patch_dropout > 0) {
        os << ", patch dropout " << o.config.patch_dropout;
        if (o.full_patch_epochs > 0) os << " (every patch in the last " << o.full_patch_epochs << ")";
    }
    if (o.config.lsa) os << ", lsa";
    if (o.ema > 0) os << ", ema " << o.ema;
    if (o.tta != TestTimeAugment::None) os << ", tta " << enum_name(o.tta);
    return os.str();
}

// "  --lr LR                " then the help, its continuation lines indented as far.
std::string help_entry(const std::string& name, const std::string& help) {
    char head[64];
    std::snprintf(head, sizeof head, "  %-22s ", name.c_str());
    std::string out = head;
    for (const char ch : help) out += ch == '\n' ? "\n" + std::string(25, ' ') : std::string(1, ch);
    return out + "\n";
}

}  // namespace

std::string options_help() {
    std::string out = "recipe (defaults from the preset; on --resume from the checkpoint):\n";
    bool running = false;
    for (const TrainOption& option : kOptions) {
        if (option.kind == OptionKind::Running && !running) {
            out += "\nrunning:\n";
            running = true;
        }
        std::string help = option.help;
        if (option.flag == std::string("preset"))
            for (const std::string& name : preset_names()) {
                const std::string label = name + ":";
                help += "\n" + label + std::string(label.size() < 9 ? 9 - label.size() : 1, ' ') +
                        preset_summary(preset_options(name));
            }
        out += help_entry(std::string("--") + option.flag + (*option.value_name ? " " : "") + option.value_name, help);
    }
    return out;
}

}  // namespace patchgrad
