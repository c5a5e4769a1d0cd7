// test_train_options.cpp — the option table (vit/train/train_options.h) and what it drives:
// every row is in --help, reads from the command line, is checked with its own message, and
// round-trips through a checkpoint's recipe; the presets; --print-recipe's JSON; and a recipe
// written by the code before the table still resumes.
//
// Adding an option: its row in train_options.cpp, and its good value (and, when the row has a
// check, a bad one) in kGood / kBad below: the first test fails for a row missing there.
#include <algorithm>
#include <set>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/optim/lr_schedule.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/summary.h"
#include "test_util.h"
#include "vit/trainer_test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {

// A valid value for every row, unlike the quick preset's, all valid together.
const std::vector<std::pair<std::string, std::string>> kGood = {
    {"preset", "custom"},
    {"config", "cifar-small"},
    {"dim", "32"},
    {"depth", "2"},
    {"heads", "2"},
    {"mlp", "64"},
    {"patch", "8"},
    {"epochs", "3"},
    {"batch", "64"},
    {"optimizer", "sgd"},
    {"lr", "0.01"},
    {"weight-decay", "0.1"},
    {"momentum", "0.5"},
    {"nesterov", "true"},
    {"warmup", "0.5"},
    {"schedule", "step"},
    {"min-lr", "0.001"},
    {"label-smoothing", "0.2"},
    {"clip-grad", "1"},
    {"pool", "mean"},
    {"patch-dropout", "0.375"},
    {"full-patch-epochs", "1"},
    {"lsa", "true"},
    {"drop-path", "0.25"},
    {"dropout", "0.125"},
    {"augment", "none"},
    {"rand-augment", "rand-m9-n2"},
    {"erasing", "0.5"},
    {"mixup", "0.2"},
    {"cutmix", "0.3"},
    {"ema", "0.99"},
    {"tta", "flip"},
    {"validation", "100"},
    {"seed", "42"},
    {"init", "runs/earlier/best.safetensors"},
    {"data", "some/dir"},
    {"out", "runs/x"},
    {"resume", "true"},
    {"overwrite", "true"},
    {"threads", "2"},
    {"precision", "bf16"},
    {"max-steps", "7"},
    {"log-every", "3"},
};

// Values (as checkpoint metadata text) that validate() refuses, set in order on the good
// options, and the message: one for every row with a check, the row last.
struct Bad {
    std::vector<std::pair<std::string, std::string>> settings;
    std::string message;
};
const std::vector<Bad> kBad = {
    {{{"epochs", "0"}}, "--epochs must be at least 1, got 0"},
    {{{"batch", "0"}}, "--batch must be at least 1, got 0"},
    {{{"lr", "0"}}, "--lr must be positive, got 0"},
    {{{"weight-decay", "-1"}}, "--weight-decay must be >= 0, got -1"},
    {{{"momentum", "1"}}, "--momentum must be in [0, 1), got 1"},
    {{{"optimizer", "adam"}, {"nesterov", "true"}}, "--nesterov is for --optimizer sgd, not adam"},
    {{{"warmup", "-1"}}, "--warmup must be >= 0, got -1"},
    {{{"min-lr", "1"}}, "--min-lr must be in [0, lr = 0.01], got 1"},
    {{{"label-smoothing", "1"}}, "--label-smoothing must be in [0, 1), got 1"},
    {{{"full-patch-epochs", "4"}}, "--full-patch-epochs must be in [0, epochs = 3], got 4"},
    {{{"clip-grad", "-1"}}, "--clip-grad must be >= 0 (0 = off), got -1"},
    {{{"rand-augment", "rand-q3"}}, "--rand-augment 'rand-q3': RandAugment: cannot read 'q3'"},
    {{{"erasing", "2"}}, "--erasing must be a probability in [0, 1], got 2"},
    {{{"mixup", "-1"}}, "--mixup must be >= 0 (0 = off), got -1"},
    {{{"cutmix", "-1"}}, "--cutmix must be >= 0 (0 = off), got -1"},
    {{{"ema", "1"}}, "--ema must be in [0, 1) (0 = off), got 1"},
    {{{"validation", "15"}}, "--validation must be 0 or a multiple of the 10 classes, got 15"},
    {{{"init", ""}}, "--init must name a weights file, or none"},
    {{{"out", ""}}, "--out must not be empty"},
    {{{"threads", std::to_string(kMaxThreads + 1)}},
     "--threads must be auto (0) or in [1, " + std::to_string(kMaxThreads) + "], got " +
         std::to_string(kMaxThreads + 1)},
    {{{"max-steps", "-1"}}, "--max-steps must be >= 0 (0 = no limit), got -1"},
    {{{"log-every", "-1"}}, "--log-every must be >= 0, got -1"},
};

