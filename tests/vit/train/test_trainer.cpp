// test_trainer.cpp — the training loop (vit/train/trainer.h) on a tiny ViT and a tiny synthetic
// CIFAR-10: exact resume, thread independence, learning, the files a run writes and every bad
// input. The options, evaluation and metrics files have their own test files beside this one.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/io/folder_lock.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/vit/summary.h"
#include "test_util.h"
#include "vit/trainer_test_util.h"
#include "vit/vit_test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {

std::string last_of(const TrainOptions& o) { return o.out_dir + "/last.safetensors"; }

// The metrics that must not depend on how a run was cut into pieces (times may).
void require_same_learning(const std::vector<EpochRecord>& a, const std::vector<EpochRecord>& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].epoch == b[i].epoch);
        CHECK(a[i].step == b[i].step);
        CHECK(a[i].lr == b[i].lr);
        CHECK(a[i].train_loss == b[i].train_loss);
        CHECK(a[i].train_acc == b[i].train_acc);
        CHECK(a[i].eval_loss == b[i].eval_loss);
        CHECK(a[i].eval_acc == b[i].eval_acc);
    }
}

}  // namespace

TEST_CASE("train: a run stopped mid-epoch and resumed ends bit-identical to an uninterrupted one",
          "[trainer][resume]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions straight = run.options;
    straight.out_dir = run.out("straight");
    const TrainResult reference = quiet(straight);
    REQUIRE(reference.stop == StopReason::Finished);
    REQUIRE(reference.state.global_step == 10);

    // Piece 1 stops by --max-steps in epoch 0, piece 2 by a Ctrl-C in epoch 1 (2 steps
    // into it), piece 3 finishes. 5 steps per epoch.
    TrainOptions pieces = run.options;
    pieces.out_dir = run.out("pieces");
    pieces.max_steps = 3;
    const TrainResult first = quiet(pieces);
    CHECK(first.stop == StopReason::MaxSteps);
    CHECK(first.state.epoch == 0);
    CHECK(first.state.step_in_epoch == 3);
    CHECK(quiet.out.str().find("patchgrad train --resume --out " + pieces.out_dir) != std::string::npos);

    pieces.resume = true;
    pieces.max_steps = 0;
    int steps = 0;
    const TrainResult second = quiet(pieces, [&steps] { return ++steps > 4; });
    CHECK(second.stop == StopReason::Interrupted);
    CHECK(second.state.epoch == 1);
    CHECK(second.state.step_in_epoch == 2);
    CHECK(second.history.size() == 1);

    const TrainResult third = quiet(pieces);
    REQUIRE(third.stop == StopReason::Finished);
    CHECK(third.state.global_step == 10);
    require_identical_weights(last_of(straight), last_of(pieces));
    // Earlier pieces' epochs come back from metrics.csv, rounded as written there.
    require_same_learning(read_metrics_csv(straight.out_dir + "/metrics.csv"),
                          read_metrics_csv(pieces.out_dir + "/metrics.csv"));
    require_same_learning({reference.history.back()}, {third.history.back()});
    REQUIRE(third.test.has_value());
    CHECK(third.test->accuracy == reference.test->accuracy);
    CHECK(third.test->loss == reference.test->loss);
}

// When the very first save of a run failed (a full disk), the folder held best.safetensors and
// metrics.csv only: a new run said "continue it with --resume", and --resume that there was
// no checkpoint.
TEST_CASE("train: a folder whose run never saved a checkpoint is not offered to --resume", "[trainer][errors]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.out_dir = run.out("reference");
    o.max_steps = 6;
    quiet(o);
    const auto weights = std::filesystem::file_size(o.out_dir + "/best.safetensors");
    o = run.options;
    std::string message;
    {
        // Room for best.safetensors and the metrics, not for the resume file (three times the weights).
        FileSizeLimit full(static_cast<rlim_t>(2 * weights));
        try {
            quiet(o);
        } catch (const std::runtime_error& e) {
            message = e.what();
        }
    }
    INFO(message);
    CHECK(message.find("last.state.safetensors") != std::string::npos);
    CHECK(std::filesystem::exists(o.out_dir + "/best.safetensors"));
    CHECK(std::filesystem::exists(o.out_dir + "/metrics.csv"));
    CHECK_FALSE(has_resume_point(last_of(o)));
    require_error([&] { quiet(o); }, {"--out " + o.out_dir +
                                          " holds files of a run that saved no checkpoint to "
                                          "continue from (best.safetensors, metrics.csv, metrics.png)",
                                      "choose another --out, or replace them with --overwrite"});
    try {
        quiet(o);
    } catch (const std::exception& e) {
        CHECK(std::string(e.what()).find("--resume") == std::string::npos);
    }
    o.resume = true;
    require_error([&] { quiet(o); }, {"--resume: no checkpoint"});
    o.resume = false;
    o.overwrite = true;
    CHECK(quiet(o).stop == StopReason::Finished);
}

