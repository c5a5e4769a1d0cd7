// test_resume_state.cpp — a resume file whose training state was edited or damaged: each field
// is checked against the recipe and the data before the run continues (vit/train/checkpoint.h),
// and fuzzed metadata either resumes or is refused naming the file; it never hangs the trainer.
// tests/fuzz/fuzz_resume.cpp runs the same mutator under libFuzzer, for as long as you like.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"
#include "vit/trainer_test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace fs = std::filesystem;

namespace {

// The tiny run stopped after `steps` steps in its own folder: its resume file, and its
// metrics.csv ("" when no epoch has ended).
struct Saved {
    NamedTensors resume;
    std::string metrics;
};

Saved stopped_after(TinyRun& run, QuietTrain& quiet, int64_t steps, const std::string& name) {
    TrainOptions o = run.options;
    o.out_dir = run.out(name);
    o.max_steps = steps;
    quiet(o);
    const std::string metrics = o.out_dir + "/metrics.csv";
    return {load_safetensors(o.out_dir + "/last.state.safetensors"), fs::exists(metrics) ? read_bytes(metrics) : ""};
}

// `saved` with `metadata` written as the run in `dir`, ready for --resume.
std::string write_run(const Saved& saved, const Metadata& metadata, const std::string& dir) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    NamedTensors file = saved.resume;
    file.metadata = metadata;
    const std::string path = dir + "/last.state.safetensors";
    save_safetensors(path, file);
    if (!saved.metrics.empty()) write_bytes(dir + "/metrics.csv", saved.metrics);
    return path;
}

}  // namespace

// An edited last.state.safetensors: four zero words of the dropout generator looped for ever in
// Rng::below, global step 2^63 - 1 overflowed, step 1000 trained an epoch of no steps at lr 0,
// epoch 10^18 wrote results.json after no training.
TEST_CASE("resume: a training state that cannot be the run's is refused naming the file and field",
          "[trainer][resume][errors]") {
    TinyRun run;
    run.options.config.patch_dropout = 0.25f;  // draws with Rng::below
    QuietTrain quiet;
    const Saved saved = stopped_after(run, quiet, 3, "saved");  // epoch 0, step 3 of 5
    TrainOptions o = run.options;
    o.resume = true;
    o.out_dir = run.out("edited");
    const std::vector<std::pair<Metadata, std::string>> cases = {
        {{{"state.dropout_rng.0", "0"},
          {"state.dropout_rng.1", "0"},
          {"state.dropout_rng.2", "0"},
          {"state.dropout_rng.3", "0"}},
         "state.dropout_rng.0 to .3 are all 0"},
        {{{"state.global_step", "9223372036854775807"}}, "state.global_step 9223372036854775807, but epoch 0"},
        {{{"state.step_in_epoch", "1000"}}, "state.step_in_epoch 1000 is not below the 5 steps of an epoch"},
        {{{"state.epoch", "1000000000000000000"}}, "state.epoch 1000000000000000000 is beyond the run's 2 epochs"},
        {{{"state.epoch", "2"}, {"state.global_step", "13"}}, "state.step_in_epoch 3 after the run's last epoch"},
        {{{"state.epoch", "-1"}}, "state.epoch -1 is negative"},
        {{{"state.seen", "13"}}, "state.seen 13, but 3 steps of batch 8 make 24 images"},
        {{{"state.correct", "25"}}, "state.correct 25 is not a count from 0 to state.seen 24"},
        {{{"state.loss_sum", "nan"}}, "state.loss_sum nan is not a sum of losses"},
        {{{"state.loss_sum", "-1"}}, "state.loss_sum -1 is not a sum of losses"},
        {{{"state.best_accuracy", "1.5"}}, "state.best_accuracy 1.5 is neither an accuracy"},
        {{{"state.elapsed_seconds", "inf"}}, "state.elapsed_seconds inf is not a duration"},
        {{{"state.epoch_seconds", "-3"}}, "state.epoch_seconds -3 is not a duration"},
    };
    for (const auto& [edits, expected] : cases) {
        INFO(expected);
        Metadata metadata = saved.resume.metadata;
        for (const auto& [key, value] : edits) metadata[key] = value;
        const std::string path = write_run(saved, metadata, o.out_dir);
        require_error([&] { quiet(o); }, {"checkpoint " + path + ": " + expected});
        CHECK_FALSE(fs::exists(o.out_dir + "/results.json"));
    }
    // The file as saved resumes.
    write_run(saved, saved.resume.metadata, o.out_dir);
    CHECK(quiet(o).stop == StopReason::Finished);
}

// Every input resumes or is refused with std::invalid_argument, named; a crash, a hang (the
// test run's timeout) or a sanitizer report is a finding. Each accepted input trains one step.
TEST_CASE("resume: fuzzed training-state metadata resumes or is refused naming the file, and never hangs",
          "[trainer][resume][fuzz]") {
    TinyRun run;
    run.options.config.patch_dropout = 0.25f;
    QuietTrain quiet;
    // Mid-epoch, at the start of an epoch (one ended), and finished.
    const std::vector<Saved> seeds = {stopped_after(run, quiet, 3, "step3"), stopped_after(run, quiet, 5, "step5"),
                                      stopped_after(run, quiet, 0, "finished")};
    Rng rng(75);
    const std::string dir = run.out("fuzzed");
    int64_t resumed = 0, refused = 0;
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) {
        const Saved& seed = seeds[rng.below(seeds.size())];
        Metadata metadata = seed.resume.metadata;
        std::string edits;
        bool state_only = true;
        for (uint64_t k = 0, n = 1 + rng.below(3); k < n; ++k) {
            const std::string edit = mutate_metadata(metadata, rng);
            state_only = state_only && edit.rfind("state.", 0) == 0;
            edits += (edits.empty() ? "" : "; ") + edit;
        }
        const std::string path = write_run(seed, metadata, dir);
        INFO("input " << i << ": " << edits);
        TrainOptions o = run.options;
        o.resume = true;
        o.out_dir = dir;
        int polls = 0;
        try {
            const TrainResult r = quiet(o, [&polls] { return ++polls > 1; });
            ++resumed;
            CHECK(r.state.global_step == r.state.epoch * 5 + r.state.step_in_epoch);
        } catch (const std::invalid_argument& e) {
            ++refused;
            const std::string message = e.what();
            INFO(message);
            if (state_only) CHECK(message.find("checkpoint " + path + ": ") != std::string::npos);
        } catch (const std::exception& e) {
            FAIL("threw " << typeid(e).name() << ": " << e.what());
        }
    }
    INFO(resumed << " resumed, " << refused << " refused in "
                 << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s");
    CHECK(resumed >= 10);
    CHECK(refused >= 50);
}
