// image_ops.cpp — flips, crops, PIL-style look-up and enhancement operations, and bilinear
// affine warps on one uint8 image [C, H, W].
#include "patchgrad/datasets/image_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace patchgrad {

namespace {

uint8_t round_to_u8(double v) { return static_cast<uint8_t>(std::clamp(std::floor(v + 0.5), 0.0, 255.0)); }

void require_finite(double value, const char* op, const char* what) {
    check(std::isfinite(value), op, ": ", what, " ", value, " is not finite");
}

// PIL's 8-bit grey level of each pixel, [H * W]; a one-channel image is its own grey.
std::vector<uint8_t> grey_levels(ImageView img, const char* op) {
    const int64_t P = img.plane();
    if (img.channels == 1) return std::vector<uint8_t>(img.data, img.data + P);
    check(img.channels == 3, op, ": needs a 1- or 3-channel image, not ", img.channels, " channels");
    std::vector<uint8_t> grey(P);
    const uint8_t *r = img.data, *g = img.data + P, *b = img.data + 2 * P;
    for (int64_t p = 0; p < P; ++p)
        grey[p] = static_cast<uint8_t>((19595u * r[p] + 38470u * g[p] + 7471u * b[p] + 0x8000u) >> 16);
    return grey;
}

// img <- degenerate + factor (img - degenerate), per channel plane; degenerate [H * W].
void blend_with(ImageView img, const uint8_t* degenerate, double factor) {
    const int64_t P = img.plane();
    for (int64_t c = 0; c < img.channels; ++c) {
        uint8_t* v = img.data + c * P;
        for (int64_t p = 0; p < P; ++p) v[p] = round_to_u8(degenerate[p] + factor * (double(v[p]) - degenerate[p]));
    }
}

// Applies a 256-entry table per channel, tables [C * 256].
void apply_tables(ImageView img, const std::vector<uint8_t>& tables) {
    const int64_t P = img.plane();
    for (int64_t c = 0; c < img.channels; ++c) {
        const uint8_t* lut = tables.data() + c * 256;
        uint8_t* v = img.data + c * P;
        for (int64_t p = 0; p < P; ++p) v[p] = lut[v[p]];
    }
}

void apply_table(ImageView img, const std::array<uint8_t, 256>& lut) {
    for (int64_t i = 0; i < img.numel(); ++i) img.data[i] = lut[img.data[i]];
}

// out(x, y) = in(m0 x + m1 y + m2, m3 x + m4 y + m5), sampled bilinearly; source pixels
// outside the image read `fill`. Coordinates are pixel indices (pixel centres).
void warp_affine(ImageView img, const std::array<double, 6>& m, uint8_t fill) {
    const int64_t H = img.height, W = img.width, P = img.plane(), C = img.channels;
    const std::vector<uint8_t> src(img.data, img.data + img.numel());
    for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
            const double sx = m[0] * x + m[1] * y + m[2];
            const double sy = m[3] * x + m[4] * y + m[5];
            const double fx = std::floor(sx), fy = std::floor(sy);
            if (fx < -1 || fx >= W || fy < -1 || fy >= H) {
                for (int64_t c = 0; c < C; ++c) img.data[c * P + y * W + x] = fill;
                continue;
            }
            const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
            const double ax = sx - fx, ay = sy - fy;
            const double w00 = (1 - ax) * (1 - ay), w01 = ax * (1 - ay), w10 = (1 - ax) * ay, w11 = ax * ay;
            const bool left = x0 >= 0, right = x0 + 1 < W, top = y0 >= 0, bottom = y0 + 1 < H;
            for (int64_t c = 0; c < C; ++c) {
                const uint8_t* s = src.data() + c * P;
                const double v00 = top && left ? s[y0 * W + x0] : fill;
                const double v01 = top && right ? s[y0 * W + x0 + 1] : fill;
                const double v10 = bottom && left ? s[(y0 + 1) * W + x0] : fill;
                const double v11 = bottom && right ? s[(y0 + 1) * W + x0 + 1] : fill;
                img.data[c * P + y * W + x] = round_to_u8(w00 * v00 + w01 * v01 + w10 * v10 + w11 * v11);
            }
        }
}

