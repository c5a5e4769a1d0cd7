// Tests for datasets/image_ops.cpp: known answers for every image operation.
#include "patchgrad/datasets/image_ops.h"

#include <cmath>

#include "catch.h"
#include "datasets_test_util.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

std::vector<uint8_t> random_bytes(int64_t n, uint64_t seed, int low = 0, int high = 255) {
    Rng rng(seed);
    std::vector<uint8_t> v(n);
    for (uint8_t& b : v) b = static_cast<uint8_t>(low + static_cast<int>(rng.below(high - low + 1)));
    return v;
}

}  // namespace

TEST_CASE("datasets: flip_horizontal mirrors a gradient image", "[datasets][image_ops]") {
    std::vector<uint8_t> img =
        make_image(2, 3, 5, [](int64_t c, int64_t y, int64_t x) { return 100 * c + 10 * y + x; });
    flip_horizontal(view_of(img, 2, 3, 5));
    REQUIRE(img == make_image(2, 3, 5, [](int64_t c, int64_t y, int64_t x) { return 100 * c + 10 * y + (4 - x); }));
}

TEST_CASE("datasets: crop_padded shifts with zero padding", "[datasets][image_ops]") {
    const auto value = [](int64_t c, int64_t y, int64_t x) { return 1 + 64 * c + 8 * y + x; };
    const std::vector<uint8_t> original = make_image(3, 6, 7, value);
    for (int64_t top = 0; top <= 4; ++top)
        for (int64_t left = 0; left <= 4; ++left) {
            std::vector<uint8_t> img = original;
            crop_padded(view_of(img, 3, 6, 7), 2, top, left);
            // Output (y, x) is input (y + top - 2, x + left - 2), or 0 outside.
            const auto expected = make_image(3, 6, 7, [&](int64_t c, int64_t y, int64_t x) {
                const int64_t sy = y + top - 2, sx = x + left - 2;
                return sy < 0 || sy >= 6 || sx < 0 || sx >= 7 ? 0 : value(c, sy, sx);
            });
            INFO("top " << top << " left " << left);
            REQUIRE(img == expected);
        }
    std::vector<uint8_t> img = original;
    require_error([&] { crop_padded(view_of(img, 3, 6, 7), 2, 5, 0); }, {"crop_padded", "top 5", "[0, 4]"});
    require_error([&] { crop_padded(view_of(img, 3, 6, 7), 2, 0, -1); }, {"crop_padded", "left -1"});
}

TEST_CASE("datasets: posterize keeps the top bits", "[datasets][image_ops]") {
    const std::vector<uint8_t> original = random_bytes(3 * 16, 1);
    for (int bits = 0; bits <= 8; ++bits) {
        std::vector<uint8_t> img = original;
        posterize(view_of(img, 3, 4, 4), bits);
        for (size_t i = 0; i < img.size(); ++i) {
            INFO("bits " << bits << " value " << int(original[i]));
            REQUIRE(int(img[i]) == (original[i] >> (8 - bits) << (8 - bits)));
            REQUIRE(img[i] % (1 << (8 - bits)) == 0);
        }
    }
    std::vector<uint8_t> img = original;
    require_error([&] { posterize(view_of(img, 3, 4, 4), 9); }, {"posterize", "bits 9"});
}

TEST_CASE("datasets: solarize inverts at and above the threshold", "[datasets][image_ops]") {
    std::vector<uint8_t> img = make_image(1, 16, 16, [](int64_t, int64_t y, int64_t x) { return 16 * y + x; });
    solarize(view_of(img, 1, 16, 16), 128);
    for (int v = 0; v < 256; ++v) REQUIRE(int(img[v]) == (v < 128 ? v : 255 - v));
    std::vector<uint8_t> all = make_image(1, 16, 16, [](int64_t, int64_t y, int64_t x) { return 16 * y + x; });
    const std::vector<uint8_t> ramp = all;
    solarize(view_of(all, 1, 16, 16), 256);
    REQUIRE(all == ramp);
    solarize(view_of(all, 1, 16, 16), 0);
    for (int v = 0; v < 256; ++v) REQUIRE(int(all[v]) == 255 - v);
    solarize_add(view_of(all = ramp, 1, 16, 16), 99, 128);
    for (int v = 0; v < 256; ++v) REQUIRE(int(all[v]) == (v < 128 ? std::min(v + 99, 255) : v));
    require_error([&] { solarize(view_of(all, 1, 16, 16), 300); }, {"solarize", "threshold 300"});
    require_error([&] { solarize_add(view_of(all, 1, 16, 16), 300, 128); }, {"solarize_add", "add 300"});
}

