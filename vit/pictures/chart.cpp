// chart.cpp — nice ticks, axes, grid, series and legend of a chart; see chart.h.
#include "patchgrad/vit/pictures/chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "patchgrad/autograd/check.h"

namespace patchgrad {

namespace {

constexpr Rgb kGridColour{225, 225, 225};
constexpr Rgb kLegendBorder{170, 170, 170};
constexpr int kMinWidth = 160, kMinHeight = 120;
constexpr int kInset = 8;  // pixels between the frame and the outermost ticks
constexpr int kTickLength = 4;
constexpr int kLineWidth = 2;
constexpr int kDotRadius = 3;      // scatter dots
constexpr int kLoneDotRadius = 2;  // a line-series point with no finite neighbour to join

// Numbers in error messages: 6 significant digits, "nan", "inf".
std::string format_g(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// 10^e, exact for |e| <= 22 (powers of ten up to 1e22 are exact doubles).
double power_of_ten(int e) { return std::pow(10.0, e); }

// k * m * 10^e with a single rounding: dividing by an exact 10^-e, rather than multiplying by
// the inexact 10^e, makes 3 * 0.1 come out as 0.3 and not 0.30000000000000004.
double tick_value(double k, int m, int e) { return e < 0 ? k * m / power_of_ten(-e) : k * m * power_of_ten(e); }

// Maps data to pixels in [first, last] (last < first for the y axis, which grows upwards).
struct Scale {
    double low, high;
    int first, last;
    int operator()(double v) const {
        return first + static_cast<int>(std::lround((v - low) / (high - low) * (last - first)));
    }
};

// Non-background pixels of `image` in a rectangle: how much of the drawn data a legend there would hide.
int ink_under(const Image& image, int x, int y, int w, int h) {
    int count = 0;
    for (int yy = y; yy < y + h; ++yy)
        for (int xx = x; xx < x + w; ++xx) {
            const Rgb c = get_pixel(image, xx, yy);
            if (c != kWhite && c != kGridColour) ++count;
        }
    return count;
}

}  // namespace

Ticks nice_ticks(double low, double high, int max_ticks) {
    if (!std::isfinite(low) || !std::isfinite(high) || low > high)
        fail("nice_ticks: range [", format_g(low), ", ", format_g(high), "] must be finite with low <= high");
    // Two ticks cannot cover a range around 0 (that takes -step, 0, step); three always can.
    check(max_ticks >= 3 && max_ticks <= 1000, "nice_ticks: max_ticks must be in [3, 1000], got ", max_ticks);
    // A range this narrow is a constant plus rounding noise. Widening it also keeps the
    // multipliers k below ~1e13, where doubles still count every integer.
    if (high - low <= 1e-9 * std::max(std::abs(low), std::abs(high))) {
        const double pad = low == 0 ? 1 : 0.1 * std::abs(low);
        low -= pad;
        high += pad;
    }
    const double span = high - low;
    // Beyond these the powers of ten below overflow or underflow.
    if (!(span >= 1e-200 && span <= 1e200))
        fail("nice_ticks: range [", format_g(low), ", ", format_g(high),
             "] is too narrow or too wide to label (span outside [1e-200, 1e200])");
    // Start one decade below the step that would give max_ticks intervals and walk up
    // 1, 2, 5, 10, 20, ...: the first step that fits is the smallest.
    int e = static_cast<int>(std::floor(std::log10(span / max_ticks))) - 1;
    for (;; ++e)
        for (int m : {1, 2, 5}) {
            // The outermost multiples: the largest k with tick k <= low, the smallest with tick
            // k >= high. Dividing may land on the wrong side of an integer (0.6 / 0.1 =
            // 5.999999999999999), so the candidates are checked as tick values.
            const double step = tick_value(1, m, e);
            double k_low = std::floor(low / step), k_high = std::ceil(high / step);
            if (tick_value(k_low + 1, m, e) <= low) ++k_low;
            if (tick_value(k_low, m, e) > low) --k_low;
            if (tick_value(k_high - 1, m, e) >= high) --k_high;
            if (tick_value(k_high, m, e) < high) ++k_high;
            if (k_high - k_low + 1 > max_ticks) continue;
            Ticks ticks;
            ticks.step = step;
            const int count = static_cast<int>(k_high - k_low) + 1;
            for (int i = 0; i < count; ++i)
                ticks.values.push_back(tick_value(k_low + i, m, e) + 0.0);  // + 0.0: no "-0"
            return ticks;
        }
}

std::string tick_label(double value, double step) {
    if (!std::isfinite(value) || !std::isfinite(step) || step <= 0)
        fail("tick_label: value ", format_g(value), " and step ", format_g(step), " must be finite with step > 0");
    if (std::abs(value) < 1e-9 * step) value = 0;
    // The fewest decimals that write the step exactly: 0.2 -> 1, 0.25 -> 2, 10 -> 0.
    int decimals = 0;
    while (decimals < 7) {
        const double scaled = step * power_of_ten(decimals);
        if (std::abs(scaled - std::round(scaled)) <= 1e-6 * scaled) break;
        ++decimals;
    }
    char buf[48];
    if (decimals < 7 && std::abs(value) < 1e9) {
        std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    } else {
        // Significant digits from the value's leading digit down to the step's.
        const int digits = value == 0 ? 1
                                      : std::clamp(static_cast<int>(std::floor(std::log10(std::abs(value)))) -
                                                       static_cast<int>(std::floor(std::log10(step))) + 1,
                                                   1, 17);
        std::snprintf(buf, sizeof buf, "%.*g", digits, value);
    }
    return buf;
}

Rgb series_colour(size_t index) {
    // Okabe & Ito (2008), "Color Universal Design"; their yellow is left out: too faint on white.
    static constexpr std::array<Rgb, 7> kPalette = {{
        {0, 114, 178},
        {213, 94, 0},
        {0, 158, 115},
        {204, 121, 167},
        {230, 159, 0},
        {86, 180, 233},
        {0, 0, 0},
    }};
    return kPalette[index % kPalette.size()];
}

Image line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                 const std::vector<Series>& series, int width, int height) {
    check(width >= kMinWidth && height >= kMinHeight, "line_chart: '", title, "': size ", width, "x", height,
          " is too small, need at least ", kMinWidth, "x", kMinHeight);
    double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low, y_low = x_low, y_high = -x_low;
    for (const Series& s : series) {
        check(s.x.size() == s.y.size(), "line_chart: '", title, "': series '", s.name, "' has ", s.x.size(),
              " x values and ", s.y.size(), " y values");
        for (size_t i = 0; i < s.x.size(); ++i)
            if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
                x_low = std::min(x_low, s.x[i]);
                x_high = std::max(x_high, s.x[i]);
                y_low = std::min(y_low, s.y[i]);
                y_high = std::max(y_high, s.y[i]);
            }
    }
    if (x_low > x_high) {  // nothing to draw: show empty axes
        x_low = y_low = 0;
        x_high = y_high = 1;
    }
    const Ticks xs = nice_ticks(x_low, x_high), ys = nice_ticks(y_low, y_high);