// One axis of resize_center_crop: for each of `out` output pixels, the source pixels of an
// axis of `in` it reads and their weights. Output pixel i has its centre at source
// coordinate start + (i + 1/2) / scale (pixel edges at integers, so source pixel j is
// centred at j + 1/2).
struct AxisWeights {
    std::vector<int64_t> first;             // [out]: the first source pixel read
    std::vector<std::vector<double>> taps;  // [out][k]: the weight of source pixel first + k
};

AxisWeights axis_weights(int64_t in, int64_t out, double scale, double start) {
    const double support = std::max(1.0, 1.0 / scale);  // the tent's half-width, in source pixels
    AxisWeights w;
    for (int64_t i = 0; i < out; ++i) {
        const double centre = start + (double(i) + 0.5) / scale;
        const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(centre - support)));
        const int64_t hi = std::min<int64_t>(in, static_cast<int64_t>(std::ceil(centre + support)));
        std::vector<double> taps;
        double sum = 0;
        for (int64_t j = lo; j < hi; ++j) {
            const double t = std::max(0.0, 1 - std::abs(double(j) + 0.5 - centre) / support);
            taps.push_back(t);
            sum += t;
        }
        for (double& t : taps) t /= sum;  // sum > 0: the pixel under the centre is always in range
        w.first.push_back(lo);
        w.taps.push_back(std::move(taps));
    }
    return w;
}

}  // namespace

void resize_center_crop(ImageView src, ImageView dst) {
    check(src.channels == dst.channels && src.numel() > 0 && dst.numel() > 0, "resize_center_crop: cannot resize ",
          Shape{src.channels, src.height, src.width}, " to ", Shape{dst.channels, dst.height, dst.width});
    const double scale = std::max(double(dst.height) / double(src.height), double(dst.width) / double(src.width));
    const AxisWeights rows = axis_weights(src.height, dst.height, scale, (double(src.height) - dst.height / scale) / 2);
    const AxisWeights cols = axis_weights(src.width, dst.width, scale, (double(src.width) - dst.width / scale) / 2);
    // Columns first, into [src.height, dst.width] per channel, then rows.
    std::vector<double> wide(static_cast<size_t>(src.height * dst.width));
    for (int64_t c = 0; c < src.channels; ++c) {
        for (int64_t y = 0; y < src.height; ++y)
            for (int64_t x = 0; x < dst.width; ++x) {
                double v = 0;
                const std::vector<double>& taps = cols.taps[size_t(x)];
                for (size_t k = 0; k < taps.size(); ++k)
                    v += taps[k] * src.at(c, y, cols.first[size_t(x)] + int64_t(k));
                wide[size_t(y * dst.width + x)] = v;
            }
        for (int64_t y = 0; y < dst.height; ++y)
            for (int64_t x = 0; x < dst.width; ++x) {
                double v = 0;
                const std::vector<double>& taps = rows.taps[size_t(y)];
                for (size_t k = 0; k < taps.size(); ++k)
                    v += taps[k] * wide[size_t((rows.first[size_t(y)] + int64_t(k)) * dst.width + x)];
                dst.at(c, y, x) = round_to_u8(v);
            }
    }
}

void flip_horizontal(ImageView img) {
    for (int64_t row = 0; row < img.channels * img.height; ++row)
        std::reverse(img.data + row * img.width, img.data + (row + 1) * img.width);
}