TEST_CASE("datasets: invert, auto_contrast", "[datasets][image_ops]") {
    std::vector<uint8_t> img = random_bytes(3 * 20, 2);
    const std::vector<uint8_t> original = img;
    invert(view_of(img, 3, 4, 5));
    for (size_t i = 0; i < img.size(); ++i) REQUIRE(int(img[i]) == 255 - original[i]);

    // Channel 0 spans [50, 100]: 50 -> 0, 100 -> 255, 75 -> 127.5 rounded up; channel 1 is
    // constant and stays; channel 2 already spans [0, 255] and stays.
    std::vector<uint8_t> low = {50, 75, 100, 60, /**/ 9, 9, 9, 9, /**/ 0, 255, 3, 200};
    auto_contrast(view_of(low, 3, 2, 2));
    REQUIRE(low == std::vector<uint8_t>{0, 128, 255, 51, 9, 9, 9, 9, 0, 255, 3, 200});
}

TEST_CASE("datasets: equalize follows PIL", "[datasets][image_ops]") {
    // A constant image has one level: unchanged.
    std::vector<uint8_t> flat(3 * 64, 77);
    equalize(view_of(flat, 3, 8, 8));
    REQUIRE(flat == std::vector<uint8_t>(3 * 64, 77));
    // Every level once is already flat: unchanged.
    std::vector<uint8_t> ramp = make_image(1, 16, 16, [](int64_t, int64_t y, int64_t x) { return 16 * y + x; });
    const std::vector<uint8_t> ramp0 = ramp;
    equalize(view_of(ramp, 1, 16, 16));
    REQUIRE(ramp == ramp0);
    // Half 0, half 1 in 1,024 pixels: PIL's step = (1024 - 512) / 255 = 2, so 1 -> (1 + 512) / 2 = 256 -> 255.
    std::vector<uint8_t> two = make_image(1, 32, 32, [](int64_t, int64_t y, int64_t) { return y < 16 ? 0 : 1; });
    equalize(view_of(two, 1, 32, 32));
    REQUIRE(two == make_image(1, 32, 32, [](int64_t, int64_t y, int64_t) { return y < 16 ? 0 : 255; }));
    // Random dark levels are spread out, monotonically.
    std::vector<uint8_t> dark = random_bytes(1024, 3, 20, 60);
    const std::vector<uint8_t> dark0 = dark;
    equalize(view_of(dark, 1, 32, 32));
    REQUIRE(*std::max_element(dark.begin(), dark.end()) > 240);
    for (size_t i = 0; i < dark.size(); ++i)
        for (size_t j : {size_t{0}, size_t{17}, size_t{512}})
            if (dark0[i] < dark0[j]) REQUIRE(dark[i] <= dark[j]);
}

TEST_CASE("datasets: enhancements: factor 1 is the identity, 0 the degenerate image", "[datasets][image_ops]") {
    const std::vector<uint8_t> original = random_bytes(3 * 30, 4);
    for (auto op : {brightness, contrast, color, sharpness}) {
        std::vector<uint8_t> img = original;
        op(view_of(img, 3, 5, 6), 1.0);
        REQUIRE(img == original);
    }
    std::vector<uint8_t> img = original;
    brightness(view_of(img, 3, 5, 6), 0.0);
    REQUIRE(img == std::vector<uint8_t>(90, 0));
    img = original;
    brightness(view_of(img, 3, 5, 6), 0.5);
    for (size_t i = 0; i < img.size(); ++i) REQUIRE(int(img[i]) == (original[i] + 1) / 2);
    img = original;
    brightness(view_of(img, 3, 5, 6), 2.0);
    for (size_t i = 0; i < img.size(); ++i) REQUIRE(int(img[i]) == std::min(2 * original[i], 255));

    // Colour 0: every channel becomes the grey level (PIL's luma).
    img = original;
    color(view_of(img, 3, 5, 6), 0.0);
    for (int64_t p = 0; p < 30; ++p) {
        const unsigned grey =
            (19595u * original[p] + 38470u * original[30 + p] + 7471u * original[60 + p] + 0x8000u) >> 16;
        REQUIRE(img[p] == grey);
        REQUIRE(img[30 + p] == grey);
        REQUIRE(img[60 + p] == grey);
    }
    // Contrast 0: the mean grey level everywhere.
    std::vector<uint8_t> grey = {10, 20, 30, 41};
    contrast(view_of(grey, 1, 2, 2), 0.0);
    REQUIRE(grey == std::vector<uint8_t>(4, 25));  // 25.25 rounded
    grey = {10, 20, 30, 41};
    contrast(view_of(grey, 1, 2, 2), 2.0);
    REQUIRE(grey == std::vector<uint8_t>{0, 15, 35, 57});
    // Sharpness 0: the SMOOTH filter inside, the border untouched.
    std::vector<uint8_t> spot(9, 0);
    spot[4] = 130;
    sharpness(view_of(spot, 1, 3, 3), 0.0);
    REQUIRE(spot == std::vector<uint8_t>{0, 0, 0, 0, 50, 0, 0, 0, 0});  // 130 * 5 / 13
    std::vector<uint8_t> ring = {11, 11, 11, 11, 0, 11, 11, 11, 11};
    sharpness(view_of(ring, 1, 3, 3), 0.0);
    REQUIRE(ring == std::vector<uint8_t>{11, 11, 11, 11, 7, 11, 11, 11, 11});  // 88 / 13 = 6.77, rounded
    // A constant image is its own degenerate for every enhancement.
    for (auto op : {contrast, color, sharpness}) {
        std::vector<uint8_t> flat(3 * 16, 90);
        op(view_of(flat, 3, 4, 4), 1.9);
        REQUIRE(flat == std::vector<uint8_t>(48, 90));
    }
    std::vector<uint8_t> two_channels(2 * 4, 1);
    require_error([&] { color(view_of(two_channels, 2, 2, 2), 0.5); }, {"color", "1- or 3-channel", "2 channels"});
    require_error([&] { brightness(view_of(img, 3, 5, 6), NAN); }, {"brightness", "not finite"});
}

