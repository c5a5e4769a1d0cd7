// Tests for vit/pictures/chart.cpp: nice ticks and their labels, and charts that draw their series in
// the palette colours whatever the input (empty, NaN, one point, constant), rejecting only
// malformed series and sizes.
#include "patchgrad/vit/pictures/chart.h"

#include <cmath>
#include <set>
#include <string>

#include "catch.h"
#include "patchgrad/autograd/rng.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

void check_ticks(double low, double high, const std::vector<double>& expected, int max_ticks = 7) {
    INFO("[" << low << ", " << high << "], at most " << max_ticks);
    const std::vector<double> ticks = nice_ticks(low, high, max_ticks).values;
    REQUIRE(ticks.size() == expected.size());
    for (size_t i = 0; i < ticks.size(); ++i) CHECK(ticks[i] == Approx(expected[i]).margin(1e-15));
}

int count_colour(const Image& image, Rgb colour) {
    int n = 0;
    for (int y = 0; y < image.height; ++y)
        for (int x = 0; x < image.width; ++x) n += get_pixel(image, x, y) == colour;
    return n;
}

TEST_CASE("chart: nice_ticks known answers", "[vit][chart]") {
    check_ticks(0, 1, {0, 0.2, 0.4, 0.6, 0.8, 1});
    check_ticks(0, 37, {0, 10, 20, 30, 40});
    check_ticks(-37, 0, {-40, -30, -20, -10, 0});
    check_ticks(1, 12, {0, 2, 4, 6, 8, 10, 12});
    check_ticks(0.35, 2.4, {0, 0.5, 1, 1.5, 2, 2.5});
    check_ticks(-0.3, 0.7, {-0.4, -0.2, 0, 0.2, 0.4, 0.6, 0.8});
    check_ticks(-0.3, 0.7, {-0.5, 0, 0.5, 1}, 6);
    check_ticks(0.6, 1.2, {0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2});  // 0.6 / 0.1 is 5.999...: no extra tick
    check_ticks(0.999, 1.001, {0.999, 0.9995, 1, 1.0005, 1.001});
    check_ticks(1e-9, 3e-9, {1e-9, 1.5e-9, 2e-9, 2.5e-9, 3e-9});
    check_ticks(2e5, 9.1e5, {2e5, 4e5, 6e5, 8e5, 1e6});
    // Constant ranges are widened so the value sits in the middle.
    check_ticks(0, 0, {-1, -0.5, 0, 0.5, 1});
    check_ticks(5, 5, {4.4, 4.6, 4.8, 5, 5.2, 5.4, 5.6});
    check_ticks(-2, -2, {-2.2, -2.1, -2, -1.9, -1.8});
    // Exact decimals: 3 * 0.1 is 0.3, not 0.30000000000000004.
    CHECK(nice_ticks(0, 0.6).values[3] == 0.3);
    CHECK(nice_ticks(0, 0.6).step == 0.1);
    CHECK(std::signbit(nice_ticks(-1, 1).values[2]) == false);
    // Far from 0 the differences of ticks lose digits; the step does not.
    const Ticks far = nice_ticks(123456.789, 123456.790);
    CHECK(far.step == 0.0002);
    CHECK(far.values.front() == 123456.789);
    CHECK(far.values.size() == 6);
    CHECK(tick_label(far.values[1], far.step) == "123456.7892");
    // Below 1e-9 relative a range counts as constant.
    check_ticks(123456789, 123456789.01, {1.1e8, 1.15e8, 1.2e8, 1.25e8, 1.3e8, 1.35e8, 1.4e8});
}