// The tiny run trained straight through into "straight", and again into "pieces" stopped
// after step 3, to be resumed.
struct StraightAndStopped {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions straight = run.options, pieces = run.options;
    StraightAndStopped() {
        straight.out_dir = run.out("straight");
        REQUIRE(quiet(straight).stop == StopReason::Finished);
        pieces.out_dir = run.out("pieces");
        pieces.max_steps = 3;
        REQUIRE(quiet(pieces).stop == StopReason::MaxSteps);
    }
};

// A Ctrl-C before the first step saved a resume file without optimizer state, which --resume
// then refused: "holds no optimizer state".
TEST_CASE("train: a run stopped before its first step resumes and ends bit-identical", "[trainer][resume]") {
    StraightAndStopped r;
    auto& [run, quiet, straight, pieces] = r;
    TrainOptions o = run.options;
    o.out_dir = run.out("stopped-at-once");
    const TrainResult stopped = quiet(o, [] { return true; });
    REQUIRE(stopped.stop == StopReason::Interrupted);
    CHECK(stopped.state.global_step == 0);
    o.resume = true;
    REQUIRE(quiet(o).stop == StopReason::Finished);
    require_identical_weights(last_of(straight), last_of(o));
}

TEST_CASE(
    "train: --ema, --tta flip, --patch-dropout and --pool mean resume bit for bit, the weights files hold "
    "the average, which is what the run evaluated",
    "[trainer][resume][ema]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions straight = run.options;
    straight.ema = 0.9;
    straight.tta = TestTimeAugment::Flip;
    straight.config.patch_dropout = 0.25f;
    straight.config.pool = Pool::Mean;
    straight.out_dir = run.out("straight");
    const TrainResult reference = quiet(straight);
    REQUIRE(reference.stop == StopReason::Finished);
    CHECK(quiet.out.str().find("--ema 0.9 --tta flip") != std::string::npos);
    CHECK(quiet.out.str().find("patch dropout 0.25") != std::string::npos);

    TrainOptions pieces = straight;
    pieces.out_dir = run.out("pieces");
    const TrainResult rest = train_in_sessions(quiet, pieces, {3, 0});
    require_identical_weights(last_of(straight), last_of(pieces));
    require_identical_weights(optimizer_state_path(last_of(straight)), optimizer_state_path(last_of(pieces)));
    CHECK(rest.test->loss == reference.test->loss);

    // The resume file: trained weights, then optimizer.*, then ema.* equal to last.safetensors.
    const Checkpoint resume = load_resume_point(last_of(straight));
    const Checkpoint last = load_checkpoint(last_of(straight));
    REQUIRE(resume.ema.size() == last.weights.tensors.size());
    double moved = 0;
    for (size_t i = 0; i < resume.ema.size(); ++i) {
        INFO(resume.ema[i].first);
        REQUIRE(resume.ema[i].first == last.weights.tensors[i].first);
        require_close(resume.ema[i].second, last.weights.tensors[i].second, 0);
        moved = std::max(moved, max_abs_difference(resume.weights.tensors[i].second, resume.ema[i].second));
    }
    CHECK(moved > 1e-4);  // the average is not the trained weights

    // The average never feeds back into training: without --ema the trained weights are the same bits.
    TrainOptions no_average = straight;
    no_average.ema = 0;
    no_average.out_dir = run.out("no-average");
    quiet(no_average);
    const Checkpoint trained = load_resume_point(last_of(no_average));
    REQUIRE(trained.ema.empty());
    REQUIRE(trained.weights.tensors.size() == resume.weights.tensors.size());
    for (size_t i = 0; i < trained.weights.tensors.size(); ++i)
        require_close(trained.weights.tensors[i].second, resume.weights.tensors[i].second, 0);

    // The test result is last.safetensors' weights evaluated with flips.
    VisionTransformer model(last.config, 0);
    load_weights(model, last);
    const Evaluation e = evaluate(model, load_cifar10_test(run.data_dir()), ChannelStats::cifar10(), straight.batch,
                                  TestTimeAugment::Flip);
    CHECK(e.loss == reference.test->loss);
    CHECK(e.accuracy == reference.test->accuracy);
    CHECK(evaluate(model, load_cifar10_test(run.data_dir()), ChannelStats::cifar10(), straight.batch).loss !=
          reference.test->loss);

    // --ema without the average in the resume file is named.
    TrainOptions other = straight;
    other.out_dir = run.out("plain");
    other.ema = 0;
    other.max_steps = 2;
    quiet(other);
    other.resume = true;
    other.max_steps = 0;
    other.ema = 0.9;
    require_error([&] { quiet(other); }, {"--ema 0 in the checkpoint, 0.9 requested"});
}

