// progress.cpp — the progress and epoch lines' formatting and when ProgressReporter draws (see progress.h).
#include "patchgrad/vit/train/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "patchgrad/autograd/check.h"

namespace patchgrad {

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "-:--";
    const auto total = static_cast<long long>(std::llround(seconds));
    const long long h = total / 3600, m = total / 60 % 60, s = total % 60;
    char text[48];
    if (h > 0)
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", h, m, s);
    else
        std::snprintf(text, sizeof text, "%lld:%02lld", m, s);
    return text;
}

std::string progress_bar(int64_t done, int64_t total, int width) {
    check(total >= 1 && width >= 1, "progress_bar: total ", total, " and width ", width, " must be at least 1");
    const int64_t clamped = std::clamp<int64_t>(done, 0, total);
    const auto filled = static_cast<size_t>(std::llround(double(width) * double(clamped) / double(total)));
    return "[" + std::string(filled, '#') + std::string(static_cast<size_t>(width) - filled, '.') + "]";
}

double eta_seconds(int64_t done, int64_t total, double elapsed) {
    if (done >= total) return 0;
    if (done <= 0) return std::numeric_limits<double>::quiet_NaN();
    return elapsed * double(total - done) / double(done);
}

double per_second(double count, double seconds) { return seconds > 0 ? count / seconds : 0; }

std::string format_progress(const ProgressLine& line, bool with_bar) {
    char head[96];
    if (with_bar)
        std::snprintf(head, sizeof head, "epoch %lld/%lld %s %lld/%lld", static_cast<long long>(line.epoch),
                      static_cast<long long>(line.epochs), progress_bar(line.step, line.steps).c_str(),
                      static_cast<long long>(line.step), static_cast<long long>(line.steps));
    else
        std::snprintf(head, sizeof head, "epoch %lld/%lld step %lld/%lld", static_cast<long long>(line.epoch),
                      static_cast<long long>(line.epochs), static_cast<long long>(line.step),
                      static_cast<long long>(line.steps));
    char tail[128];
    std::snprintf(tail, sizeof tail, " loss %.3f acc %.1f%% %.0f img/s ETA %s", line.loss, 100 * line.accuracy,
                  line.images_per_second, format_duration(line.eta_seconds).c_str());
    return std::string(head) + tail;
}

std::string format_epoch_line(const EpochRecord& r, int64_t epochs, bool best, double seconds_to_go) {
    char line[256];
    std::snprintf(
        line, sizeof line,
        "epoch %lld/%lld: train loss %.4f acc %.1f%% | %s loss %.4f acc %.1f%%%s | lr %.3g | %s (%.0f img/s), "
        "elapsed %s",
        static_cast<long long>(r.epoch), static_cast<long long>(epochs), r.train_loss, 100 * r.train_acc,
        r.eval_set.c_str(), r.eval_loss, 100 * r.eval_acc, best ? " (best)" : "", r.lr,
        format_duration(r.epoch_seconds).c_str(), r.img_per_s, format_duration(r.elapsed_seconds).c_str());
    std::string out = line;
    if (r.epoch < epochs && std::isfinite(seconds_to_go)) out += ", " + format_duration(seconds_to_go) + " to go";
    return out;
}

int64_t default_log_every(int64_t steps_per_epoch) { return std::max<int64_t>(1, (steps_per_epoch + 9) / 10); }

ProgressReporter::ProgressReporter(std::ostream& os, bool terminal, int64_t log_every, double min_interval)
    : os_(os), terminal_(terminal), log_every_(log_every), min_interval_(min_interval) {}

bool ProgressReporter::update(const ProgressLine& line, double now) {
    const bool last = line.step >= line.steps;
    if (terminal_) {
        if (!last && now - last_draw_ < min_interval_) return false;
        // "\033[K" erases what a longer previous line left to the right.
        os_ << '\r' << format_progress(line, true) << "\033[K" << std::flush;
        drawn_ = true;
    } else {
        const int64_t every = log_every_ > 0 ? log_every_ : default_log_every(line.steps);
        if (!last && line.step % every != 0) return false;
        os_ << format_progress(line, false) << '\n' << std::flush;
    }
    last_draw_ = now;
    return true;
}

void ProgressReporter::clear() {
    if (terminal_ && drawn_) os_ << "\r\033[K" << std::flush;
    drawn_ = false;
}

}  // namespace patchgrad
