// `patchgrad train`: trains a ViT on CIFAR-10 (vit/train/trainer.h does the work; this file turns
// the command line into TrainOptions and Ctrl-C into a clean stop). The flags are the rows of
// the option table (vit/train/train_options.h), read by cli.cpp's parse_train_flags and
// apply_train_flags; only --preset, --config, --out (base_options) and --data (apply_flags)
// need more than setting their member.
//
//   patchgrad train [--preset quick|default] [--config NAME] [--data DIR] [--epochs N] ...
//   patchgrad train --preset quick --print-recipe     the recipe as JSON, nothing trained
//
// Where an option's value comes from, strongest first: the flag; on --resume the recipe
// stored in the checkpoint (so `patchgrad train --resume --out DIR` alone continues a run);
// the preset (default: "default"). A flag that contradicts the checkpoint's recipe is an
// error, because the resumed run could no longer match an uninterrupted one.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "patchgrad/autograd/io/json.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/trainer.h"

namespace patchgrad::cli {

namespace {

void print_help() {
    std::cout << "usage: patchgrad train [options]\n"
                 "\n"
                 "Trains a Vision Transformer on CIFAR-10. With no options it runs the default recipe. Progress\n"
                 "goes to stderr (a live bar on a terminal, a line every --log-every steps otherwise), one line\n"
                 "per epoch to stdout, and OUT/ gets metrics.csv, metrics.png, last.safetensors (+ the optimizer\n"
                 "state last.state.safetensors), best.safetensors and, at the end, results.json with the test\n"
                 "accuracy. Ctrl-C (or SIGTERM, SIGHUP) saves a checkpoint and exits (a second Ctrl-C exits at\n"
                 "once); --resume continues bit for bit. A save whose weights are not finite is never written:\n"
                 "the run stops with an error and the last save stays. While a run goes on, OUT is locked\n"
                 "(OUT/.patchgrad.lock): a second run into it is refused, naming the first's process id.\n"
                 "\n"
              << options_help()
              << "  --print-recipe         print the recipe as JSON and exit (vit/scripts/train_torch.py reads it)\n"
                 "  --print-metadata       print, as JSON, the metadata this recipe's checkpoints carry (config.*,\n"
                 "                         train.*; the training position aside) and exit (train_torch.py writes it)\n"
                 "  -h, --help             show this help\n";
}

// The preset's options, replaced by the checkpoint's recipe on --resume.
TrainOptions base_options(const Flags& flags, bool resume) {
    const std::string config = flags.value_or("--config", ""), preset = flags.value_or("--preset", ""),
                      out = flags.value_or("--out", "");
    if (!config.empty()) config_from_flag(config);  // a UsageError listing the names
    TrainOptions o;
    try {
        o = preset_options(preset.empty() ? "default" : preset, config);
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    if (flags.given("--out") && out.empty()) throw UsageError("--out needs a directory, got an empty value");
    o.out_dir = out.empty() ? "runs/" + o.config.name : out;
    const std::string last = (std::filesystem::path(o.out_dir) / "last.safetensors").string();
    if (!resume || !has_resume_point(last)) return o;  // train() reports a missing checkpoint
    apply_checkpoint_recipe(o, load_resume_point(last));
    // Named explicitly, they must match the checkpoint: put them back so check_recipe compares.
    if (!config.empty()) o.config.name = config;
    if (!preset.empty()) o.preset = preset;
    return o;
}

void apply_flags(TrainOptions& o, const Flags& flags) {
    apply_train_flags(o, flags);
    const DataDir dir = data_dir_from_flags(flags);
    o.data_dir = dir.path;
    o.data_source = dir.source;
}

}  // namespace

int train_command(const std::vector<std::string>& command_line) {
    const Flags flags = parse_train_flags(command_line, {"--print-recipe", "--print-metadata"});
    const bool resume = flags.given("--resume");
    if (resume && flags.given("--overwrite"))
        throw UsageError("--resume continues the run in --out, --overwrite replaces it: not both");
    if (flags.help) {
        print_help();
        return 0;
    }
    TrainOptions options = base_options(flags, resume);
    apply_flags(options, flags);
    try {
        validate(options);
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    if (flags.given("--print-recipe")) {
        std::cout << recipe_json(options);
        return 0;
    }
    if (flags.given("--print-metadata")) {
        std::string json = "{";  // (a run adds train.data, its data folder, when it saves)
        for (const auto& [key, value] : checkpoint_metadata(options.config, recipe_metadata(options)))
            json += std::string(json.size() == 1 ? "\n  " : ",\n  ") + json_string(key) + ": " + json_string(value);
        std::cout << json << "\n}\n";
        return 0;
    }

    const StopSignals signals;
    TrainOutput output;
    output.terminal = isatty(fileno(stderr)) != 0;
    output.stop_requested = [] { return stop_signal_received(); };
    const TrainResult result = train(options, output);
    return result.stop == StopReason::Interrupted ? 130 : 0;
}

}  // namespace patchgrad::cli