TEST_CASE(
    "train: --init starts a new run from a checkpoint's weights, its dropouts changed, and resumes without the file",
    "[trainer][init]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions first = run.options;
    first.out_dir = run.out("first");
    REQUIRE(quiet(first).stop == StopReason::Finished);
    const std::string init = run.out("init.safetensors");
    std::filesystem::copy_file(last_of(first), init);

    // A learning rate too small to move any weight by 1e-9 shows where the run started.
    TrainOptions still = run.options;
    still.out_dir = run.out("still");
    still.init = init;
    still.lr = 1e-12;
    still.min_lr = 0;
    still.config.patch_dropout = 0.5f;  // training-only settings may differ from the init run's
    still.config.drop_path = 0;
    REQUIRE(quiet(still).stop == StopReason::Finished);
    CHECK(quiet.out.str().find("init: the weights of " + init + "\n") != std::string::npos);
    CHECK(quiet.out.str().find(" --seed 7 --init " + init + " (") != std::string::npos);
    CHECK(quiet.log.str().find("warning: --init") == std::string::npos);  // the same seed and split
    const Checkpoint started = load_checkpoint(init), ended = load_checkpoint(last_of(still));
    CHECK(ended.options.at("init") == init);
    REQUIRE(started.weights.tensors.size() == ended.weights.tensors.size());
    for (size_t i = 0; i < ended.weights.tensors.size(); ++i) {
        INFO(ended.weights.tensors[i].first);
        CHECK(max_abs_difference(started.weights.tensors[i].second, ended.weights.tensors[i].second) < 1e-9);
    }
    TrainOptions from_random = still;
    from_random.init = "none";
    from_random.out_dir = run.out("random");
    quiet(from_random);
    const Checkpoint random_end = load_checkpoint(last_of(from_random));
    CHECK(max_abs_difference(random_end.weights.tensors[0].second, ended.weights.tensors[0].second) > 1e-3);

    // Cut into two pieces, with the file gone in between, it ends as the uninterrupted run.
    TrainOptions straight = run.options;
    straight.init = init;
    straight.out_dir = run.out("straight");
    quiet(straight);
    TrainOptions pieces = straight;
    pieces.out_dir = run.out("pieces");
    const std::string moved = run.out("moved.safetensors");
    train_in_sessions(quiet, pieces, {3, 0}, [&] { std::filesystem::rename(init, moved); });
    require_identical_weights(last_of(straight), last_of(pieces));
    std::filesystem::rename(moved, init);

    // Errors, before the output folder exists: a missing file, another model, not a checkpoint.
    TrainOptions bad = run.options;
    bad.out_dir = run.out("bad");
    bad.init = run.out("no-such.safetensors");
    require_error([&] { quiet(bad); }, {run.out("no-such.safetensors")});
    bad.init = init;
    bad.config.heads = 4;  // the same tensors as 2 heads: only the config can tell
    require_error([&] { quiet(bad); }, {init, "config heads 2 in the checkpoint, 4 requested"});
    bad.config = run.options.config;
    bad.init = first.out_dir + "/metrics.csv";
    require_error([&] { quiet(bad); }, {bad.init});
    CHECK_FALSE(std::filesystem::exists(bad.out_dir));

    // Weights trained on another split may have seen this run's validation images: said.
    TrainOptions other_split = run.options;
    other_split.out_dir = run.out("other-split");
    other_split.init = init;
    other_split.seed = 8;
    other_split.max_steps = 1;
    quiet.log.str("");
    quiet(other_split);
    CHECK(quiet.log.str().find("warning: --init " + init + " was trained with --seed 7 --validation 10, this run " +
                               "holds out 10 images by --seed 8") != std::string::npos);
}