    // Layout, outside in: title on top; y label (turned), y tick labels and ticks on the left;
    // ticks, x tick labels and x label at the bottom.
    const int text_h = text_height(1), title_h = text_height(2);
    std::vector<std::string> x_text, y_text;
    int y_text_w = 0;
    for (double t : xs.values) x_text.push_back(tick_label(t, xs.step));
    for (double t : ys.values) {
        y_text.push_back(tick_label(t, ys.step));
        y_text_w = std::max(y_text_w, text_width(y_text.back()));
    }
    const int top = title.empty() ? 12 : 8 + title_h + 8;
    const int left = 8 + (y_label.empty() ? 0 : text_h + 8) + y_text_w + 3 + kTickLength;
    const int bottom = kTickLength + 3 + text_h + (x_label.empty() ? 0 : 6 + text_h) + 8;
    const int right = std::max(12, text_width(x_text.back()) / 2 + 6);
    const int plot_x0 = left, plot_y0 = top, plot_x1 = width - right - 1, plot_y1 = height - bottom - 1;
    check(plot_x1 - plot_x0 >= 4 * kInset && plot_y1 - plot_y0 >= 4 * kInset, "line_chart: '", title, "': size ", width,
          "x", height, " leaves no room for the plot next to its labels");
    const Scale to_x{xs.values.front(), xs.values.back(), plot_x0 + kInset, plot_x1 - kInset};
    const Scale to_y{ys.values.front(), ys.values.back(), plot_y1 - kInset, plot_y0 + kInset};