const TrainOption& row(const std::string& flag) {
    const TrainOption* option = find_train_option(flag);
    REQUIRE(option != nullptr);
    return *option;
}

// A checkpoint named `path` as a run with options `o` saves it (only what the recipe needs).
Checkpoint checkpoint_of(const TrainOptions& o, const std::string& path) {
    Checkpoint checkpoint;
    checkpoint.path = path;
    checkpoint.config = o.config;
    checkpoint.options = recipe_metadata(o);
    return checkpoint;
}

// The quick preset with every good value read as `patchgrad train` reads its flags.
TrainOptions good_options() {
    TrainOptions o = preset_options("quick");
    for (const auto& [flag, text] : kGood) cli::set_train_option(o, row(flag), text);
    return o;
}

}  // namespace

TEST_CASE("train options: every row has a good value, and every checked row a bad one, in this test",
          "[trainer][options]") {
    std::set<std::string> good, bad, rows;
    for (const auto& [flag, text] : kGood) good.insert(flag);
    for (const Bad& b : kBad) bad.insert(b.settings.back().first);
    for (const TrainOption& option : train_options()) {
        INFO("--" << option.flag);
        CHECK(rows.insert(option.flag).second);  // no flag twice
        CHECK(good.count(option.flag) == 1);
        CHECK(bad.count(option.flag) == (option.check ? 1u : 0u));
        // A switch is exactly a row with a bool member (it takes no value on the command line).
        TrainOptions o;
        CHECK(option.is_switch() == std::holds_alternative<bool*>(option.field(o)));
    }
    CHECK(good.size() == rows.size());
    CHECK(bad.size() == kBad.size());
}

TEST_CASE("train options: every row is in --help, with its value name and help text", "[trainer][options]") {
    const std::string help = options_help();
    for (const TrainOption& option : train_options()) {
        INFO("--" << option.flag);
        const std::string head =
            std::string("  --") + option.flag + (option.is_switch() ? "" : std::string(" ") + option.value_name) + " ";
        CHECK(help.find(head) != std::string::npos);
        const std::string help_text = option.help;
        CHECK(help.find(help_text.substr(0, help_text.find('\n'))) != std::string::npos);
    }
    // The running options come after the recipe, the presets are summarised under --preset.
    CHECK(help.find("running:") > help.find("--seed S"));
    CHECK(help.find("--threads T") > help.find("running:"));
    CHECK(help.find("default: cifar-tiny, 101 epochs, adamw lr 0.001, crop-flip, erasing 0.25, drop path 0.1, seq "
                    "pool, patch dropout 0.5, tta flip\n") != std::string::npos);
    CHECK(help.find("quick:   cifar-micro, 33 epochs, adamw lr 0.002, crop-flip, seq pool, patch dropout 0.5, tta "
                    "flip\n") != std::string::npos);
    CHECK(help.find("long:    cifar-small, 204 epochs, adamw lr 0.001, crop-flip, mixup 0.8, cutmix 1, drop path 0.1, "
                    "seq pool, patch dropout 0.75 (every patch in the last 2), tta flip\n") != std::string::npos);
    CHECK(help.find(kDefaultDataDir) != std::string::npos);
}

TEST_CASE("train options: every row reads its flag's text, and the good values validate", "[trainer][options]") {
    const TrainOptions o = good_options();
    for (const auto& [flag, text] : kGood) {
        INFO("--" << flag);
        CHECK(option_text(row(flag), o) == text);
    }
    CHECK(o.optimizer == OptimizerKind::Sgd);
    CHECK(o.config.patch_size == 8);
    CHECK(o.config.drop_path == static_cast<real>(0.25));
    CHECK(o.validation == 100);
    CHECK(o.threads == 2);
    CHECK(o.precision == MatmulPrecision::Bf16);
    CHECK(o.resume);
    validate(o);
}

TEST_CASE("train options: a bad value is refused with its row's message", "[trainer][options][errors]") {
    for (const Bad& b : kBad) {
        INFO(b.message);
        TrainOptions o = good_options();
        for (const auto& [flag, text] : b.settings) read_option_text(row(flag), o, text, "test", flag);
        require_error([&] { validate(o); }, {"train options: " + b.message});
    }
}