TEST_CASE(
    "train: --full-patch-epochs trains the last epochs on every patch, resumes bit for bit across the switch, "
    "and counts their compute at full cost",
    "[trainer][patch-dropout]") {
    TinyRun run;
    QuietTrain quiet;
    // Every epoch on every patch is the run without patch dropout, to the bit: the layer draws nothing.
    TrainOptions none = run.options;
    none.out_dir = run.out("none");
    quiet(none);
    TrainOptions all_full = run.options;
    all_full.config.patch_dropout = 0.5f;
    all_full.full_patch_epochs = 2;
    all_full.out_dir = run.out("all-full");
    quiet(all_full);
    require_identical_weights(last_of(none), last_of(all_full));

    // One epoch of each, straight and cut into three pieces (in the first epoch, and in the second).
    TrainOptions straight = all_full;
    straight.full_patch_epochs = 1;
    straight.out_dir = run.out("straight");
    const TrainResult reference = quiet(straight);
    CHECK(quiet.out.str().find(" --full-patch-epochs 1 ") != std::string::npos);
    const ViTConfig every_patch = with_every_patch(straight.config);
    char header[96];
    std::snprintf(header, sizeof header, "%.4f GFLOP per training image (%.4f in the last 1, every patch)",
                  training_gflop_per_image(straight.config), training_gflop_per_image(every_patch));
    CHECK(quiet.out.str().find(header) != std::string::npos);
    TrainOptions pieces = straight;
    pieces.out_dir = run.out("pieces");
    train_in_sessions(quiet, pieces, {3, 7, 0});
    require_identical_weights(last_of(straight), last_of(pieces));
    // The switch changes the run: not the weights of either neighbour.
    TrainOptions dropping = straight;
    dropping.full_patch_epochs = 0;
    dropping.out_dir = run.out("dropping");
    quiet(dropping);
    CHECK(max_abs_difference(load_checkpoint(last_of(dropping)).weights.tensors[0].second,
                             load_checkpoint(last_of(straight)).weights.tensors[0].second) > 0);

    // results.json: 40 images per epoch, the first at patch dropout's cost, the second at full cost.
    std::ifstream results(straight.out_dir + "/results.json");
    const std::string json((std::istreambuf_iterator<char>(results)), std::istreambuf_iterator<char>());
    const double tflop = training_tflop(straight.config, 40) + training_tflop(every_patch, 40);
    CHECK(json.find("\"training_tflop\": " + exact_text(tflop) + ",") != std::string::npos);
    CHECK(tflop == run_training_tflop(straight, 2, 40));
    CHECK(run_training_tflop(straight, 1, 40) == training_tflop(straight.config, 40));
    CHECK(reference.test.has_value());

    TrainOptions no_dropout = run.options;
    no_dropout.full_patch_epochs = 1;
    require_error([&] { quiet(no_dropout); }, {"--full-patch-epochs is for a run with --patch-dropout above 0"});
}

TEST_CASE("train: the thread count does not change a single bit", "[trainer][threads]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions one = run.options, two = run.options, automatic = run.options;
    one.epochs = two.epochs = automatic.epochs = 1;
    one.out_dir = run.out("one");
    two.out_dir = run.out("two");
    automatic.out_dir = run.out("auto");
    one.threads = 1;
    two.threads = 2;
    automatic.threads = 0;  // whatever choose_thread_count measures on this machine
    const TrainResult a = quiet(one);
    const TrainResult b = quiet(two);
    const TrainResult c = quiet(automatic);
    set_num_threads(1);
    require_identical_weights(last_of(one), last_of(two));
    require_identical_weights(last_of(one), last_of(automatic));
    require_same_learning(a.history, b.history);
    require_same_learning(a.history, c.history);
    CHECK(quiet.log.str().find("threads: auto: the fastest of 1..") != std::string::npos);
}

TEST_CASE("train: the loss falls over a few epochs on an easy synthetic set", "[trainer]") {
    TinyRun run;
    QuietTrain quiet;
    const TrainResult r = quiet(run.learning_only(6));
    REQUIRE(r.history.size() == 6);
    INFO(quiet.out.str());
    CHECK(r.history.back().train_loss < 0.8 * r.history.front().train_loss);
    CHECK(r.history.back().train_acc > r.history.front().train_acc);
}

TEST_CASE("train: writes metrics.csv, metrics.png, results.json, last and best checkpoints", "[trainer]") {
    TinyRun run;
    QuietTrain quiet;
    const TrainResult r = quiet(run.options);
    const std::string out = run.options.out_dir;

    std::ifstream csv(out + "/metrics.csv");
    std::string line;
    REQUIRE(std::getline(csv, line));
    CHECK(line == kMetricsHeader);
    int rows = 0;
    while (std::getline(csv, line)) {
        ++rows;
        CHECK(line.rfind(std::to_string(rows) + ",", 0) == 0);
        CHECK(line.find(",validation,") != std::string::npos);
    }
    CHECK(rows == 2);

    const std::string png = read_bytes(out + "/metrics.png");
    REQUIRE(png.size() > 8);
    CHECK(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);

    for (const char* file : {"last.safetensors", "last.state.safetensors", "best.safetensors", "results.json"})
        CHECK(std::filesystem::exists(out + "/" + file));
    CHECK(files_ending_in(out, ".tmp").empty());

    const std::string results = read_bytes(out + "/results.json");
    CHECK(results.find("\"test_accuracy\": " + exact_text(r.test->accuracy)) != std::string::npos);
    CHECK(results.find("\"test_images\": 10") != std::string::npos);
    // 2 epochs of the 40 training images, at training_gflop_per_image each.
    CHECK(results.find("\"image_passes\": 80") != std::string::npos);
    CHECK(results.find("\"training_tflop\": " + exact_text(training_gflop_per_image(run.options.config) * 80 * 1e-3)) !=
          std::string::npos);
    CHECK(quiet.out.str().find("GFLOP per training image") != std::string::npos);
    const ViTConfig& c = run.options.config;
    CHECK(results.find("\"model\": {\"patch\": " + std::to_string(c.patch_size) +
                       ", \"dim\": " + std::to_string(c.dim) + ", \"depth\": " + std::to_string(c.depth) +
                       ", \"heads\": " + std::to_string(c.heads) + ", \"mlp\": " + std::to_string(c.mlp_hidden()) +
                       "}") != std::string::npos);
    const Checkpoint best = load_checkpoint(out + "/best.safetensors");
    CHECK(best.state.best_accuracy == std::max(r.history[0].eval_acc, r.history[1].eval_acc));
    // The progress went to the log, one line per epoch to out.
    CHECK(quiet.log.str().find("epoch 1/2 step 5/5") != std::string::npos);
    CHECK(quiet.out.str().find("epoch 2/2: train loss") != std::string::npos);
    CHECK(quiet.out.str().find("test accuracy") != std::string::npos);
}

