// Tests for vit/pictures/canvas.cpp: shapes land on the expected pixels and clip at the border, text
// stays inside its measured box, colour maps have the documented ends and lightness, and
// heatmaps, colour bars and compositions put colours where they belong.
#include "patchgrad/vit/pictures/canvas.h"

#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "catch.h"
#include "patchgrad/vit/pictures/png.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;
namespace fs = std::filesystem;

// The set pixels (not `background`) of an image, as (x, y).
std::set<std::pair<int, int>> ink(const Image& image, Rgb background = kWhite) {
    std::set<std::pair<int, int>> s;
    for (int y = 0; y < image.height; ++y)
        for (int x = 0; x < image.width; ++x)
            if (get_pixel(image, x, y) != background) s.insert({x, y});
    return s;
}

// CIE L* (0 black .. 100 white) of an sRGB colour: the lightness a colour map should order.
double lightness(Rgb c) {
    auto linear = [](uint8_t v) {
        const double s = v / 255.0;
        return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
    };
    const double y = 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
    return y > 216.0 / 24389 ? 116 * std::cbrt(y) - 16 : y * 24389.0 / 27;
}

TEST_CASE("canvas: make_image fills, pixels round-trip, writes outside the image are ignored", "[vit][canvas]") {
    Image image = make_image(4, 3, {10, 20, 30});
    REQUIRE(image.rgb.size() == 36);
    CHECK(get_pixel(image, 3, 2) == Rgb{10, 20, 30});
    set_pixel(image, 1, 2, {1, 2, 3});
    CHECK(get_pixel(image, 1, 2) == Rgb{1, 2, 3});
    CHECK(image.rgb[(2 * 4 + 1) * 3 + 2] == 3);  // row-major, RGB
    const std::vector<uint8_t> before = image.rgb;
    for (auto [x, y] :
         {std::pair{-1, 0}, std::pair{4, 0}, std::pair{0, -1}, std::pair{0, 3}, std::pair{INT_MIN, INT_MAX}})
        set_pixel(image, x, y, kBlack);
    CHECK(image.rgb == before);
    require_error([&] { get_pixel(image, 4, 0); }, {"get_pixel", "(4, 0)", "4x3"});
    require_error([&] { get_pixel(image, 0, -1); }, {"get_pixel", "(0, -1)"});
    require_error([] { make_image(0, 5); }, {"make_image", "0x5"});
}

TEST_CASE("canvas: draw_line covers both ends with one pixel per step", "[vit][canvas]") {
    struct Case {
        int x0, y0, x1, y1;
    };
    for (Case c :
         {Case{0, 0, 9, 5}, Case{9, 5, 0, 0}, Case{2, 1, 2, 8}, Case{1, 7, 8, 7}, Case{3, 9, 5, 0}, Case{4, 4, 4, 4}}) {
        INFO(c.x0 << "," << c.y0 << " -> " << c.x1 << "," << c.y1);
        Image image = make_image(10, 10);
        draw_line(image, c.x0, c.y0, c.x1, c.y1, kBlack);
        const auto s = ink(image);
        CHECK(s.count({c.x0, c.y0}) == 1);
        CHECK(s.count({c.x1, c.y1}) == 1);
        CHECK(s.size() == size_t(std::max(std::abs(c.x1 - c.x0), std::abs(c.y1 - c.y0)) + 1));
        for (auto [x, y] : s) {  // every pixel lies within half a pixel of the ideal line
            const double dx = c.x1 - c.x0, dy = c.y1 - c.y0, len = std::hypot(dx, dy);
            if (len > 0) CHECK(std::abs(dy * (x - c.x0) - dx * (y - c.y0)) / len <= 0.75);
        }
    }
    Image thick = make_image(10, 10);
    draw_line(thick, 2, 5, 7, 5, kBlack, 3);
    std::set<std::pair<int, int>> band;
    for (int y = 4; y <= 6; ++y)
        for (int x = 1; x <= 8; ++x) band.insert({x, y});
    CHECK(ink(thick) == band);
    // Clipped: only the part inside is drawn, and far-away ends cost nothing but time.
    Image clipped = make_image(6, 4);
    draw_line(clipped, -5, 2, 3, 2, kBlack);
    CHECK(ink(clipped) == std::set<std::pair<int, int>>{{0, 2}, {1, 2}, {2, 2}, {3, 2}});
    draw_line(clipped, 100000, -100000, 100000, 100000, kBlack, 5);
    CHECK(ink(clipped).size() == 4);
    require_error([&] { draw_line(clipped, 0, 0, 1, 1, kBlack, 0); }, {"draw_line", "thickness", "0"});
}