void crop_padded(ImageView img, int64_t padding, int64_t top, int64_t left) {
    check(padding >= 0 && top >= 0 && left >= 0 && top <= 2 * padding && left <= 2 * padding,
          "crop_padded: offsets (top ", top, ", left ", left, ") must lie in [0, ", 2 * padding, "] for padding ",
          padding);
    const int64_t H = img.height, W = img.width, P = img.plane();
    // Output (y, x) is padded (y + top, x + left) = input (y + dy, x + dx), zero outside.
    const int64_t dy = top - padding, dx = left - padding;
    const int64_t x_begin = std::clamp<int64_t>(-dx, 0, W), x_end = std::clamp<int64_t>(W - dx, 0, W);
    const std::vector<uint8_t> src(img.data, img.data + img.numel());
    std::memset(img.data, 0, img.numel());
    for (int64_t c = 0; c < img.channels; ++c)
        for (int64_t y = 0; y < H; ++y) {
            const int64_t sy = y + dy;
            if (sy < 0 || sy >= H || x_begin >= x_end) continue;
            std::memcpy(img.data + c * P + y * W + x_begin, src.data() + c * P + sy * W + x_begin + dx,
                        x_end - x_begin);
        }
}

void auto_contrast(ImageView img) {
    const int64_t P = img.plane();
    if (P == 0) return;
    std::vector<uint8_t> tables(img.channels * 256);
    for (int64_t c = 0; c < img.channels; ++c) {
        const auto [lo_it, hi_it] = std::minmax_element(img.data + c * P, img.data + (c + 1) * P);
        const int lo = *lo_it, hi = *hi_it;
        for (int v = 0; v < 256; ++v)
            tables[c * 256 + v] =
                hi <= lo ? static_cast<uint8_t>(v)
                         : static_cast<uint8_t>(std::clamp((2 * (v - lo) * 255 + (hi - lo)) / (2 * (hi - lo)), 0, 255));
    }
    apply_tables(img, tables);
}

void equalize(ImageView img) {
    const int64_t P = img.plane();
    if (P == 0) return;
    std::vector<uint8_t> tables(img.channels * 256);
    for (int64_t c = 0; c < img.channels; ++c) {
        std::array<int64_t, 256> histogram{};
        for (int64_t p = 0; p < P; ++p) ++histogram[img.data[c * P + p]];
        uint8_t* lut = tables.data() + c * 256;
        for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v);
        // PIL: step = (pixels - count of the brightest level present) / 255; a channel with
        // one level (or too few pixels for a step) is left alone.
        int last = 255;
        while (histogram[last] == 0) --last;
        const int64_t levels = std::count_if(histogram.begin(), histogram.end(), [](int64_t h) { return h > 0; });
        const int64_t step = (P - histogram[last]) / 255;
        if (levels <= 1 || step == 0) continue;
        int64_t n = step / 2;
        for (int v = 0; v < 256; ++v) {
            lut[v] = static_cast<uint8_t>(std::min<int64_t>(n / step, 255));
            n += histogram[v];
        }
    }
    apply_tables(img, tables);
}

void invert(ImageView img) {
    for (int64_t i = 0; i < img.numel(); ++i) img.data[i] = static_cast<uint8_t>(255 - img.data[i]);
}

void solarize(ImageView img, int threshold) {
    check(threshold >= 0 && threshold <= 256, "solarize: threshold ", threshold, " must be in [0, 256]");
    std::array<uint8_t, 256> lut;
    for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v < threshold ? v : 255 - v);
    apply_table(img, lut);
}

void solarize_add(ImageView img, int add, int threshold) {
    check(threshold >= 0 && threshold <= 256 && add >= -255 && add <= 255, "solarize_add: add ", add, " and threshold ",
          threshold, " must be in [-255, 255] and [0, 256]");
    std::array<uint8_t, 256> lut;
    for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v < threshold ? std::clamp(v + add, 0, 255) : v);
    apply_table(img, lut);
}

void posterize(ImageView img, int bits) {
    check(bits >= 0 && bits <= 8, "posterize: bits ", bits, " must be in [0, 8]");
    const uint8_t mask = static_cast<uint8_t>(0xFF00u >> bits);
    for (int64_t i = 0; i < img.numel(); ++i) img.data[i] &= mask;
}

void color(ImageView img, double factor) {
    require_finite(factor, "color", "factor");
    const std::vector<uint8_t> grey = grey_levels(img, "color");
    blend_with(img, grey.data(), factor);
}