    Image image = make_image(width, height);
    for (size_t i = 0; i < xs.values.size(); ++i) {
        const int px = to_x(xs.values[i]);
        draw_line(image, px, plot_y0, px, plot_y1, kGridColour);
        draw_line(image, px, plot_y1 + 1, px, plot_y1 + kTickLength, kBlack);
        draw_text(image, px - text_width(x_text[i]) / 2, plot_y1 + kTickLength + 3, x_text[i], kBlack);
    }
    for (size_t i = 0; i < ys.values.size(); ++i) {
        const int py = to_y(ys.values[i]);
        draw_line(image, plot_x0, py, plot_x1, py, kGridColour);
        draw_line(image, plot_x0 - kTickLength, py, plot_x0 - 1, py, kBlack);
        // Capitals and digits fill rows 0-6 of the 8-row cell: row 3 is their middle.
        draw_text(image, plot_x0 - kTickLength - 3 - text_width(y_text[i]), py - 3, y_text[i], kBlack);
    }

    for (size_t k = 0; k < series.size(); ++k) {
        const Series& s = series[k];
        const Rgb colour = series_colour(k);
        auto finite = [&s](size_t i) { return i < s.x.size() && std::isfinite(s.x[i]) && std::isfinite(s.y[i]); };
        for (size_t i = 0; i < s.x.size(); ++i) {
            if (!finite(i)) continue;
            const int px = to_x(s.x[i]), py = to_y(s.y[i]);
            if (s.points) {
                fill_circle(image, px, py, kDotRadius, colour);
            } else if (finite(i + 1)) {
                draw_line(image, px, py, to_x(s.x[i + 1]), to_y(s.y[i + 1]), colour, kLineWidth);
            } else if (i == 0 || !finite(i - 1)) {
                fill_circle(image, px, py, kLoneDotRadius, colour);
            }
        }
    }
    draw_rect(image, plot_x0, plot_y0, plot_x1 - plot_x0 + 1, plot_y1 - plot_y0 + 1, kBlack);

    std::vector<size_t> named;
    int name_w = 0;
    for (size_t k = 0; k < series.size(); ++k)
        if (!series[k].name.empty()) {
            named.push_back(k);
            name_w = std::max(name_w, text_width(series[k].name));
        }
    if (!named.empty()) {
        const int pad = 6, sample_w = 18, row_h = text_h + 4;
        const int box_w = std::min(pad + sample_w + 6 + name_w + pad, plot_x1 - plot_x0 - 2 * pad);
        const int box_h = std::min(pad + static_cast<int>(named.size()) * row_h - 4 + pad, plot_y1 - plot_y0 - 2 * pad);
        // Upper right, upper left, lower right, lower left: the first that hides the fewest drawn pixels.
        const std::array<std::array<int, 2>, 4> corners = {{{plot_x1 - pad - box_w, plot_y0 + pad},
                                                            {plot_x0 + pad + 1, plot_y0 + pad},
                                                            {plot_x1 - pad - box_w, plot_y1 - pad - box_h},
                                                            {plot_x0 + pad + 1, plot_y1 - pad - box_h}}};
        int best = 0, best_ink = std::numeric_limits<int>::max();
        for (int c = 0; c < 4; ++c) {
            const int ink = ink_under(image, corners[c][0], corners[c][1], box_w, box_h);
            if (ink < best_ink) {
                best = c;
                best_ink = ink;
            }
        }
        const int bx = corners[best][0], by = corners[best][1];
        fill_rect(image, bx, by, box_w, box_h, kWhite);
        draw_rect(image, bx, by, box_w, box_h, kLegendBorder);
        for (size_t r = 0; r < named.size(); ++r) {
            const Series& s = series[named[r]];
            const Rgb colour = series_colour(named[r]);
            const int row_y = by + pad + static_cast<int>(r) * row_h, mid_y = row_y + 3;
            if (s.points)
                fill_circle(image, bx + pad + sample_w / 2, mid_y, kDotRadius, colour);
            else
                draw_line(image, bx + pad, mid_y, bx + pad + sample_w - 1, mid_y, colour, kLineWidth);
            draw_text(image, bx + pad + sample_w + 6, row_y, s.name, kBlack);
        }
    }

    const int plot_mid_x = (plot_x0 + plot_x1) / 2, plot_mid_y = (plot_y0 + plot_y1) / 2;
    if (!title.empty()) draw_text(image, plot_mid_x - text_width(title, 2) / 2, 8, title, kBlack, 2);
    if (!x_label.empty()) draw_text(image, plot_mid_x - text_width(x_label) / 2, height - 8 - text_h, x_label, kBlack);
    if (!y_label.empty()) draw_text_vertical(image, 8, plot_mid_y - text_width(y_label) / 2, y_label, kBlack);
    return image;
}

}  // namespace patchgrad