TEST_CASE("canvas: fill_rect, draw_rect and fill_circle cover the expected pixels, clipped", "[vit][canvas]") {
    Image image = make_image(12, 10);
    fill_rect(image, 2, 3, 4, 2, kBlack);
    std::set<std::pair<int, int>> expected;
    for (int y = 3; y < 5; ++y)
        for (int x = 2; x < 6; ++x) expected.insert({x, y});
    CHECK(ink(image) == expected);

    Image outline = make_image(12, 10);
    draw_rect(outline, 1, 2, 5, 4, kBlack);
    expected.clear();
    for (int x = 1; x <= 5; ++x) {
        expected.insert({x, 2});
        expected.insert({x, 5});
    }
    for (int y = 2; y <= 5; ++y) {
        expected.insert({1, y});
        expected.insert({5, y});
    }
    CHECK(ink(outline) == expected);
    draw_rect(outline, 7, 1, 4, 4, kBlack, 2);  // 2 thick: a 4x4 square has no hole left
    CHECK(ink(outline).size() == expected.size() + 16);

    Image edge = make_image(5, 5);
    fill_rect(edge, -3, -3, 5, 5, kBlack);  // only the 2x2 corner is inside
    CHECK(ink(edge) == std::set<std::pair<int, int>>{{0, 0}, {1, 0}, {0, 1}, {1, 1}});
    fill_rect(edge, 3, 3, INT_MAX, INT_MAX, kBlack);
    CHECK(ink(edge).size() == 8);
    draw_rect(edge, 4, 0, 10, 10, kBlack);
    CHECK(ink(edge).size() == 11);  // its left edge, column 4: rows 0-2 are new, (4, 3) and (4, 4) were set

    Image dot = make_image(9, 9);
    fill_circle(dot, 4, 4, 0, kBlack);
    CHECK(ink(dot) == std::set<std::pair<int, int>>{{4, 4}});
    fill_circle(dot, 4, 4, 2, kBlack);
    const auto disc = ink(dot);
    CHECK(disc.size() == 21);  // 5x5 without its corners
    CHECK(disc.count({2, 2}) == 0);
    CHECK(disc.count({2, 4}) == 1);
    fill_circle(dot, 0, 0, 3, kBlack);  // clipped at the corner, no crash
    require_error([&] { fill_circle(dot, 1, 1, -1, kBlack); }, {"fill_circle", "-1"});
}

TEST_CASE("canvas: blit enlarges by an integer factor and clips", "[vit][canvas]") {
    Image source = make_image(2, 2);
    set_pixel(source, 0, 0, {255, 0, 0});
    set_pixel(source, 1, 0, {0, 255, 0});
    set_pixel(source, 0, 1, {0, 0, 255});
    set_pixel(source, 1, 1, kBlack);
    Image target = make_image(8, 8, {7, 7, 7});
    blit(target, source, 1, 2, 3);
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x) {
            INFO(x << "," << y);
            const bool inside = x >= 1 && x < 7 && y >= 2 && y < 8;
            CHECK(get_pixel(target, x, y) == (inside ? get_pixel(source, (x - 1) / 3, (y - 2) / 3) : Rgb{7, 7, 7}));
        }
    blit(target, source, 6, -4, 3);  // only the bottom-left block, 2 x 2 pixels, lands inside
    CHECK(get_pixel(target, 6, 1) == Rgb{0, 0, 255});
    CHECK(get_pixel(target, 7, 0) == Rgb{0, 0, 255});
    require_error([&] { blit(target, source, 0, 0, 0); }, {"blit", "scale"});
}

TEST_CASE("canvas: pad surrounds the image with a border of the fill colour", "[vit][canvas]") {
    Image image = make_image(3, 2, {10, 20, 30});
    set_pixel(image, 2, 1, kBlack);
    const Image padded = pad(image, 4, {200, 100, 0});
    REQUIRE(padded.width == 11);
    REQUIRE(padded.height == 10);
    for (int y = 0; y < padded.height; ++y)
        for (int x = 0; x < padded.width; ++x) {
            INFO(x << "," << y);
            const bool inside = x >= 4 && x < 7 && y >= 4 && y < 6;
            CHECK(get_pixel(padded, x, y) == (inside ? get_pixel(image, x - 4, y - 4) : Rgb{200, 100, 0}));
        }
    CHECK(pad(image, 0).rgb == image.rgb);
    require_error([&] { pad(image, -1); }, {"pad", "margin", "-1"});
}