TEST_CASE("train: --validation 0 evaluates each epoch on the test set and says so", "[trainer]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.epochs = 1;
    o.validation = 0;
    const TrainResult r = quiet(o);
    REQUIRE(r.history.size() == 1);
    CHECK(r.history[0].eval_set == "test");
    CHECK(r.history[0].eval_acc == r.test->accuracy);
    CHECK(read_bytes(o.out_dir + "/metrics.csv").find(",test,") != std::string::npos);
}

TEST_CASE("train: bad options are refused naming the flag", "[trainer][errors]") {
    TinyRun run;
    QuietTrain quiet;
    auto refused = [&](auto change, std::vector<std::string> fragments) {
        TrainOptions o = run.options;
        change(o);
        require_error([&] { quiet(o); }, fragments);
    };
    refused([](TrainOptions& o) { o.epochs = -3; }, {"--epochs", "-3"});
    refused([](TrainOptions& o) { o.lr = 0; }, {"--lr must be positive", "0"});
    refused([](TrainOptions& o) { o.rand_augment = "rand-q3"; }, {"--rand-augment", "rand-q3"});
    refused([](TrainOptions& o) { o.label_smoothing = 1; }, {"--label-smoothing"});
    refused([](TrainOptions& o) { o.validation = 15; }, {"--validation", "15"});
    refused([](TrainOptions& o) { o.config = vit_config("vit-b16"); }, {"224x224", "CIFAR-10"});
    refused([](TrainOptions& o) { o.config.heads = 3; }, {"dim 16 is not divisible by heads 3"});
    require_error([] { preset_options("slow"); }, {"unknown preset 'slow'", "default", "quick"});
    // Accepted before, and then SGD's Nesterov switch was silently ignored by AdamW.
    refused([](TrainOptions& o) { o.nesterov = true; }, {"--nesterov is for --optimizer sgd, not adamw"});
    // 2147483648 became -2147483648 on its way to set_num_threads, after the output existed.
    refused([](TrainOptions& o) { o.threads = 2147483648; }, {"--threads", "2147483648"});
    // rand-m9-n1000000000 never finished its first batch.
    refused([](TrainOptions& o) { o.rand_augment = "rand-m9-n1000000000"; }, {"--rand-augment", "from 0 to 15"});
    refused([](TrainOptions& o) { o.config.depth = 999999999999; }, {"train options", "more than this machine's"});
    // Overflows only once the steps per epoch are known, from the data: still before --out.
    refused([](TrainOptions& o) { o.epochs = int64_t(1) << 62; }, {"--epochs x steps per epoch", "64-bit"});
    CHECK_FALSE(std::filesystem::exists(run.options.out_dir));  // nothing was started
}

// --warmup 1e19 failed after the output directory was made, with "warmup must be in
// [0, total = 128] steps, got -9223372036854775808": more warmup than the run is capped at
// the run, before it is converted to steps.
TEST_CASE("train: a warmup longer than the run warms up over the whole run", "[trainer]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.epochs = 1;
    o.warmup_epochs = 1e19;
    const TrainResult r = quiet(o);
    REQUIRE(r.stop == StopReason::Finished);
    CHECK(r.history[0].lr == Approx(o.lr));  // the last step of a 5-step warmup: 5/5 of the peak
}