TEST_CASE("train options: every recipe and model row round-trips through a checkpoint", "[trainer][options]") {
    const TrainOptions o = good_options();
    Checkpoint checkpoint = checkpoint_of(o, "ckpt");
    TrainOptions back = preset_options("default");
    apply_checkpoint_recipe(back, checkpoint);
    for (const TrainOption& option : train_options()) {
        INFO("--" << option.flag);
        if (option.kind == OptionKind::Recipe) CHECK(checkpoint.options.at(option.flag) == option_text(option, o));
        if (option.kind != OptionKind::Running) CHECK(option_text(option, back) == option_text(option, o));
    }
    check_recipe(checkpoint, back);
    for (const auto& [key, value] : checkpoint.options) CHECK(row(key).kind == OptionKind::Recipe);

    checkpoint.options["optimizer"] = "lamb";
    require_error([&] { apply_checkpoint_recipe(back, checkpoint); },
                  {"checkpoint ckpt", "train.optimizer 'lamb' is not sgd, adam or adamw"});
}

// The keys and value texts of a checkpoint written before the option table (by the code's
// for_each_recipe_option), and so also before --ema, --tta and --init: a run saved then must resume,
// its recipe unchanged, the options added since read as off.
TEST_CASE("train options: a recipe written by the code before the table still resumes", "[trainer][options]") {
    const Metadata old = {
        {"preset", "quick"}, {"epochs", "16"},         {"batch", "128"},         {"optimizer", "adamw"},
        {"lr", "0.002"},     {"weight-decay", "0.05"}, {"momentum", "0.9"},      {"nesterov", "false"},
        {"warmup", "1"},     {"schedule", "cosine"},   {"min-lr", "1e-05"},      {"label-smoothing", "0.1"},
        {"clip-grad", "0"},  {"augment", "crop-flip"}, {"rand-augment", "none"}, {"erasing", "0"},
        {"mixup", "0"},      {"cutmix", "0"},          {"validation", "5000"},   {"seed", "0"}};
    Checkpoint checkpoint;
    checkpoint.path = "old";
    checkpoint.config = vit_config("cifar-micro");
    checkpoint.options = old;
    TrainOptions back = preset_options("default");
    apply_checkpoint_recipe(back, checkpoint);
    check_recipe(checkpoint, back);
    Metadata with_added = old;
    with_added["ema"] = "0";
    with_added["tta"] = "none";
    with_added["init"] = "none";
    with_added["full-patch-epochs"] = "0";
    CHECK(recipe_metadata(back) == with_added);
    CHECK(back.ema == 0);
    CHECK(back.tta == TestTimeAugment::None);
    CHECK(back.init == "none");
    CHECK(back.optimizer == OptimizerKind::AdamW);
    CHECK(back.schedule == ScheduleKind::Cosine);
    CHECK(back.augment == AugmentKind::CropFlip);
    CHECK(back.min_lr == 1e-5);
    // What eval reads for its default --tta, and the error for an entry that was always there.
    CHECK(checkpoint_recipe_entry(checkpoint, "tta") == "none");
    CHECK(checkpoint_recipe_entry(checkpoint, "lr") == "0.002");
    checkpoint.options.erase("lr");
    require_error([&] { checkpoint_recipe_entry(checkpoint, "lr"); }, {"checkpoint old", "train.lr is missing"});
}

TEST_CASE("train options: the command line reads each kind of value, naming the flag", "[trainer][options][cli]") {
    using cli::set_train_option;
    TrainOptions o;
    require_error([&] { set_train_option(o, row("epochs"), "0"); }, {"--epochs needs a positive integer, got '0'"});
    require_error([&] { set_train_option(o, row("max-steps"), "x"); },
                  {"--max-steps needs 0 or a positive integer, got 'x'"});
    set_train_option(o, row("max-steps"), "0");
    CHECK(o.max_steps == 0);
    set_train_option(o, row("threads"), "auto");
    CHECK(o.threads == 0);
    require_error([&] { set_train_option(o, row("threads"), "0"); }, {"--threads", "'0'"});
    require_error([&] { set_train_option(o, row("seed"), "-1"); }, {"--seed needs a non-negative integer, got '-1'"});
    set_train_option(o, row("seed"), "18446744073709551615");
    CHECK(o.seed == 18446744073709551615ull);
    require_error([&] { set_train_option(o, row("lr"), "x"); }, {"--lr needs a number, got 'x'"});
    require_error([&] { set_train_option(o, row("drop-path"), "inf"); }, {"--drop-path needs a number, got 'inf'"});
    // Names, not strings: an unknown one is refused when read (moved from the trainer's
    // bad-options test, where TrainOptions held strings).
    require_error([&] { set_train_option(o, row("optimizer"), "lamb"); },
                  {"train options: --optimizer must be sgd, adam or adamw, got 'lamb'"});
    require_error([&] { set_train_option(o, row("schedule"), "poly"); }, {"--schedule", "poly"});
    require_error([&] { set_train_option(o, row("augment"), "flip"); }, {"--augment", "flip"});
    CHECK_THROWS_AS(set_train_option(o, row("augment"), "flip"), cli::UsageError);

    const cli::Flags flags =
        cli::parse_train_flags({"--nesterov", "--lr=0.5", "--print-recipe", "--epochs", "3"}, {"--print-recipe"});
    CHECK(flags.values == std::map<std::string, std::string>{
                              {"--nesterov", "true"}, {"--lr", "0.5"}, {"--print-recipe", "true"}, {"--epochs", "3"}});
    cli::apply_train_flags(o, flags);
    CHECK(o.nesterov);
    CHECK(o.lr == 0.5);
    CHECK(o.epochs == 3);
    require_error([] { cli::parse_train_flags({"--nesterov=true"}); }, {"unknown option '--nesterov'"});
    require_error([] { cli::parse_train_flags({"--print-recipe"}); }, {"unknown option '--print-recipe'"});
}

