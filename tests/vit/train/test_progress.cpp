// test_progress.cpp — the progress bar, the epoch line and their timing rules
// (vit/train/progress.h): pure functions of counts and times, and a reporter driven with
// explicit clock values.
#include <cmath>
#include <limits>
#include <sstream>

#include "patchgrad/vit/train/progress.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {

int count_of(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

ProgressLine line_at(int64_t step, int64_t steps) {
    ProgressLine line;
    line.epoch = 3;
    line.epochs = 100;
    line.step = step;
    line.steps = steps;
    line.loss = 1.2341;
    line.accuracy = 0.4562;
    line.images_per_second = 812.4;
    line.eta_seconds = 42.3;
    return line;
}

}  // namespace

TEST_CASE("format_duration: m:ss below an hour, h:mm:ss from there, -:-- when unknown", "[progress]") {
    CHECK(format_duration(0) == "0:00");
    CHECK(format_duration(42.4) == "0:42");
    CHECK(format_duration(59.5) == "1:00");
    CHECK(format_duration(725) == "12:05");
    CHECK(format_duration(3599.4) == "59:59");
    CHECK(format_duration(3599.6) == "1:00:00");
    CHECK(format_duration(3723) == "1:02:03");
    CHECK(format_duration(36000) == "10:00:00");
    CHECK(format_duration(-1) == "-:--");
    CHECK(format_duration(std::nan("")) == "-:--");
    CHECK(format_duration(std::numeric_limits<double>::infinity()) == "-:--");
}

TEST_CASE("progress_bar: filled in proportion, clamped, any width", "[progress]") {
    CHECK(progress_bar(0, 352, 10) == "[..........]");
    CHECK(progress_bar(170, 352, 18) == "[#########.........]");
    CHECK(progress_bar(352, 352, 10) == "[##########]");
    CHECK(progress_bar(1, 3, 3) == "[#..]");
    CHECK(progress_bar(500, 352, 4) == "[####]");
    CHECK(progress_bar(-5, 352, 4) == "[....]");
    CHECK(progress_bar(1, 2).size() == 22);
    require_error([] { progress_bar(1, 0); }, {"progress_bar", "total 0"});
    require_error([] { progress_bar(1, 5, 0); }, {"progress_bar", "width 0"});
}

TEST_CASE("eta_seconds and per_second: the average pace so far", "[progress]") {
    CHECK(std::isnan(eta_seconds(0, 10, 5)));
    CHECK(eta_seconds(5, 10, 5) == 5);
    CHECK(eta_seconds(1, 352, 2) == 702);
    CHECK(eta_seconds(10, 10, 5) == 0);
    CHECK(eta_seconds(12, 10, 5) == 0);
    CHECK(per_second(128, 0.5) == 256);
    CHECK(per_second(128, 0) == 0);
}

TEST_CASE("format_epoch_line: the evaluation, the times, and the time to go until the last epoch", "[progress]") {
    EpochRecord r;
    r.epoch = 2;
    r.train_loss = 1.86861;
    r.train_acc = 0.3531;
    r.eval_set = "validation";
    r.eval_loss = 1.57049;
    r.eval_acc = 0.4402;
    r.lr = 0.002;
    r.epoch_seconds = 57.2;
    r.img_per_s = 887.3;
    r.elapsed_seconds = 120.4;
    const std::string head = "epoch 2/33: train loss 1.8686 acc 35.3% | validation loss 1.5705 acc 44.0%";
    const std::string tail = " | lr 0.002 | 0:57 (887 img/s), elapsed 2:00";
    CHECK(format_epoch_line(r, 33, true, 1880.4) == head + " (best)" + tail + ", 31:20 to go");
    CHECK(format_epoch_line(r, 33, false, 3 * 3600 + 61) == head + tail + ", 3:01:01 to go");
    CHECK(format_epoch_line(r, 33, false, std::nan("")) == head + tail);
    r.epoch = 33;
    CHECK(format_epoch_line(r, 33, false, 0) == "epoch 33/33" + head.substr(std::string("epoch 2/33").size()) + tail);
}

TEST_CASE("format_progress: the terminal line with a bar, the log line without", "[progress]") {
    CHECK(format_progress(line_at(170, 352), true) ==
          "epoch 3/100 [##########..........] 170/352 loss 1.234 acc 45.6% 812 img/s ETA 0:42");
    CHECK(format_progress(line_at(170, 352), false) ==
          "epoch 3/100 step 170/352 loss 1.234 acc 45.6% 812 img/s ETA 0:42");
    ProgressLine unknown = line_at(0, 352);
    unknown.eta_seconds = std::nan("");
    CHECK(format_progress(unknown, false).find("ETA -:--") != std::string::npos);
}

TEST_CASE("default_log_every: about ten lines an epoch", "[progress]") {
    CHECK(default_log_every(352) == 36);
    CHECK(default_log_every(100) == 10);
    CHECK(default_log_every(11) == 2);
    CHECK(default_log_every(5) == 1);
    CHECK(default_log_every(0) == 1);
}

TEST_CASE("ProgressReporter: on a terminal redrawn in place at most every 0.1 s, and at the end", "[progress]") {
    std::ostringstream os;
    ProgressReporter reporter(os, true, 0, 0.1);
    CHECK(reporter.update(line_at(1, 5), 0.00));
    CHECK_FALSE(reporter.update(line_at(2, 5), 0.05));
    CHECK(reporter.update(line_at(3, 5), 0.11));
    CHECK_FALSE(reporter.update(line_at(4, 5), 0.12));
    CHECK(reporter.update(line_at(5, 5), 0.13));  // the last step is always shown
    const std::string text = os.str();
    CHECK(count_of(text, "\r") == 3);
    CHECK(count_of(text, "\n") == 0);
    CHECK(text.find("[####################] 5/5") != std::string::npos);
    reporter.clear();
    CHECK(os.str().substr(text.size()) == "\r\033[K");
}

TEST_CASE("ProgressReporter: in a pipe a plain line every log_every steps and at the end", "[progress]") {
    std::ostringstream os;
    ProgressReporter reporter(os, false, 3);
    int drawn = 0;
    for (int64_t step = 1; step <= 7; ++step) drawn += reporter.update(line_at(step, 7), 0.001 * double(step));
    CHECK(drawn == 3);  // steps 3, 6 and 7
    const std::string text = os.str();
    CHECK(count_of(text, "\n") == 3);
    CHECK(count_of(text, "\r") == 0);
    CHECK(text.find("step 3/7") != std::string::npos);
    CHECK(text.find("step 6/7") != std::string::npos);
    CHECK(text.find("step 7/7") != std::string::npos);
    reporter.clear();
    CHECK(os.str() == text);  // nothing to erase in a log

    std::ostringstream defaults;
    ProgressReporter every_tenth(defaults, false);
    for (int64_t step = 1; step <= 100; ++step) every_tenth.update(line_at(step, 100), 0);
    CHECK(count_of(defaults.str(), "\n") == 10);
}