TEST_CASE("train: data files named like the official ones but of another size are named in the log", "[trainer]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.max_steps = 1;
    quiet(o);
    CHECK(quiet.log.str().find("warning: " + run.data_dir() + "/data_batch_3.bin holds 10 records") !=
          std::string::npos);
    CHECK(quiet.log.str().find("test_batch.bin holds 10 records; the official CIFAR-10 file has 10000") !=
          std::string::npos);
}

TEST_CASE("train: missing data, an unwritable output and a bad --resume fail before training", "[trainer][errors]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;

    o.data_dir = run.out("no-such-dir");
    o.data_source = "PATCHGRAD_DATA";
    require_error([&] { quiet(o); }, {run.out("no-such-dir"), "PATCHGRAD_DATA", "download_cifar10.sh"});
    CHECK_FALSE(std::filesystem::exists(o.out_dir));  // no empty run directory left behind

    // --data naming a file was reported as a directory that does not exist.
    o.data_dir = run.data_dir() + "/test_batch.bin";
    require_error([&] { quiet(o); }, {o.data_dir + " is a file, not a directory"});

    o = run.options;
    write_bytes(run.out("a-file"), "x");
    o.out_dir = run.out("a-file") + "/run";
    require_error([&] { quiet(o); }, {"output directory", o.out_dir});

    o = run.options;
    o.resume = true;
    require_error([&] { quiet(o); }, {"--resume", last_of(o)});
}

TEST_CASE("train: --resume refuses a checkpoint of another model or recipe, or with a broken state file",
          "[trainer][errors][resume]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.max_steps = 2;
    quiet(o);
    o.max_steps = 0;
    o.resume = true;

    TrainOptions other = o;
    other.config.dim = 32;
    // (--resume reads the resume file, a complete save: checkpoint.h)
    require_error([&] { quiet(other); },
                  {optimizer_state_path(last_of(o)), "config dim 16 in the checkpoint, 32 requested"});
    other = o;
    other.lr = 0.5;
    require_error([&] { quiet(other); },
                  {optimizer_state_path(last_of(o)), "--lr 0.01 in the checkpoint, 0.5 requested"});

    // Without its resume file, the weights file alone cannot continue the run exactly.
    const std::string state = optimizer_state_path(last_of(o));
    std::filesystem::remove(state);
    require_error([&] { quiet(o); }, {state, "is missing"});
}

// A second run into the same --out replaced best, last and metrics.csv silently and left the
// first run's results.json beside the new checkpoints.
TEST_CASE("train: a new run into a folder holding one is refused, --overwrite replaces it whole", "[trainer][errors]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.epochs = 1;
    REQUIRE(quiet(o).stop == StopReason::Finished);
    const std::string metrics = read_bytes(o.out_dir + "/metrics.csv");
    const std::string weights = read_bytes(o.out_dir + "/last.safetensors");
    require_error([&] { quiet(o); },
                  {"--out " + o.out_dir, "holds a run", "last.safetensors", "results.json", "--resume", "--overwrite"});
    CHECK(read_bytes(o.out_dir + "/metrics.csv") == metrics);  // nothing of the old run was touched
    CHECK(read_bytes(o.out_dir + "/last.safetensors") == weights);

    o.overwrite = true;
    o.max_steps = 2;  // stops before the end, so it writes no results.json of its own
    REQUIRE(quiet(o).stop == StopReason::MaxSteps);
    CHECK_FALSE(std::filesystem::exists(o.out_dir + "/results.json"));  // the old one is gone
    CHECK_FALSE(std::filesystem::exists(o.out_dir + "/best.safetensors"));
    CHECK(read_bytes(o.out_dir + "/last.safetensors") != weights);
}

// Two runs started together into one --out both finished: best.safetensors was one's, last.*,
// metrics.csv and results.json the other's.
TEST_CASE("train: a second run into a folder in use is refused naming the first's process id", "[trainer][lock]") {
    TinyRun run;
    QuietTrain quiet;
    Pipe training, go;
    Child first([&] {
        QuietTrain own;
        bool told = false;
        const TrainResult r = own(run.options, [&] {
            if (!told) {  // before its first step: --out is locked by now
                told = true;
                training.send('t');
                return go.receive() != 'c';
            }
            return false;
        });
        return r.stop == StopReason::Finished ? 0 : 3;
    });
    training.close_writing();
    REQUIRE(training.receive() == 't');

    TrainOptions second = run.options;
    second.lr = 2e-2;
    require_error(
        [&] { quiet(second); },
        {"--out " + second.out_dir, "in use by another patchgrad train (process " + std::to_string(first.pid) + ")",
         "choose another --out"});
    second.overwrite = true;
    require_error([&] { quiet(second); }, {"process " + std::to_string(first.pid)});
    go.send('c');
    CHECK(first.wait() == 0);

    // The folder holds the first run alone, as if it had run by itself.
    TrainOptions alone = run.options;
    alone.out_dir = run.out("alone");
    quiet(alone);
    for (const char* file : {"last.safetensors", "last.state.safetensors", "best.safetensors"})
        require_identical_weights(alone.out_dir + "/" + file, run.options.out_dir + "/" + file);
    require_same_learning(read_metrics_csv(alone.out_dir + "/metrics.csv"),
                          read_metrics_csv(run.options.out_dir + "/metrics.csv"));
    CHECK(files_ending_in(run.options.out_dir, ".tmp").empty());
}