TEST_CASE("chart: nice_ticks cover the range in at most max_ticks 1-2-5 steps", "[vit][chart]") {
    Rng rng(2024);
    for (int trial = 0; trial < 2000; ++trial) {
        const double centre = rng.uniform(-1, 1) * std::pow(10.0, rng.uniform(-6, 6));
        const double low = centre, high = centre + std::pow(10.0, rng.uniform(-8, 7));
        const int max_ticks = trial % 100 == 0 ? 1000 : 3 + static_cast<int>(rng.below(8));
        INFO("[" << low << ", " << high << "], at most " << max_ticks);
        const Ticks ticks = nice_ticks(low, high, max_ticks);
        const std::vector<double>& t = ticks.values;
        const double step = ticks.step;
        const bool widened = high - low <= 1e-9 * std::max(std::abs(low), std::abs(high));
        REQUIRE(t.size() >= 2);
        CHECK(static_cast<int>(t.size()) <= max_ticks);
        CHECK(t.front() <= low + 1e-9 * (high - low));
        CHECK(t.back() >= high - 1e-9 * (high - low));
        const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
        CHECK((std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9));
        const double magnitude = std::max(std::abs(t.front()), std::abs(t.back()));
        for (size_t i = 0; i < t.size(); ++i)  // multiples of the step, to rounding
            CHECK(std::abs(t[i] - (t[0] + double(i) * step)) <= 1e-12 * magnitude + 1e-9 * step);
        // Labels tell every two ticks apart.
        std::set<std::string> labels;
        for (double v : t) labels.insert(tick_label(v, step));
        CHECK(labels.size() == t.size());
        // No tick beyond the outermost ones needed (unless a constant range was widened).
        if (!widened) {
            CHECK(t.front() > low - step);
            CHECK(t.back() < high + step);
        }
    }
}

TEST_CASE("chart: nice_ticks and tick_label reject nonsense", "[vit][chart][errors]") {
    require_error([] { nice_ticks(NAN, 1); }, {"nice_ticks", "nan", "finite"});
    require_error([] { nice_ticks(0, INFINITY); }, {"nice_ticks", "inf"});
    require_error([] { nice_ticks(2, 1); }, {"nice_ticks", "[2, 1]", "low <= high"});
    require_error([] { nice_ticks(-1, 1, 2); }, {"nice_ticks", "max_ticks", "[3, 1000]", "got 2"});
    require_error([] { nice_ticks(-1, 1, 1001); }, {"nice_ticks", "max_ticks", "got 1001"});
    require_error([] { nice_ticks(-1e300, 1e300); }, {"nice_ticks", "too narrow or too wide"});
    require_error([] { tick_label(1, 0); }, {"tick_label", "step 0"});
}

TEST_CASE("chart: tick labels carry the decimals of their step", "[vit][chart]") {
    CHECK(tick_label(0.4, 0.2) == "0.4");
    CHECK(tick_label(0, 0.2) == "0.0");
    CHECK(tick_label(-1e-17, 0.2) == "0.0");  // no "-0.0" from rounding noise
    CHECK(tick_label(1, 0.25) == "1.00");
    CHECK(tick_label(40, 10) == "40");
    CHECK(tick_label(-2.5, 0.5) == "-2.5");
    CHECK(tick_label(0.9995, 0.0005) == "0.9995");
    CHECK(tick_label(3e9, 1e9) == "3e+09");
    CHECK(tick_label(1.5e-9, 5e-10) == "1.5e-09");
    CHECK(tick_label(1000000000.5, 0.5) == "1000000000.5");
    CHECK(tick_label(0, 1e-9) == "0");
}

TEST_CASE("chart: the palette has seven distinct colours and cycles", "[vit][chart]") {
    std::set<std::tuple<int, int, int>> colours;
    for (size_t i = 0; i < 7; ++i) {
        const Rgb c = series_colour(i);
        colours.insert({c.r, c.g, c.b});
        CHECK(c != kWhite);
    }
    CHECK(colours.size() == 7);
    CHECK(series_colour(7) == series_colour(0));
    CHECK(series_colour(0) == Rgb{0, 114, 178});
}