TEST_CASE("canvas: text draws only inside its text_width x text_height box", "[vit][canvas]") {
    std::string printable;  // without the space, which would leave the box's left edge empty
    for (int c = 33; c < 127; ++c) printable += static_cast<char>(c);
    for (const std::string& text : {std::string("Loss 0.25"), std::string("gjpqy,"), printable, std::string("|")})
        for (int scale : {1, 2, 3}) {
            INFO("'" << text << "' at scale " << scale);
            const int w = text_width(text, scale), h = text_height(scale);
            CHECK(h == 8 * scale);
            Image image = make_image(w + 20, h + 20);
            draw_text(image, 7, 9, text, kBlack, scale);
            const auto s = ink(image);
            REQUIRE(!s.empty());
            int min_x = INT_MAX, max_x = INT_MIN, min_y = INT_MAX, max_y = INT_MIN;
            for (auto [x, y] : s) {
                min_x = std::min(min_x, x);
                max_x = std::max(max_x, x);
                min_y = std::min(min_y, y);
                max_y = std::max(max_y, y);
            }
            // The box is tight left and right (no glyph here starts or ends with a space).
            CHECK(min_x == 7);
            CHECK(max_x == 7 + w - 1);
            CHECK(min_y >= 9);
            CHECK(max_y <= 9 + h - 1);
        }
    CHECK(text_width("") == 0);
    CHECK(text_width("1", 2) == 2 * text_width("1"));
    CHECK(text_width("11") == 2 * text_width("1") + 1);  // one empty column between glyphs
    CHECK(text_width("i") < text_width("m"));            // proportional
    Image descender = make_image(10, 10);
    draw_text(descender, 0, 0, "g", kBlack);
    CHECK(ink(descender).count({1, 7}) == 1);  // the tail of the g is in row 7
}

TEST_CASE("canvas: every printable glyph has ink and differs from the others, unknown bytes are a box",
          "[vit][canvas]") {
    std::set<std::vector<uint8_t>> seen;
    for (int c = 33; c < 127; ++c) {
        const std::string text(1, static_cast<char>(c));
        INFO("glyph '" << text << "'");
        const Image image = text_image(text);
        CHECK(!ink(image).empty());
        CHECK(seen.insert(image.rgb).second);
    }
    CHECK(ink(text_image(" ")).empty());
    CHECK(text_width(" ") == 3);
    // A byte outside 32-126 (control characters, UTF-8 bytes) is a hollow 5x7 box.
    for (const std::string& unknown : {std::string("\x01"), std::string("\x7f"), std::string("\xc3")}) {
        const Image box = text_image(unknown);
        CHECK(box.width == 5);
        std::set<std::pair<int, int>> outline;
        for (int x = 0; x < 5; ++x) {
            outline.insert({x, 0});
            outline.insert({x, 6});
        }
        for (int y = 0; y < 7; ++y) {
            outline.insert({0, y});
            outline.insert({4, y});
        }
        CHECK(ink(box) == outline);
    }
}

TEST_CASE("canvas: vertical text is the horizontal text turned counter-clockwise", "[vit][canvas]") {
    const std::string text = "Accuracy (%)";
    const Image flat = text_image(text);
    const int w = text_width(text), h = text_height();
    Image up = make_image(h + 6, w + 6);
    draw_text_vertical(up, 3, 2, text, kBlack);
    std::set<std::pair<int, int>> turned;
    for (auto [u, v] : ink(flat)) turned.insert({3 + v, 2 + w - 1 - u});
    CHECK(ink(up) == turned);
}

