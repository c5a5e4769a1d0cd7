// `patchgrad train`: trains a ViT on CIFAR-10 (vit/train/trainer.h does the work; this file turns
// the command line into TrainOptions and Ctrl-C into a clean stop).
//
//   patchgrad train [--preset quick|default] [--config NAME] [--data DIR] [--epochs N] ...
//
// Where an option's value comes from, strongest first: the flag; on --resume the recipe
// stored in the checkpoint (so `patchgrad train --resume --out DIR` alone continues a run);
// the preset (default: "default"). A flag that contradicts the checkpoint's recipe is an
// error, because the resumed run could no longer match an uninterrupted one.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "datasets/cifar10.h"
#include "vit/cli/cli.h"
#include "vit/train/checkpoint.h"
#include "vit/train/trainer.h"

namespace patchgrad::cli {

namespace {

const std::vector<std::string> kValueFlags = {
    "--preset",  "--config",       "--dim",       "--depth",           "--heads",     "--mlp",          "--patch",
    "--data",    "--epochs",       "--batch",     "--optimizer",       "--lr",        "--weight-decay", "--momentum",
    "--warmup",  "--schedule",     "--min-lr",    "--label-smoothing", "--clip-grad", "--drop-path",    "--dropout",
    "--augment", "--rand-augment", "--erasing",   "--mixup",           "--cutmix",    "--validation",   "--seed",
    "--threads", "--out",          "--max-steps", "--log-every"};

void print_help() {
    const TrainOptions d = preset_options("default"), q = preset_options("quick");
    // "cifar-micro, 16 epochs, adamw lr 0.002, crop-flip": what --help says about a preset.
    const auto recipe_line = [](const TrainOptions& o) {
        std::ostringstream os;
        os << o.config.name << ", " << o.epochs << " epochs, " << o.optimizer << " lr " << o.lr << ", " << o.augment;
        if (o.rand_augment != "none") os << ", " << o.rand_augment;
        if (o.erasing > 0) os << ", erasing " << o.erasing;
        if (o.config.drop_path > 0) os << ", drop path " << o.config.drop_path;
        return os.str();
    };
    std::cout << "usage: patchgrad train [options]\n"
                 "\n"
                 "Trains a Vision Transformer on CIFAR-10. With no options it runs the default recipe. Progress\n"
                 "goes to stderr (a live bar on a terminal, a line every --log-every steps otherwise), one line\n"
                 "per epoch to stdout, and OUT/ gets metrics.csv, metrics.png, last.safetensors (+ the optimizer\n"
                 "state last.state.safetensors), best.safetensors and, at the end, results.json with the test\n"
                 "accuracy. Ctrl-C (or SIGTERM, SIGHUP) saves a checkpoint and exits; --resume continues bit for bit.\n"
                 "\n"
                 "recipe (defaults from the preset; on --resume from the checkpoint):\n"
                 "  --preset NAME          default: "
              << recipe_line(d) << "\n                         quick:   " << recipe_line(q)
              << "\n"
                 "  --config NAME          the model: cifar-micro, cifar-tiny or cifar-small (the preset's)\n"
                 "  --dim D, --depth L, --heads H, --mlp M, --patch P\n"
                 "                         override the model's hidden size, blocks, heads, MLP size, patch size\n"
                 "  --epochs N             epochs\n"
                 "  --batch B              images per optimizer step\n"
                 "  --optimizer NAME       sgd, adam or adamw\n"
                 "  --lr LR                peak learning rate\n"
                 "  --weight-decay WD      AdamW: decoupled; SGD/Adam: L2 (never on biases, norms, embeddings)\n"
                 "  --momentum M           SGD momentum (default 0.9); --nesterov for Nesterov momentum\n"
                 "  --warmup E             epochs of linear warmup, may be fractional\n"
                 "  --schedule NAME        cosine, step (x0.1 after each third of the run) or constant\n"
                 "  --min-lr LR            where cosine ends\n"
                 "  --label-smoothing E    in [0, 1)\n"
                 "  --clip-grad NORM       clip the global gradient norm (0 = off)\n"
                 "  --drop-path P          stochastic depth of the last block; --dropout P inside the blocks\n"
                 "  --augment NAME         crop-flip (4-pixel padded crop + flip) or none\n"
                 "  --rand-augment SPEC    timm's RandAugment string (rand-m9-n2, rand-m9-mstd0.5-inc1) or none\n"
                 "  --erasing P            random erasing probability (0 = off)\n"
                 "  --mixup ALPHA, --cutmix ALPHA   Beta(alpha, alpha) mixing (0 = off)\n"
                 "  --validation N         training images held out for the per-epoch evaluation (default 5000;\n"
                 "                         0 = evaluate on the test set each epoch)\n"
                 "  --seed S               seeds the model, the split, the batches and the augmentation\n"
                 "\n"
                 "running:\n"
                 "  --data DIR             CIFAR-10 binary files (else $PATCHGRAD_DATA, else "
              << kDefaultDataDir
              << ";\n"
                 "                         to get them: bash datasets/download_cifar10.sh)\n"
                 "  --out DIR              output directory (default: runs/<config>)\n"
                 "  --resume               continue from OUT/last.safetensors\n"
                 "  --overwrite            OUT may hold a run: delete its files and start anew (without it, a\n"
                 "                         run in OUT is refused, never replaced)\n"
                 "  --threads T            threads, or auto (the default: the fewest that run a sample of the\n"
                 "                         step fastest here, measured at start); the results are identical for any T\n"
                 "  --max-steps N          stop after N optimizer steps of the run, saving a checkpoint\n"
                 "  --log-every N          steps between progress lines when stderr is not a terminal\n"
                 "  -h, --help             show this help\n";
}

// Removes every "--name" from args; returns whether there was one. parse_flags only knows
// flags with values, and these two are plain switches.
bool take_switch(std::vector<std::string>& args, const std::string& name) {
    const auto end = std::remove(args.begin(), args.end(), name);
    const bool found = end != args.end();
    args.erase(end, args.end());
    return found;
}

double parse_number(const std::string& flag, const std::string& text) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
        throw UsageError(flag + " needs a number, got '" + text + "'");
    return value;
}

uint64_t parse_seed(const std::string& text) {
    try {
        return parse_uint64(text, "--seed", "the seed");
    } catch (const std::invalid_argument&) {
        throw UsageError("--seed needs a non-negative integer, got '" + text + "'");
    }
}

// The preset's options, replaced by the checkpoint's recipe on --resume.
TrainOptions base_options(const Flags& flags, bool resume) {
    auto flag = [&](const char* name) { return flags.values.count(name) ? flags.values.at(name) : std::string(); };
    if (!flag("--config").empty()) config_from_flag(flag("--config"));  // a UsageError listing the names
    TrainOptions o;
    try {
        o = preset_options(flag("--preset").empty() ? "default" : flag("--preset"), flag("--config"));
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    if (flags.values.count("--out") && flag("--out").empty())
        throw UsageError("--out needs a directory, got an empty value");
    o.out_dir = flag("--out").empty() ? "runs/" + o.config.name : flag("--out");
    const std::string last = (std::filesystem::path(o.out_dir) / "last.safetensors").string();
    if (!resume || !has_resume_point(last)) return o;  // train() reports a missing checkpoint
    apply_checkpoint_recipe(o, load_resume_point(last));
    // Named explicitly, they must match the checkpoint: put them back so check_recipe compares.
    if (!flag("--config").empty()) o.config.name = flag("--config");
    if (!flag("--preset").empty()) o.preset = flag("--preset");
    return o;
}

void apply_flags(TrainOptions& o, const Flags& flags) {
    auto given = [&](const char* name) { return flags.values.count(name) > 0; };
    auto value = [&](const char* name) { return flags.values.at(name); };
    for (const auto& [flag, field] : {std::pair<const char*, int64_t*>{"--dim", &o.config.dim},
                                      {"--depth", &o.config.depth},
                                      {"--heads", &o.config.heads},
                                      {"--mlp", &o.config.mlp_dim},
                                      {"--patch", &o.config.patch_size},
                                      {"--epochs", &o.epochs},
                                      {"--batch", &o.batch}})
        if (given(flag)) *field = parse_positive_int(flag, value(flag));
    if (given("--threads")) o.threads = parse_threads(value("--threads"));
    for (const auto& [flag, field] : {std::pair<const char*, int64_t*>{"--validation", &o.validation},
                                      {"--max-steps", &o.max_steps},
                                      {"--log-every", &o.log_every}})
        if (given(flag)) *field = parse_count(flag, value(flag));
    for (const auto& [flag, field] : {std::pair<const char*, double*>{"--lr", &o.lr},
                                      {"--weight-decay", &o.weight_decay},
                                      {"--momentum", &o.momentum},
                                      {"--warmup", &o.warmup_epochs},
                                      {"--min-lr", &o.min_lr},
                                      {"--label-smoothing", &o.label_smoothing},
                                      {"--clip-grad", &o.clip_grad},
                                      {"--erasing", &o.erasing},
                                      {"--mixup", &o.mixup},
                                      {"--cutmix", &o.cutmix}})
        if (given(flag)) *field = parse_number(flag, value(flag));
    for (const auto& [flag, field] :
         {std::pair<const char*, real*>{"--drop-path", &o.config.drop_path}, {"--dropout", &o.config.dropout}})
        if (given(flag)) *field = static_cast<real>(parse_number(flag, value(flag)));
    for (const auto& [flag, field] : {std::pair<const char*, std::string*>{"--optimizer", &o.optimizer},
                                      {"--schedule", &o.schedule},
                                      {"--augment", &o.augment},
                                      {"--rand-augment", &o.rand_augment}})
        if (given(flag)) *field = value(flag);
    if (given("--seed")) o.seed = parse_seed(value("--seed"));
    const DataDir data = resolve_data_dir(given("--data") ? value("--data") : "");
    o.data_dir = data.path;
    o.data_source = data.source;
}

}  // namespace

int train_command(const std::vector<std::string>& command_line) {
    std::vector<std::string> args = command_line;
    const bool resume = take_switch(args, "--resume");
    const bool overwrite = take_switch(args, "--overwrite");
    if (resume && overwrite) throw UsageError("--resume continues the run in --out, --overwrite replaces it: not both");
    const bool nesterov = take_switch(args, "--nesterov");
    const Flags flags = parse_flags(args, kValueFlags);
    if (flags.help) {
        print_help();
        return 0;
    }
    TrainOptions options = base_options(flags, resume);
    apply_flags(options, flags);
    if (nesterov) options.nesterov = true;
    options.resume = resume;
    options.overwrite = overwrite;
    try {
        validate(options);
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }

    const StopSignals signals;
    TrainOutput output;
    output.terminal = isatty(fileno(stderr)) != 0;
    output.stop_requested = [] { return stop_signal_received(); };
    const TrainResult result = train(options, output);
    return result.stop == StopReason::Interrupted ? 130 : 0;
}

}  // namespace patchgrad::cli