TEST_CASE("train options: the enums' names are the flags' and checkpoints' words", "[trainer][options]") {
    CHECK(enum_choices<ScheduleKind>() == "constant, cosine or step");
    CHECK(enum_choices<OptimizerKind>() == "sgd, adam or adamw");
    CHECK(enum_name(AugmentKind::CropFlip) == "crop-flip");
    CHECK(enum_from_name<AugmentKind>("none") == AugmentKind::None);
    CHECK_FALSE(enum_from_name<AugmentKind>("flip").has_value());
}

// What vit/scripts/train_torch.py reads from `patchgrad train --preset NAME --print-recipe`.
TEST_CASE("recipe_json: every recipe and model row under its flag, valued as the preset", "[trainer][options]") {
    for (const std::string& preset : preset_names()) {
        INFO(preset);
        const TrainOptions o = preset_options(preset);
        const std::string json = recipe_json(o);
        REQUIRE(json.size() > 4);
        CHECK(json.front() == '{');
        CHECK(json.substr(json.size() - 3) == "\n}\n");
        int entries = 0;
        for (const TrainOption& option : train_options()) {
            if (option.kind == OptionKind::Running) {
                CHECK(json.find("\"" + std::string(option.flag) + "\"") == std::string::npos);
                continue;
            }
            ++entries;
            const std::string text = option_text(option, o);
            const bool number = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) != 0);
            const bool word = text == "true" || text == "false";
            const std::string value = number || word ? text : "\"" + text + "\"";
            INFO(option.flag);
            const std::string entry = "\n  \"" + std::string(option.flag) + "\": " + value;
            const size_t at = json.find(entry);
            REQUIRE(at != std::string::npos);
            CHECK((json[at + entry.size()] == ',' || json[at + entry.size()] == '\n'));
        }
        CHECK(static_cast<int>(std::count(json.begin(), json.end(), '\n')) == entries + 2);  // "{", one line each, "}"
        CHECK(json.find("\"config\": \"" + o.config.name + "\"") != std::string::npos);
        CHECK(json.find("\"lr\": " + exact_text(o.lr) + ",") != std::string::npos);
    }
}