TEST_CASE("canvas: colour maps have the table's ends, clamp, and viridis gets lighter throughout",
          "[vit][canvas][colormap]") {
    CHECK(colormap(Colormap::Viridis, 0) == Rgb{68, 1, 84});     // matplotlib #440154
    CHECK(colormap(Colormap::Viridis, 1) == Rgb{253, 231, 37});  // #fde725
    const Rgb mid = colormap(Colormap::Viridis, 0.5);            // #21918c
    CHECK(std::abs(mid.r - 33) + std::abs(mid.g - 145) + std::abs(mid.b - 140) <= 3);
    CHECK(colormap(Colormap::Diverging, 0) == Rgb{5, 48, 97});
    CHECK(colormap(Colormap::Diverging, 0.5) == Rgb{247, 247, 247});
    CHECK(colormap(Colormap::Diverging, 1) == Rgb{103, 0, 31});
    for (Colormap map : {Colormap::Viridis, Colormap::Diverging}) {
        CHECK(colormap(map, -3) == colormap(map, 0));
        CHECK(colormap(map, 7) == colormap(map, 1));
        CHECK(colormap(map, -INFINITY) == colormap(map, 0));
        CHECK(colormap(map, NAN) == kNanColour);
    }
    // Every 1/64th viridis is clearly lighter than before (about 1.2 L*); at finer steps,
    // rounding to 8-bit channels can take back up to a few tenths.
    for (int k = 0; k < 64; ++k) {
        INFO("t = " << k / 64.0);
        CHECK(lightness(colormap(Colormap::Viridis, (k + 1) / 64.0)) >
              lightness(colormap(Colormap::Viridis, k / 64.0)) + 0.5);
    }
    for (int i = 0; i < 1000; ++i)
        CHECK(lightness(colormap(Colormap::Viridis, (i + 1) / 1000.0)) >
              lightness(colormap(Colormap::Viridis, i / 1000.0)) - 0.3);
    CHECK(lightness(colormap(Colormap::Viridis, 1)) - lightness(colormap(Colormap::Viridis, 0)) > 60);
    // The diverging map is lightest in the middle and darkens towards both ends.
    for (int k = 0; k < 20; ++k) {
        INFO("t = " << k / 40.0 << " and " << 1 - k / 40.0);
        CHECK(lightness(colormap(Colormap::Diverging, k / 40.0)) <
              lightness(colormap(Colormap::Diverging, (k + 1) / 40.0)));
        CHECK(lightness(colormap(Colormap::Diverging, 1 - k / 40.0)) <
              lightness(colormap(Colormap::Diverging, 1 - (k + 1) / 40.0)));
    }
}

TEST_CASE("canvas: heatmap cells take the colour of their value", "[vit][canvas][colormap]") {
    const std::vector<double> values = {-2, 0, 1, 3, 0.5, 2};  // [2, 3]
    const Image image = heatmap(values, 2, 3, 4, -2, 3);
    REQUIRE(image.width == 12);
    REQUIRE(image.height == 8);
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 12; ++x) {
            INFO(x << "," << y);
            CHECK(get_pixel(image, x, y) == colormap(Colormap::Viridis, (values[size_t(y / 4 * 3 + x / 4)] + 2) / 5));
        }
    CHECK(get_pixel(image, 0, 0) == colormap(Colormap::Viridis, 0));  // the minimum
    CHECK(get_pixel(image, 0, 4) == colormap(Colormap::Viridis, 1));  // the maximum
    const Image cos = heatmap({-1, 1, 0, NAN}, 2, 2, 1, -1, 1, Colormap::Diverging);
    CHECK(get_pixel(cos, 0, 0) == Rgb{5, 48, 97});
    CHECK(get_pixel(cos, 1, 0) == Rgb{103, 0, 31});
    CHECK(get_pixel(cos, 0, 1) == Rgb{247, 247, 247});
    CHECK(get_pixel(cos, 1, 1) == kNanColour);
    const Image flat = heatmap({4, 4}, 1, 2, 1, 4, 4);  // no range: the middle colour
    CHECK(get_pixel(flat, 1, 0) == colormap(Colormap::Viridis, 0.5));
}

TEST_CASE("canvas: heatmap and colorbar reject bad sizes and ranges", "[vit][canvas][errors]") {
    require_error([] { heatmap({1, 2, 3}, 2, 2, 4, 0, 1); }, {"heatmap", "2x2", "4 values", "got 3"});
    require_error([] { heatmap({1}, 1, 1, 0, 0, 1); }, {"heatmap", "cell size", "0"});
    require_error([] { heatmap({1}, 1, 1, 1, 2, 1); }, {"heatmap", "[2, 1]", "low <= high"});
    require_error([] { heatmap({1}, 1, 1, 1, NAN, 1); }, {"heatmap", "nan"});
    require_error([] { colorbar(Colormap::Viridis, 0, INFINITY, 10); }, {"colorbar", "inf"});
    require_error([] { colorbar(Colormap::Viridis, 0, 1, 0); }, {"colorbar", "bar height"});
    Image broken{3, 3, std::vector<uint8_t>(5)};
    require_error([&] { fill_rect(broken, 0, 0, 1, 1, kBlack); }, {"fill_rect", "3x3", "27", "has 5"});
    require_error([&] { save(broken, "unused.png"); }, {"save", "3x3"});
}