TEST_CASE("chart: a chart has the requested size and draws every series in its colour", "[vit][chart]") {
    Series loss{"train", {}, {}}, val{"val", {}, {}};
    for (int e = 1; e <= 30; ++e) {
        loss.x.push_back(e);
        loss.y.push_back(2.3 * std::exp(-e / 8.0) + 0.3);
        val.x.push_back(e);
        val.y.push_back(2.0 * std::exp(-e / 9.0) + 0.5);
    }
    const Image chart = line_chart("Loss", "epoch", "loss", {loss, val}, 500, 300);
    CHECK(chart.width == 500);
    CHECK(chart.height == 300);
    CHECK(count_colour(chart, series_colour(0)) > 200);  // 2-pixel lines across most of the plot
    CHECK(count_colour(chart, series_colour(1)) > 200);
    CHECK(count_colour(chart, series_colour(2)) == 0);
    CHECK(count_colour(chart, kBlack) > 500);  // frame, ticks, labels
    // The loss falls: its leftmost pixels are higher up than its rightmost.
    int left_x = chart.width, left_y = 0, right_x = -1, right_y = 0;
    for (int y = 0; y < chart.height; ++y)
        for (int x = 0; x < chart.width; ++x)
            if (get_pixel(chart, x, y) == series_colour(0)) {
                if (x < left_x) {
                    left_x = x;
                    left_y = y;
                }
                if (x > right_x) {
                    right_x = x;
                    right_y = y;
                }
            }
    CHECK(left_y < right_y - 100);
    CHECK(right_x - left_x > 300);
    // The same input draws the same picture.
    CHECK(line_chart("Loss", "epoch", "loss", {loss, val}, 500, 300).rgb == chart.rgb);
}

TEST_CASE("chart: degenerate series draw without throwing", "[vit][chart]") {
    const Image empty = line_chart("Nothing yet", "epoch", "accuracy", {});
    CHECK(empty.width == 640);
    CHECK(empty.height == 400);
    CHECK(count_colour(empty, kBlack) > 0);
    for (size_t k = 0; k < 6; ++k) CHECK(count_colour(empty, series_colour(k)) == 0);  // the 7th is black

    // Unnamed series, so no legend sample: whatever has the series colour is data.
    const Image all_nan = line_chart("", "", "", {Series{"", {1, 2}, {NAN, INFINITY}}, Series{"", {}, {}}}, 200, 150);
    CHECK(count_colour(all_nan, series_colour(0)) == 0);
    const Image one = line_chart("", "", "", {Series{"", {3}, {0.5}}}, 200, 150);
    CHECK(count_colour(one, series_colour(0)) == 21);  // a lone point is a radius-2 dot: 5x5 without corners
    const Image flat = line_chart("", "", "", {Series{"", {0, 1, 2}, {4, 4, 4}}}, 200, 150);
    CHECK(count_colour(flat, series_colour(0)) > 100);
    // A NaN in the middle breaks the line: both halves are drawn, nothing joins them.
    const Image gap = line_chart("", "", "", {Series{"", {0, 1, 2, 3, 4}, {0, 1, NAN, 1, 0}}}, 200, 150);
    const Image whole = line_chart("", "", "", {Series{"", {0, 1, 2, 3, 4}, {0, 1, 1, 1, 0}}}, 200, 150);
    CHECK(count_colour(gap, series_colour(0)) > 50);
    CHECK(count_colour(gap, series_colour(0)) < count_colour(whole, series_colour(0)) - 40);
    const Image scatter = line_chart("", "", "", {Series{"", {1, 1, 2}, {3, 5, 4}, true}}, 200, 150);
    CHECK(count_colour(scatter, series_colour(0)) == 3 * 37);  // three radius-3 dots, 37 pixels each
}

TEST_CASE("chart: malformed series and sizes are rejected", "[vit][chart][errors]") {
    require_error([] { line_chart("Loss", "", "", {}, 100, 100); }, {"line_chart", "Loss", "100x100", "160x120"});
    require_error(
        [] {
            line_chart("Loss", "", "", {Series{"train", {1, 2, 3}, {1, 2}}});
        },
        {"line_chart", "'train'", "3 x values", "2 y values"});
    // Tick labels such as "-1234567.8905" on both axes leave no width for the plot.
    const Series long_labels{"", {-1234567.891, -1234567.889}, {-1234567.891, -1234567.889}};
    require_error([&] { line_chart("", "x", "y", {long_labels}, 160, 120); }, {"line_chart", "160x120", "no room"});
    CHECK(line_chart("", "x", "y", {long_labels}, 400, 120).width == 400);
}

}  // namespace
}  // namespace patchgrad