TEST_CASE("preset_options: the default, quick and long recipes", "[trainer][options]") {
    const TrainOptions d = preset_options("default");
    CHECK(d.config.name == "cifar-tiny");
    CHECK(d.epochs == 101);
    CHECK(d.optimizer == OptimizerKind::AdamW);
    CHECK(d.lr == 1e-3);
    CHECK(d.weight_decay == 0.05);
    CHECK(d.batch == 128);
    CHECK(d.warmup_epochs == 3);
    CHECK(d.schedule == ScheduleKind::Cosine);
    CHECK(d.label_smoothing == 0.1);
    CHECK(d.augment == AugmentKind::CropFlip);
    CHECK(d.rand_augment == "none");
    CHECK(d.mixup == 0);
    CHECK(d.cutmix == 0);
    CHECK(d.erasing == 0.25);
    CHECK(d.config.drop_path == static_cast<real>(0.1));
    CHECK(d.config.dropout == 0);
    CHECK(d.config.pool == Pool::Seq);
    CHECK(d.config.patch_dropout == static_cast<real>(0.5));
    CHECK(d.tta == TestTimeAugment::Flip);
    CHECK(d.ema == 0);
    CHECK(d.out_dir == "runs/cifar-tiny");
    // Within the preset's budget: 45,000 images x 101 epochs at most 49 epochs of cifar-tiny.
    CHECK(101 * training_gflop_per_image(d.config) <= 49 * training_gflop_per_image(vit_config("cifar-tiny")));
    validate(d);

    const TrainOptions q = preset_options("quick");
    CHECK(q.config.name == "cifar-micro");
    CHECK(q.epochs == 33);
    CHECK(q.lr == 2e-3);
    CHECK(q.warmup_epochs == 1);
    CHECK(q.config.pool == Pool::Seq);
    CHECK(q.config.patch_dropout == static_cast<real>(0.5));
    CHECK(q.tta == TestTimeAugment::Flip);
    CHECK(q.ema == 0);
    // Within the preset's budget: 45,000 images x 33 epochs at most 16 epochs of cifar-micro.
    CHECK(33 * training_gflop_per_image(q.config) <= 16 * training_gflop_per_image(vit_config("cifar-micro")));
    CHECK(q.rand_augment == "none");
    CHECK(q.erasing == 0);
    CHECK(q.config.drop_path == 0);
    validate(q);

    // The overnight recipe: the bigger model, three quarters of the patches dropped, mixup and
    // cutmix (timm's DeiT values).
    const TrainOptions l = preset_options("long");
    CHECK(l.config.name == "cifar-small");
    CHECK(l.epochs == 204);
    CHECK(l.full_patch_epochs == 2);
    // Two epochs on every patch cost what eight on a quarter of them do: the same budget as
    // run B's 210 epochs without them (chapter 10, 10.12), 1776.9 TFLOP on 45,000 images.
    TrainOptions b = l;
    b.epochs = 210;
    b.full_patch_epochs = 0;
    CHECK(run_training_tflop(l, l.epochs, 45000) <= run_training_tflop(b, b.epochs, 45000));
    CHECK(run_training_tflop(l, l.epochs, 45000) > 0.999 * run_training_tflop(b, b.epochs, 45000));
    CHECK(l.lr == 1e-3);
    CHECK(l.warmup_epochs == 5);
    CHECK(l.mixup == 0.8);
    CHECK(l.cutmix == 1.0);
    CHECK(l.erasing == 0);
    CHECK(l.rand_augment == "none");
    CHECK(l.config.drop_path == static_cast<real>(0.1));
    CHECK(l.config.pool == Pool::Seq);
    CHECK(l.config.patch_dropout == static_cast<real>(0.75));
    CHECK(l.tta == TestTimeAugment::Flip);
    CHECK(l.out_dir == "runs/cifar-small");
    validate(l);

    // Another model keeps the preset's recipe.
    const TrainOptions other_model = preset_options("default", "cifar-small");
    CHECK(other_model.config.dim == 192);
    CHECK(other_model.epochs == 101);
    CHECK(other_model.out_dir == "runs/cifar-small");
}

TEST_CASE("recipe_metadata: a checkpoint's recipe reads back exactly and differences are named", "[trainer][options]") {
    TinyRun run;
    TrainOptions o = run.options;
    o.lr = 0.1 + 0.2;  // not a short decimal
    o.nesterov = true;
    o.seed = 18446744073709551615ull;
    Checkpoint checkpoint = checkpoint_of(o, "ckpt");

    TrainOptions back = preset_options("quick");
    apply_checkpoint_recipe(back, checkpoint);
    CHECK(back.lr == o.lr);
    CHECK(back.nesterov);
    CHECK(back.seed == o.seed);
    CHECK(back.rand_augment == "rand-m9-n2");
    CHECK(back.config.dim == 16);
    CHECK(recipe_metadata(back) == recipe_metadata(o));
    check_recipe(checkpoint, back);
    const std::string flags = recipe_flags(back);
    CHECK(flags.rfind(" --preset test --epochs 2 --batch 8 --optimizer adamw --lr 0.30000000000000004 ", 0) == 0);
    CHECK(flags.find(" --nesterov --warmup 0.5 ") != std::string::npos);
    CHECK(flags.find(" --seed 18446744073709551615") != std::string::npos);
    CHECK(flags.find("--init") == std::string::npos);  // "none": a run without it logs as before
    back.init = "runs/a/best.safetensors";
    CHECK(recipe_flags(back).find(" --seed 18446744073709551615 --init runs/a/best.safetensors") != std::string::npos);
    require_error([&] { check_recipe(checkpoint, back); },
                  {"ckpt", "--init none in the checkpoint, runs/a/best.safetensors requested"});
    back.init = "none";

    back.mixup = 0.2;
    require_error([&] { check_recipe(checkpoint, back); }, {"ckpt", "--mixup 0.8 in the checkpoint, 0.2 requested"});
    checkpoint.options.erase("seed");
    require_error([&] { apply_checkpoint_recipe(back, checkpoint); }, {"ckpt", "train.seed is missing"});
}
