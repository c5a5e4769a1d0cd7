// test_trainer_diverged_f32.cpp — a run whose weights overflow: in float32, the precision of
// the patchgrad program, where --lr 1e39 turns the first step's update into infinity.
#include <string>

#include "test_util.h"
#include "vit/trainer_test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

// Ctrl-C (or --max-steps) right after a step that made the weights infinite wrote them over
// the last good save, exited 0 and said "to continue: ... --resume"; --resume and eval then
// refused the run: "cls_token holds inf ... the weights are not finite".
TEST_CASE("train: a stop right after a diverging step saves nothing, fails, and keeps the last save",
          "[trainer][diverged]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.lr = 1e39;
    o.warmup_epochs = 0;
    // The good save: a first run stopped before its first step.
    REQUIRE(quiet(o, [] { return true; }).stop == StopReason::Interrupted);
    const std::map<std::string, std::string> before = files_in(o.out_dir);
    REQUIRE(before.count("last.state.safetensors") == 1);

    // The signal arrives during the first step; the stop comes right after it.
    o.resume = true;
    int polls = 0;
    std::string message;
    try {
        quiet(o, [&polls] { return ++polls > 1; });
    } catch (const std::runtime_error& e) {
        message = e.what();
    }
    INFO(message);
    CHECK(polls == 2);
    CHECK(message.find("training diverged: after step 1 of the run, ") != std::string::npos);
    CHECK(message.find(" holds ") != std::string::npos);
    CHECK(message.find("so nothing is saved; the last save in " + o.out_dir + " stays the point to resume from") !=
          std::string::npos);
    CHECK(message.find("smaller --lr") != std::string::npos);
    CHECK(files_in(o.out_dir) == before);  // every file as the good save left it, no temporary file
    CHECK(load_resume_point(o.out_dir + "/last.safetensors").state.global_step == 0);
    CHECK(load_checkpoint(o.out_dir + "/last.safetensors").state.global_step == 0);
    REQUIRE(quiet(o, [] { return true; }).stop == StopReason::Interrupted);  // it still resumes

    // --max-steps 1 in a new run: no save at all, and the message says there is none.
    TrainOptions fresh = run.options;
    fresh.lr = 1e39;
    fresh.warmup_epochs = 0;
    fresh.max_steps = 1;
    fresh.out_dir = run.out("fresh");
    require_error([&] { quiet(fresh); }, {"training diverged: after step 1", "the run has no save to resume from"});
    CHECK_FALSE(has_resume_point(fresh.out_dir + "/last.safetensors"));
}