TEST_CASE("canvas: colorbar runs from high at the top to low at the bottom, labelled", "[vit][canvas][colormap]") {
    const int bar_h = 101, bar_w = 10;
    const Image bar = colorbar(Colormap::Diverging, -1, 1, bar_h, bar_w);
    CHECK(bar.height == bar_h + text_height());
    CHECK(bar.width == bar_w + 3 + 2 + text_width("-1"));
    const int top = text_height() / 2;
    CHECK(get_pixel(bar, 0, top) == kBlack);  // outline
    CHECK(get_pixel(bar, bar_w / 2, top + 1) == colormap(Colormap::Diverging, 1 - 1.0 / (bar_h - 1)));
    CHECK(get_pixel(bar, bar_w / 2, top + 50) == colormap(Colormap::Diverging, 0.5));
    CHECK(get_pixel(bar, bar_w / 2, top + bar_h - 2) == colormap(Colormap::Diverging, 1.0 / (bar_h - 1)));
    Image labels = make_image(bar.width - bar_w - 5, bar.height);
    blit(labels, bar, -(bar_w + 5), 0);
    CHECK(ink(labels).size() ==
          ink(text_image("1")).size() + ink(text_image("0")).size() + ink(text_image("-1")).size());
}

TEST_CASE("canvas: hconcat, vconcat and grid centre the images with gaps", "[vit][canvas]") {
    const Image red = make_image(3, 2, {255, 0, 0}), blue = make_image(2, 4, {0, 0, 255});
    const Image h = hconcat({red, blue}, 1, kBlack);
    CHECK(h.width == 6);
    CHECK(h.height == 4);
    CHECK(get_pixel(h, 0, 1) == Rgb{255, 0, 0});  // red is centred: rows 1-2
    CHECK(get_pixel(h, 0, 0) == kBlack);
    CHECK(get_pixel(h, 3, 1) == kBlack);  // the gap
    CHECK(get_pixel(h, 5, 3) == Rgb{0, 0, 255});
    const Image v = vconcat({red, blue}, 2);
    CHECK(v.width == 3);
    CHECK(v.height == 8);
    CHECK(get_pixel(v, 2, 1) == Rgb{255, 0, 0});
    CHECK(get_pixel(v, 0, 3) == kWhite);
    CHECK(get_pixel(v, 0, 4) == Rgb{0, 0, 255});  // blue centred: columns 0-1
    CHECK(get_pixel(v, 2, 4) == kWhite);
    const Image g = grid({red, blue, red}, 2, 1);
    CHECK(g.width == 2 * 3 + 1);
    CHECK(g.height == 2 * 4 + 1);
    CHECK(get_pixel(g, 0, 1) == Rgb{255, 0, 0});
    CHECK(get_pixel(g, 4, 0) == Rgb{0, 0, 255});
    CHECK(get_pixel(g, 0, 6) == Rgb{255, 0, 0});
    CHECK(get_pixel(g, 5, 6) == kWhite);  // no fourth image
    require_error([] { hconcat({}); }, {"hconcat", "no images"});
    require_error([&] { vconcat({red}, -1); }, {"vconcat", "gap", "-1"});
    require_error([&] { grid({red}, 0); }, {"grid", "columns"});
}

TEST_CASE("canvas: save writes the image as an RGB PNG", "[vit][canvas]") {
    std::random_device rd;
    const fs::path dir =
        fs::temp_directory_path() / ("patchgrad_test_canvas_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(dir);
    Image image = make_image(7, 5, {12, 34, 56});
    draw_text(image, 0, 0, "ok", kWhite);
    const std::string path = (dir / "image.png").string();
    save(image, path);
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string bytes = ss.str();
    const std::vector<uint8_t> expected = encode_png(7, 5, 3, image.rgb);
    CHECK(std::vector<uint8_t>(bytes.begin(), bytes.end()) == expected);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace patchgrad