// The kernel releases the lock of a process however it ends: a run killed with SIGKILL leaves
// its folder free for the next one.
TEST_CASE("train: a run killed while it holds its folder leaves the folder free", "[trainer][lock]") {
    TinyRun run;
    QuietTrain quiet;
    Pipe training;
    Child killed([&] {
        QuietTrain own;
        own(run.options, [&] {
            training.send('t');
            for (;;) ::pause();  // until SIGKILL
            return true;
        });
        return 0;
    });
    training.close_writing();
    REQUIRE(training.receive() == 't');
    const std::string lock_file = run.options.out_dir + "/" + FolderLock::kFileName;
    CHECK(read_bytes(lock_file) == std::to_string(killed.pid) + "\n");
    REQUIRE(::kill(killed.pid, SIGKILL) == 0);
    CHECK(killed.wait() == 128 + SIGKILL);

    // What a save killed midway leaves: its temporary files, removed by the next run.
    const std::string& out = run.options.out_dir;
    write_bytes(out + "/last.state.safetensors.99999-3.tmp", "half a save");
    write_bytes(out + "/metrics.csv.tmp", "an older patchgrad's");
    write_bytes(out + "/notes.tmp", "not the run's");
    TrainOptions o = run.options;
    o.max_steps = 2;
    REQUIRE(quiet(o).stop == StopReason::MaxSteps);
    CHECK(read_bytes(lock_file) == std::to_string(::getpid()) + "\n");
    CHECK(files_ending_in(out, ".tmp") == std::vector<std::string>{"notes.tmp"});
    // The same process may lock it again once the run has ended.
    o.resume = true;
    o.max_steps = 0;
    CHECK(quiet(o).stop == StopReason::Finished);
}

// A save writes the resume file, then the weights file. A crash between the two renames (a
// SIGKILL, a full disk) leaves the state one save ahead of the weights; the resume file is a
// complete save on its own, so the run goes on from it and ends exactly as an uninterrupted one.
TEST_CASE("train: a crash between the two files of a save resumes from the newer, complete save", "[trainer][resume]") {
    StraightAndStopped r;
    auto& [run, quiet, straight, pieces] = r;
    const std::string weights_at_3 = read_bytes(last_of(pieces));
    pieces.resume = true;
    pieces.max_steps = 4;
    REQUIRE(quiet(pieces).stop == StopReason::MaxSteps);
    // The crash: step 4's resume file renamed into place, its weights file not.
    write_bytes(last_of(pieces), weights_at_3);
    CHECK(load_checkpoint(last_of(pieces)).state.global_step == 3);
    pieces.max_steps = 0;
    const TrainResult finished = quiet(pieces);
    REQUIRE(finished.stop == StopReason::Finished);
    require_identical_weights(last_of(straight), last_of(pieces));

    // A crash inside the very first save: the resume file exists, the weights file not yet.
    TrainOptions first = run.options;
    first.out_dir = run.out("first");
    first.max_steps = 1;
    REQUIRE(quiet(first).stop == StopReason::MaxSteps);
    std::filesystem::remove(last_of(first));
    first.resume = true;
    first.max_steps = 0;
    REQUIRE(quiet(first).stop == StopReason::Finished);
    require_identical_weights(last_of(straight), last_of(first));
}

TEST_CASE("train: a disk that fills up stops the run naming the file, changes no file, and --resume ends bit-identical",
          "[trainer][resume][errors]") {
    StraightAndStopped r;
    auto& [run, quiet, straight, pieces] = r;
    const std::map<std::string, std::string> before = files_in(pieces.out_dir);
    pieces.resume = true;
    pieces.max_steps = 0;
    std::string message;
    {
        FileSizeLimit full(0);  // the disk is full: no write of the resumed run gets through
        try {
            quiet(pieces);
        } catch (const std::runtime_error& e) {
            message = e.what();
        }
    }
    INFO(message);
    CHECK(message.find(pieces.out_dir) != std::string::npos);
    CHECK(message.find("File too large") != std::string::npos);
    CHECK(message.find("the old file is untouched") != std::string::npos);
    CHECK(files_in(pieces.out_dir) == before);  // every file as the last save left it, no .tmp

    // Space again: the run resumes from that save and ends as if nothing had happened.
    REQUIRE(quiet(pieces).stop == StopReason::Finished);
    require_identical_weights(last_of(straight), last_of(pieces));
}

