// progress.h — what `patchgrad train` shows while an epoch runs (a live progress bar on a
// terminal, plain periodic lines in a pipe or CI log) and the line that ends each epoch.
//
//   epoch 3/100 [#########.........] 170/352 loss 1.234 acc 45.6% 812 img/s ETA 0:42
//
// The formatting is pure functions of counts and times (tested in tests/vit/train/test_progress.cpp);
// ProgressReporter only decides when to draw. It is given the time rather than reading a
// clock, so a test can drive it step by step. On a terminal the line is redrawn in place
// with '\r' at most every `min_interval` seconds (redrawing more often than the eye can
// follow only costs time); elsewhere a '\r' would pile up in the log file, so there it
// writes one ordinary line every `log_every` steps.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "patchgrad/vit/train/metrics.h"

namespace patchgrad {

// A duration as a clock shows it: "0:42", "12:05", "1:02:03" (minutes:seconds below an hour,
// hours:minutes:seconds from there), rounded to the nearest second; "-:--" for a negative
// or non-finite value (an ETA that cannot be estimated yet).
std::string format_duration(double seconds);

// "[#####...............]": `width` cells, of which round(width * done / total) are filled;
// done is clamped to [0, total]. Throws std::invalid_argument for total < 1 or width < 1.
std::string progress_bar(int64_t done, int64_t total, int width = 20);

// Seconds still to go if the rest runs at the average pace so far: elapsed * (total - done)
// / done. NaN while done <= 0 (no pace known yet); 0 once done >= total.
double eta_seconds(int64_t done, int64_t total, double elapsed);

// count / seconds, 0 when no time has passed (the first redraw comes right after a step).
double per_second(double count, double seconds);

// What one progress line shows.
struct ProgressLine {
    int64_t epoch = 1, epochs = 1;  // 1-based, as printed
    int64_t step = 0, steps = 1;    // optimizer steps done in this epoch, of `steps`
    double loss = 0;                // the epoch's mean training loss so far
    double accuracy = 0;            // and accuracy, a fraction
    double images_per_second = 0;
    double eta_seconds = 0;  // for the rest of the epoch
};

// The terminal form (with the bar) or the log form: "epoch 3/100 step 170/352 loss 1.234
// acc 45.6% 812 img/s ETA 0:42".
std::string format_progress(const ProgressLine& line, bool with_bar);

// The line printed after each epoch of `epochs`: "epoch 2/33: train loss 1.8686 acc 35.3% |
// validation loss 1.5705 acc 44.0% (best) | lr 0.002 | 0:57 (887 img/s), elapsed 2:00, 31:20
// to go". `best` adds "(best)"; the time to go is left out after the last epoch and while it
// cannot be estimated (not finite).
std::string format_epoch_line(const EpochRecord& r, int64_t epochs, bool best, double seconds_to_go);

// About ten log lines per epoch: ceil(steps / 10), at least 1.
int64_t default_log_every(int64_t steps_per_epoch);

class ProgressReporter {
public:
    // terminal: redraw in place (isatty); log_every: steps between lines when not a
    // terminal, 0 for default_log_every.
    ProgressReporter(std::ostream& os, bool terminal, int64_t log_every = 0, double min_interval = 0.1);

    // Shows `line` if it is due: on a terminal when min_interval has passed since the last
    // redraw or the epoch is complete; otherwise when line.step is a multiple of log_every
    // or the last step. `now` is in seconds on any clock that only moves forward.
    // Returns whether it drew.
    bool update(const ProgressLine& line, double now);
    // Erases the live line (terminal only), so the epoch summary printed next starts on a
    // clean line.
    void clear();

private:
    std::ostream& os_;
    bool terminal_;
    int64_t log_every_;
    double min_interval_;
    double last_draw_ = -1e300;
    bool drawn_ = false;  // a live line is on the screen
};

}  // namespace patchgrad
