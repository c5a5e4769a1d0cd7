// Tests for vit/cli/compare.cpp end to end: tiny runs trained on synthetic CIFAR-10 (and a
// metrics.csv as vit/scripts/train_torch.py writes it), then `patchgrad compare` on their
// folders, called as main() calls it, its output captured.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catch.h"
#include "cli_test_util.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/pictures/image_file.h"
#include "patchgrad/vit/summary.h"
#include "patchgrad/vit/train/metrics.h"
#include "test_util.h"
#include "vit/trainer_test_util.h"

namespace patchgrad::cli {
namespace {

using namespace patchgrad::test;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// "  NAME (" up to the end of its line in compare's table.
std::string table_line(const std::string& out, const std::string& name) {
    const size_t at = out.find("  " + name + " (");
    REQUIRE(at != std::string::npos);
    return out.substr(at, out.find('\n', at) - at);
}

TEST_CASE("compare: runs against epochs and against compute, beside a train_torch.py run", "[cli][compare]") {
    TinyRun run;
    QuietTrain quiet;
    TrainOptions a = run.learning_only(3);
    a.out_dir = run.out("runs/a");
    const TrainResult ra = quiet(a);
    TrainOptions b = run.learning_only(2);
    b.out_dir = run.out("runs/b/");  // a trailing slash: the label is still "b"
    b.config.patch_dropout = 0.5f;   // a cheaper image pass
    quiet(b);
    TrainOptions last_full = b;  // the same, its last epoch on every patch
    last_full.full_patch_epochs = 1;
    last_full.out_dir = run.out("runs/c");
    quiet(last_full);
    const std::string chart = run.out("chart.png");
    {
        Captured c;
        REQUIRE(compare_command({"--runs", a.out_dir + "," + b.out_dir, "--out", chart}) == 0);
        const std::string out = c.out.str();
        // Last and best accuracy from the run's own history; metrics.csv keeps them exactly
        // enough for two decimals of a percentage.
        double best = 0;
        int64_t best_epoch = 0;
        for (const EpochRecord& r : ra.history)
            if (r.eval_acc > best) best = r.eval_acc, best_epoch = r.epoch;
        char expected[96];
        std::snprintf(expected, sizeof expected, "patchgrad): 3, %.2f%% and %.2f%% (%lld)",
                      100 * ra.history.back().eval_acc, 100 * best, static_cast<long long>(best_epoch));
        CHECK(contains(table_line(out, "a"), expected));
        CHECK(contains(table_line(out, "b"), "patchgrad): 2, "));
        CHECK(contains(out, "validation accuracy last and best"));
        const Picture p = read_picture(chart);
        CHECK(p.width == 800);
        CHECK(p.height == 480);
    }
    {
        // Compute: epochs x images per epoch x GFLOP per pass. The tiny runs' 40 images are
        // not CIFAR-10's, which the default would assume: refused, naming the way out.
        Captured c;
        require_error(
            [&] {
                compare_command({"--runs", a.out_dir, "--x", "tflop", "--out", chart});
            },
            {run.out("runs/a"), "3 epochs took 15 steps of batch 8", "--images-per-epoch"});
        REQUIRE(compare_command({"--runs", a.out_dir + "," + b.out_dir, "--x", "tflop", "--images-per-epoch", "40",
                                 "--out", chart}) == 0);
        char expected[96];
        std::snprintf(expected, sizeof expected, "patchgrad): 3, %.4f GFLOP, %.1f TFLOP",
                      training_gflop_per_image(a.config), 3 * 40 * training_gflop_per_image(a.config) / 1000);
        CHECK(contains(table_line(c.out.str(), "a"), expected));
        std::snprintf(expected, sizeof expected, "patchgrad): 2, %.4f GFLOP,", training_gflop_per_image(b.config));
        CHECK(contains(table_line(c.out.str(), "b"), expected));
        CHECK(training_gflop_per_image(b.config) < training_gflop_per_image(a.config));
        // c's first epoch at b's cost per pass, its second at a's (every patch).
        Captured with_c;
        REQUIRE(compare_command(
                    {"--runs", last_full.out_dir, "--x", "tflop", "--images-per-epoch", "40", "--out", chart}) == 0);
        std::snprintf(expected, sizeof expected, "patchgrad): 2, %.4f then %.4f GFLOP, %.1f TFLOP",
                      training_gflop_per_image(b.config), training_gflop_per_image(a.config),
                      40 * (training_gflop_per_image(b.config) + training_gflop_per_image(a.config)) / 1000);
        CHECK(contains(table_line(with_c.out.str(), "c"), expected));
    }
    {
        // A train_torch.py run beside them, against epochs; its compute is not known here.
        const std::string torch_dir = run.out("runs/torch");
        std::filesystem::create_directories(torch_dir);
        // Python's csv module ends lines with "\r\n".
        std::ofstream(torch_dir + "/metrics.csv") << "epoch,train_loss,train_acc,val_loss,val_acc,lr,elapsed_s\r\n"
                                                     "1,2.1,0.2,1.9,0.25,0.002,10.5\r\n"
                                                     "2,1.8,0.3,1.7,0.375,0.001,21.0\r\n";
        Captured c;
        REQUIRE(compare_command(
                    {"--runs", a.out_dir + "," + torch_dir, "--labels", "patchgrad,PyTorch", "--out", chart}) == 0);
        CHECK(contains(table_line(c.out.str(), "PyTorch"), "train_torch.py): 2, 37.50% and 37.50% (2)"));
        // --every: a Markdown table, blank where a run has not got that far.
        Captured table;
        REQUIRE(compare_command({"--runs", a.out_dir + "," + torch_dir, "--labels", "patchgrad,PyTorch", "--every", "2",
                                 "--out", chart}) == 0);
        CHECK(contains(table.out.str(), "| epoch | 2 | 3 |\n|---|---|---|\n| patchgrad | "));
        CHECK(contains(table.out.str(), "\n| PyTorch | 37.5% |  |\n"));
        require_error(
            [&] {
                compare_command({"--runs", torch_dir, "--x", "tflop"});
            },
            {"--x tflop", torch_dir, "train_torch.py run"});
        std::ofstream(torch_dir + "/metrics.csv") << "epoch,train_loss,train_acc,val_loss,val_acc,lr,elapsed_s\n"
                                                     "1,2.1,0.2,1.9,nan,0.002,10.5\n";
        require_error([&] { compare_command({"--runs", torch_dir}); }, {torch_dir + "/metrics.csv line 2"});
    }
}

TEST_CASE("compare: bad command lines and runs that cannot be compared are refused, named", "[cli][compare]") {
    TempDir dir;
    Captured c;
    require_error([] { compare_command({}); }, {"--runs"});
    require_error([] { compare_command({"--runs", "a,,b"}); }, {"--runs", "empty item", "'a,,b'"});
    require_error([] { compare_command({"--runs", "a,"}); }, {"--runs", "empty item"});
    require_error([] { compare_command({"--runs", "a,b", "--labels", "x"}); }, {"--labels names 1 runs", "has 2"});
    require_error([] { compare_command({"--runs", "a", "--x", "hours"}); }, {"--x", "epoch or tflop", "'hours'"});
    require_error(
        [] {
            compare_command({"--runs", "a", "--images-per-epoch", "40"});
        },
        {"--images-per-epoch", "tflop"});
    require_error(
        [&] {
            compare_command({"--runs", dir.file("nothing")});
        },
        {dir.file("nothing") + "/metrics.csv", "--out folder"});

    // A run that evaluated on the test set (--validation 0) beside one on its validation split.
    auto write_run = [&](const std::string& name, const std::string& eval_set) {
        std::filesystem::create_directories(dir.file(name));
        EpochRecord r;
        r.epoch = 1;
        r.step = 5;
        r.eval_set = eval_set;
        r.eval_acc = 0.5;
        write_metrics_csv(dir.file(name) + "/metrics.csv", {r});
        return dir.file(name);
    };
    const std::string val = write_run("val", "validation"), test = write_run("test", "test");
    require_error(
        [&] {
            compare_command({"--runs", val + "," + test, "--out", dir.file("c.png")});
        },
        {"different images", val + " its validation split", test + " its test split"});
    // --out never replaces anything but a PNG: a checkpoint named by mistake stays.
    write_bytes(dir.file("best.safetensors"), "weights");
    require_error(
        [&] {
            compare_command({"--runs", test, "--out", dir.file("best.safetensors")});
        },
        {"--out must name a .png file, got '" + dir.file("best.safetensors") + "'"});
    write_bytes(dir.file("notes.png"), "not a picture");
    require_error(
        [&] {
            compare_command({"--runs", test, "--out", dir.file("notes.png")});
        },
        {"--out " + dir.file("notes.png") + " holds something that is not a PNG", "choose another --out"});
    CHECK(read_bytes(dir.file("best.safetensors")) == "weights");
    CHECK(read_bytes(dir.file("notes.png")) == "not a picture");
    REQUIRE(compare_command({"--runs", test, "--out", dir.file("c.png")}) == 0);  // one point, drawn as a dot
    REQUIRE(compare_command({"--runs", test, "--out", dir.file("c.png")}) == 0);  // a PNG is replaced
    CHECK(contains(c.out.str(), "test accuracy last and best"));
    std::filesystem::create_directories(dir.file("empty"));
    std::ofstream(dir.file("empty") + "/metrics.csv") << kMetricsHeader << "\n";
    require_error([&] { compare_command({"--runs", dir.file("empty")}); }, {"no epoch has finished"});
}

}  // namespace
}  // namespace patchgrad::cli