void contrast(ImageView img, double factor) {
    require_finite(factor, "contrast", "factor");
    const std::vector<uint8_t> grey = grey_levels(img, "contrast");
    if (grey.empty()) return;
    int64_t sum = 0;
    for (uint8_t g : grey) sum += g;
    // PIL: the mean grey level, rounded, everywhere.
    const auto mean = static_cast<uint8_t>((2 * sum + img.plane()) / (2 * img.plane()));
    const std::vector<uint8_t> degenerate(img.plane(), mean);
    blend_with(img, degenerate.data(), factor);
}

void brightness(ImageView img, double factor) {
    require_finite(factor, "brightness", "factor");
    const std::vector<uint8_t> black(img.plane(), 0);
    blend_with(img, black.data(), factor);
}

void sharpness(ImageView img, double factor) {
    require_finite(factor, "sharpness", "factor");
    const int64_t H = img.height, W = img.width, P = img.plane();
    std::vector<uint8_t> smooth(P);
    for (int64_t c = 0; c < img.channels; ++c) {
        uint8_t* v = img.data + c * P;
        // PIL's SMOOTH kernel [1 1 1; 1 5 1; 1 1 1] / 13 inside; the one-pixel border is kept.
        std::memcpy(smooth.data(), v, P);
        for (int64_t y = 1; y + 1 < H; ++y)
            for (int64_t x = 1; x + 1 < W; ++x) {
                int sum = 4 * v[y * W + x];
                for (int64_t dy = -1; dy <= 1; ++dy)
                    for (int64_t dx = -1; dx <= 1; ++dx) sum += v[(y + dy) * W + x + dx];
                smooth[y * W + x] = static_cast<uint8_t>((2 * sum + 13) / 26);
            }
        for (int64_t p = 0; p < P; ++p) v[p] = round_to_u8(smooth[p] + factor * (double(v[p]) - smooth[p]));
    }
}

void rotate(ImageView img, double degrees, uint8_t fill) {
    require_finite(degrees, "rotate", "angle");
    // Output offset (dx, dy) from the centre reads the input at the offset rotated back:
    // with y pointing down, a counter-clockwise turn by t maps (dx, dy) to
    // (dx cos t + dy sin t, -dx sin t + dy cos t); its inverse is below.
    const double t = degrees * M_PI / 180.0, cos_t = std::cos(t), sin_t = std::sin(t);
    const double cx = (img.width - 1) / 2.0, cy = (img.height - 1) / 2.0;
    warp_affine(img, {cos_t, -sin_t, cx - cos_t * cx + sin_t * cy, sin_t, cos_t, cy - sin_t * cx - cos_t * cy}, fill);
}

void shear_x(ImageView img, double factor, uint8_t fill) {
    require_finite(factor, "shear_x", "factor");
    const double cy = (img.height - 1) / 2.0;
    warp_affine(img, {1, factor, -factor * cy, 0, 1, 0}, fill);
}

void shear_y(ImageView img, double factor, uint8_t fill) {
    require_finite(factor, "shear_y", "factor");
    const double cx = (img.width - 1) / 2.0;
    warp_affine(img, {1, 0, 0, factor, 1, -factor * cx}, fill);
}

void translate_x(ImageView img, double pixels, uint8_t fill) {
    require_finite(pixels, "translate_x", "shift");
    warp_affine(img, {1, 0, -pixels, 0, 1, 0}, fill);
}

void translate_y(ImageView img, double pixels, uint8_t fill) {
    require_finite(pixels, "translate_y", "shift");
    warp_affine(img, {1, 0, 0, 0, 1, -pixels}, fill);
}

void fill_box(ImageView img, const Box& box, uint8_t value) {
    const int64_t y0 = std::clamp<int64_t>(box.top, 0, img.height),
                  y1 = std::clamp<int64_t>(box.top + box.height, 0, img.height);
    const int64_t x0 = std::clamp<int64_t>(box.left, 0, img.width),
                  x1 = std::clamp<int64_t>(box.left + box.width, 0, img.width);
    if (x0 >= x1) return;
    for (int64_t c = 0; c < img.channels; ++c)
        for (int64_t y = y0; y < y1; ++y) std::memset(&img.at(c, y, x0), value, x1 - x0);
}

}  // namespace patchgrad
