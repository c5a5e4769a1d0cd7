// normalize.cpp — channel statistics and the uint8 -> normalised float conversion.
#include "patchgrad/datasets/normalize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace patchgrad {

ChannelStats ChannelStats::cifar10_for(int64_t channels) {
    check(channels == 1 || channels == 3, "ChannelStats::cifar10_for: CIFAR-10's statistics are for 1 (gray) or 3 ",
          "(RGB) channels, not ", channels);
    if (channels == 3) return cifar10();
    const double luma[3] = {19595 / 65536.0, 38470 / 65536.0, 7471 / 65536.0};  // as image_ops.cpp's grey_levels
    double mean = 0, std = 0;
    for (int c = 0; c < 3; ++c) {
        mean += luma[c] * kCifar10Mean[size_t(c)];
        std += luma[c] * kCifar10Std[size_t(c)];
    }
    return {{mean}, {std}};
}

ChannelStats channel_stats(const ImageSet& set) {
    set.check("channel_stats");
    if (set.size() == 0) throw std::invalid_argument("channel_stats: the set has no images");
    const int64_t C = set.channels, plane = set.height * set.width;
    // 50,000 × 1,024 pixels × 255² < 2^42: 64-bit integer sums are exact.
    std::vector<uint64_t> sum(C, 0), sum_sq(C, 0);
    for (int64_t i = 0; i < set.size(); ++i) {
        const uint8_t* img = set.image(i);
        for (int64_t c = 0; c < C; ++c) {
            uint64_t s = 0, s2 = 0;
            for (int64_t p = 0; p < plane; ++p) {
                const uint64_t v = img[c * plane + p];
                s += v;
                s2 += v * v;
            }
            sum[c] += s;
            sum_sq[c] += s2;
        }
    }
    const double count = static_cast<double>(set.size()) * static_cast<double>(plane);
    ChannelStats stats;
    for (int64_t c = 0; c < C; ++c) {
        const double mean = static_cast<double>(sum[c]) / count;
        const double var = static_cast<double>(sum_sq[c]) / count - mean * mean;
        stats.mean.push_back(mean / 255.0);
        stats.std.push_back(std::sqrt(std::max(var, 0.0)) / 255.0);
    }
    return stats;
}

Tensor to_tensor(const ImageSet& images, const ChannelStats& stats) {
    images.check("to_tensor");
    const int64_t C = images.channels, plane = images.height * images.width;
    check(static_cast<int64_t>(stats.mean.size()) == C && static_cast<int64_t>(stats.std.size()) == C,
          "to_tensor: ", stats.mean.size(), " means and ", stats.std.size(), " stds for images of ", C, " channels");
    for (int64_t c = 0; c < C; ++c)
        check(stats.std[c] > 0 && std::isfinite(stats.mean[c]), "to_tensor: channel ", c, " has mean ", stats.mean[c],
              " and std ", stats.std[c], "; expected a finite mean and a positive std");
    // 256 possible values per channel: a lookup table makes the conversion one load per pixel.
    // [snippet:normalize-table]
    std::vector<real> table(C * 256);
    for (int64_t c = 0; c < C; ++c)
        for (int v = 0; v < 256; ++v)
            table[c * 256 + v] = static_cast<real>((v / 255.0 - stats.mean[c]) / stats.std[c]);
    // [/snippet:normalize-table]

    Tensor out = Tensor::empty({images.size(), C, images.height, images.width});
    real* y = out.data();
    const uint8_t* x = images.pixels.data();
    for (int64_t i = 0; i < images.size(); ++i)
        for (int64_t c = 0; c < C; ++c) {
            const real* lut = table.data() + c * 256;
            for (int64_t p = 0; p < plane; ++p, ++x, ++y) *y = lut[*x];
        }
    return out;
}

}  // namespace patchgrad
