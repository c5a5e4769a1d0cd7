// datasets_test_util.h — helpers shared by the tests of datasets/: a temporary directory
// and small hand-made images.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/datasets/image_set.h"

namespace patchgrad::test {

inline std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// `count` images [channels, height, width] of uniform random bytes, labels i % classes.
inline ImageSet random_images(int64_t count, int64_t channels, int64_t height, int64_t width, int64_t classes,
                              uint64_t seed) {
    ImageSet set;
    set.channels = channels;
    set.height = height;
    set.width = width;
    for (int64_t k = 0; k < classes; ++k) set.class_names.push_back("class" + std::to_string(k));
    Rng rng(seed);
    set.pixels.resize(count * channels * height * width);
    for (uint8_t& p : set.pixels) p = static_cast<uint8_t>(rng.below(256));
    for (int64_t i = 0; i < count; ++i) set.labels.push_back(i % classes);
    return set;
}

// One image whose pixel (c, y, x) is value(c, y, x), as bytes [C, H, W].
template <class F>
std::vector<uint8_t> make_image(int64_t channels, int64_t height, int64_t width, F value) {
    std::vector<uint8_t> img(channels * height * width);
    for (int64_t c = 0; c < channels; ++c)
        for (int64_t y = 0; y < height; ++y)
            for (int64_t x = 0; x < width; ++x)
                img[(c * height + y) * width + x] = static_cast<uint8_t>(value(c, y, x));
    return img;
}

inline ImageView view_of(std::vector<uint8_t>& img, int64_t channels, int64_t height, int64_t width) {
    return {img.data(), channels, height, width};
}

}  // namespace patchgrad::test