TEST_CASE("datasets: rotate by 0 is the identity, by 90 and 180 exact", "[datasets][image_ops]") {
    const std::vector<uint8_t> original = random_bytes(3 * 25, 5);
    std::vector<uint8_t> img = original;
    rotate(view_of(img, 3, 5, 5), 0.0, 128);
    REQUIRE(img == original);
    img = original;
    rotate(view_of(img, 3, 5, 5), 360.0, 128);
    REQUIRE(img == original);
    // Counter-clockwise by 90: output (y, x) shows input (x, W-1-y) (the right edge goes to the top).
    for (int64_t n : {5, 4}) {
        const std::vector<uint8_t> square = random_bytes(3 * n * n, 6);
        img = square;
        rotate(view_of(img, 3, n, n), 90.0, 128);
        REQUIRE(img == make_image(3, n, n, [&](int64_t c, int64_t y, int64_t x) {
                    return square[(c * n + x) * n + (n - 1 - y)];
                }));
        img = square;
        rotate(view_of(img, 3, n, n), 180.0, 128);
        REQUIRE(img == make_image(3, n, n, [&](int64_t c, int64_t y, int64_t x) {
                    return square[(c * n + (n - 1 - y)) * n + (n - 1 - x)];
                }));
    }
    // A non-square image rotated by 90 leaves corners outside the source: filled.
    std::vector<uint8_t> wide(1 * 2 * 6, 200);
    rotate(view_of(wide, 1, 2, 6), 90.0, 7);
    REQUIRE(wide[0] == 7);
    require_error([&] { rotate(view_of(img, 3, 5, 5), INFINITY, 0); }, {"rotate", "angle", "not finite"});
}

TEST_CASE("datasets: translate by whole pixels shifts exactly, fills the rest", "[datasets][image_ops]") {
    const std::vector<uint8_t> original = random_bytes(3 * 6 * 7, 7);
    const auto at = [&](int64_t c, int64_t y, int64_t x) { return original[(c * 6 + y) * 7 + x]; };
    std::vector<uint8_t> img = original;
    translate_x(view_of(img, 3, 6, 7), 3.0, 9);
    REQUIRE(img == make_image(3, 6, 7, [&](int64_t c, int64_t y, int64_t x) { return x >= 3 ? at(c, y, x - 3) : 9; }));
    img = original;
    translate_y(view_of(img, 3, 6, 7), -2.0, 128);
    REQUIRE(img ==
            make_image(3, 6, 7, [&](int64_t c, int64_t y, int64_t x) { return y + 2 < 6 ? at(c, y + 2, x) : 128; }));
    img = original;
    translate_x(view_of(img, 3, 6, 7), 0.0, 9);
    REQUIRE(img == original);
    // Half a pixel: neighbours averaged, the fill blended in at the edge.
    std::vector<uint8_t> flat(1 * 2 * 4, 100);
    translate_x(view_of(flat, 1, 2, 4), 0.5, 0);
    REQUIRE(flat == std::vector<uint8_t>{50, 100, 100, 100, 50, 100, 100, 100});
}

