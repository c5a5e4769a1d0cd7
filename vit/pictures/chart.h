// chart.h — line and scatter charts drawn with canvas.h: the training curves `patchgrad
// train` writes next to its metrics (loss on the left, accuracy on the right: hconcat two
// charts and save()), and `patchgrad inspect`'s mean attention distance per head against
// layer depth (one dot per head: a Series with points = true).
//
// A chart has a title, a frame around the plot area with "nice" ticks (steps of 1, 2 or 5
// times a power of ten) labelled on both axes, a light grid at the ticks, axis labels, and a
// legend in whichever corner of the plot area hides the least of the data. Series colours
// come from the Okabe-Ito palette, which stays distinguishable with the common forms of
// colour blindness.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "patchgrad/vit/pictures/canvas.h"

namespace patchgrad {

struct Series {
    std::string name;          // the legend entry; series without a name are left out of the legend
    std::vector<double> x, y;  // equal lengths; a point with a non-finite x or y is skipped
    bool points = false;       // a dot per point (scatter) instead of a line through them
};

// The ticks for an axis showing [low, high]: every multiple of `step` from the largest one
// <= low to the smallest one >= high, where step is the smallest of 1, 2, 5 x 10^k that
// needs at most max_ticks of them. 0..1 gives 0, 0.2, ..., 1; 0..37 gives 0, 10, 20, 30, 40;
// 1..12 (layers) gives 0, 2, ..., 12. A range with low == high (to 1e-9 relative) is
// widened by 10% of |low| on each side (to [-1, 1] around 0), so a constant curve sits
// mid-axis. Throws std::invalid_argument for non-finite bounds, low > high, max_ticks
// outside [3, 1000], or a span outside [1e-200, 1e200].
struct Ticks {
    std::vector<double> values;  // ascending, at least 2
    double step = 1;             // m x 10^k, m in {1, 2, 5}: exact, unlike values[1] - values[0]
};
Ticks nice_ticks(double low, double high, int max_ticks = 7);

// A tick value written with the decimals its step needs: tick_label(0.4, 0.2) = "0.4",
// tick_label(1, 0.25) = "1.00", tick_label(40, 10) = "40". Values of 1e9 or more, and steps
// that need more than 6 decimals, are written as "%g" with enough significant digits to
// tell neighbouring ticks apart: "3e+09", "1.5e-09", "1000000000.5".
std::string tick_label(double value, double step);

// The colour of the i-th series: Okabe-Ito blue, vermillion, bluish green, reddish purple,
// orange, sky blue, black, then again from the start.
Rgb series_colour(size_t index);

// A width x height chart of `series` (in order; later ones drawn on top). Both axes span the
// nice ticks around all finite points; with none (no series, empty or all-NaN ones) the axes
// show [0, 1]. Throws std::invalid_argument if a series' x and y differ in length, the image
// is smaller than 160 x 120, or the tick labels leave the plot area less than 32 pixels.
Image line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                 const std::vector<Series>& series, int width = 640, int height = 400);

}  // namespace patchgrad