// A single malformed line in metrics.csv made --resume refuse the run.
TEST_CASE("train: a damaged metrics.csv does not stop --resume, it is kept aside and named",
          "[trainer][resume][errors]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.max_steps = 6;  // into the second epoch: metrics.csv has the first
    REQUIRE(quiet(o).stop == StopReason::MaxSteps);
    const std::string metrics = o.out_dir + "/metrics.csv";
    write_bytes(metrics, read_bytes(metrics) + "1,garbage\n");
    o.resume = true;
    o.max_steps = 0;
    REQUIRE(quiet(o).stop == StopReason::Finished);
    CHECK(quiet.log.str().find("warning: read_metrics_csv: " + metrics) != std::string::npos);
    CHECK(read_bytes(metrics + ".unreadable").find("1,garbage") != std::string::npos);
    CHECK(read_metrics_csv(metrics).size() == 1);  // the second epoch, written by this resume

    // A second damaged metrics.csv overwrote the first one kept; each now has its own copy.
    write_bytes(metrics, read_bytes(metrics) + "2,rubbish\n");
    o.max_steps = 0;
    quiet.log.str("");
    REQUIRE(quiet(o).stop == StopReason::Finished);
    CHECK(quiet.log.str().find("kept as " + metrics + ".unreadable.2,") != std::string::npos);
    CHECK(read_bytes(metrics + ".unreadable").find("1,garbage") != std::string::npos);
    CHECK(read_bytes(metrics + ".unreadable.2").find("2,rubbish") != std::string::npos);

    // --overwrite leaves nothing of the run it replaces, the kept copies included.
    TrainOptions fresh = run.options;
    fresh.overwrite = true;
    fresh.max_steps = 1;
    REQUIRE(quiet(fresh).stop == StopReason::MaxSteps);
    std::vector<std::string> left = files_ending_in(o.out_dir, "");
    std::sort(left.begin(), left.end());
    CHECK(left == std::vector<std::string>{".patchgrad.lock", "last.safetensors", "last.state.safetensors"});
}

// `train --data $'data-\xe9t\xe9'` wrote the path into the checkpoint's header as it was:
// Python's json (vit/scripts/load_checkpoint_torch.py) refused the file.
TEST_CASE("train: a --data folder named in Latin-1 gives checkpoints of valid UTF-8 that resume there quietly",
          "[trainer][resume]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.data_dir = run.out("data-\xe9t\xe9");
    std::error_code ec;
    std::filesystem::copy(run.data_dir(), o.data_dir, ec);
    if (ec) {  // a file system that takes UTF-8 names only (macOS): such a folder cannot exist
        WARN("cannot create a folder named in Latin-1 here: " << ec.message());
        return;
    }
    o.max_steps = 6;  // into the second epoch: best and last, metrics.csv
    REQUIRE(quiet(o).stop == StopReason::MaxSteps);
    for (const char* file : {"last.safetensors", "last.state.safetensors", "best.safetensors"}) {
        INFO(file);
        const std::string bytes = read_bytes(o.out_dir + "/" + file);
        uint64_t header = 0;
        for (int i = 7; i >= 0; --i) header = header << 8 | static_cast<unsigned char>(bytes[size_t(i)]);
        const std::string json = bytes.substr(8, size_t(header));
        CHECK(is_strict_utf8(json));
        CHECK(json.find("data-\xEF\xBF\xBDt\xEF\xBF\xBD\"") != std::string::npos);
    }
    o.resume = true;
    o.max_steps = 0;
    REQUIRE(quiet(o).stop == StopReason::Finished);
    CHECK(quiet.log.str().find("warning: the run was trained on") == std::string::npos);
    CHECK(is_strict_utf8(read_bytes(o.out_dir + "/results.json")));
}

// A resume on another --data folder was accepted silently.
TEST_CASE("train: --resume on another data folder says so", "[trainer][resume]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions o = run.options;
    o.max_steps = 2;
    REQUIRE(quiet(o).stop == StopReason::MaxSteps);
    const std::string moved = run.out("moved-data");
    std::filesystem::copy(run.data_dir(), moved);
    o.resume = true;
    o.max_steps = 3;
    o.data_dir = moved;
    REQUIRE(quiet(o).stop == StopReason::MaxSteps);
    const std::string log = quiet.log.str();
    CHECK(log.find("warning: the run was trained on " + std::filesystem::weakly_canonical(run.data_dir()).string()) !=
          std::string::npos);
    CHECK(log.find("it continues on " + std::filesystem::weakly_canonical(moved).string()) != std::string::npos);
}