TEST_CASE("datasets: shear about the centre", "[datasets][image_ops]") {
    const std::vector<uint8_t> original = random_bytes(2 * 5 * 5, 8);
    const auto at = [&](int64_t c, int64_t y, int64_t x) { return original[(c * 5 + y) * 5 + x]; };
    std::vector<uint8_t> img = original;
    shear_x(view_of(img, 2, 5, 5), 0.0, 0);
    REQUIRE(img == original);
    // Factor 1: row y reads input row y shifted by y - 2 (the middle row stays).
    shear_x(view_of(img, 2, 5, 5), 1.0, 3);
    REQUIRE(img == make_image(2, 5, 5, [&](int64_t c, int64_t y, int64_t x) {
                const int64_t sx = x + (y - 2);
                return sx >= 0 && sx < 5 ? at(c, y, sx) : 3;
            }));
    img = original;
    shear_y(view_of(img, 2, 5, 5), -1.0, 3);
    REQUIRE(img == make_image(2, 5, 5, [&](int64_t c, int64_t y, int64_t x) {
                const int64_t sy = y - (x - 2);
                return sy >= 0 && sy < 5 ? at(c, sy, x) : 3;
            }));
}

TEST_CASE("datasets: fill_box clips to the image", "[datasets][image_ops]") {
    std::vector<uint8_t> img(2 * 3 * 4, 1);
    fill_box(view_of(img, 2, 3, 4), Box{2, -1, 5, 3}, 8);
    REQUIRE(img == make_image(2, 3, 4, [](int64_t, int64_t y, int64_t x) { return y == 2 && x < 2 ? 8 : 1; }));
    fill_box(view_of(img, 2, 3, 4), Box{0, 4, 2, 2}, 9);
    REQUIRE(std::count(img.begin(), img.end(), 9) == 0);
}

}  // namespace patchgrad

namespace patchgrad {

TEST_CASE("datasets: resize_center_crop keeps a constant image constant at any size", "[datasets][image_ops][resize]") {
    for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 300}, {480, 640}, {32, 32}, {5, 3}}) {
        INFO(h << "x" << w);
        std::vector<uint8_t> src(size_t(3 * h * w), 201), dst(3 * 32 * 32, 0);
        resize_center_crop(view_of(src, 3, h, w), view_of(dst, 3, 32, 32));
        CHECK(dst == std::vector<uint8_t>(3 * 32 * 32, 201));
    }
}

TEST_CASE("datasets: resize_center_crop enlarges bilinearly and crops the centre", "[datasets][image_ops][resize]") {
    // 1x2 -> 2x4: output x = 0..3 sits at source x = 0.25, 0.75, 1.25, 1.75 (pixel centres
    // at 0.5, 1.5); the weights (0.75, 0.25) and (0.25, 0.75) give 64 and 191, and the ends
    // hold the edge pixels (a border weight renormalised).
    std::vector<uint8_t> src = {0, 255}, dst(8);
    resize_center_crop(view_of(src, 1, 1, 2), view_of(dst, 1, 2, 4));
    CHECK(dst == std::vector<uint8_t>{0, 64, 191, 255, 0, 64, 191, 255});

    // A 2x4 image to 2x2: the scale is 1 (the shorter side fits), so the centre two columns
    // are taken exactly.
    std::vector<uint8_t> wide = {1, 2, 3, 4, 5, 6, 7, 8}, square(4);
    resize_center_crop(view_of(wide, 1, 2, 4), view_of(square, 1, 2, 2));
    CHECK(square == std::vector<uint8_t>{2, 3, 6, 7});
}

TEST_CASE("datasets: resize_center_crop averages every source pixel when shrinking", "[datasets][image_ops][resize]") {
    // A fine checkerboard shrunk 16-fold: point sampling would give black or white; the
    // widened filter gives the mean, mid gray.
    std::vector<uint8_t> board(64 * 64), small(4 * 4);
    for (size_t i = 0; i < board.size(); ++i) board[i] = ((i / 64 + i % 64) % 2) ? 255 : 0;
    resize_center_crop(view_of(board, 1, 64, 64), view_of(small, 1, 4, 4));
    for (uint8_t v : small) CHECK(std::abs(int(v) - 128) <= 2);
    require_error([&] { resize_center_crop(view_of(board, 1, 64, 64), view_of(small, 2, 2, 4)); },
                  {"resize_center_crop", "[1, 64, 64]", "[2, 2, 4]"});
}

}  // namespace patchgrad
