// Tests for datasets/normalize.cpp: channel statistics and the normalised float batch.
#include "patchgrad/datasets/normalize.h"

#include <cmath>

#include "catch.h"
#include "datasets_test_util.h"
#include "test_util.h"

namespace patchgrad {

using namespace patchgrad::test;

TEST_CASE("datasets: the standard CIFAR-10 mean and std", "[datasets][normalize]") {
    const ChannelStats s = ChannelStats::cifar10();
    REQUIRE(s.mean == std::vector<double>{0.4914, 0.4822, 0.4465});
    REQUIRE(s.std == std::vector<double>{0.2470, 0.2435, 0.2616});
}

TEST_CASE("datasets: channel_stats by hand", "[datasets][normalize]") {
    // Two images [3, 1, 2]. Channel 0 holds 0, 255, 0, 255: mean 1/2, std 1/2. Channel 1 is
    // 51 everywhere: mean 0.2, std 0. Channel 2 holds 0, 0, 0, 255: mean 1/4, std sqrt(3)/4.
    ImageSet set;
    set.channels = 3;
    set.height = 1;
    set.width = 2;
    set.class_names = {"a"};
    set.labels = {0, 0};
    set.pixels = {0, 255, 51, 51, 0, 0, /* image 1 */ 0, 255, 51, 51, 0, 255};
    const ChannelStats s = channel_stats(set);
    REQUIRE(s.mean.size() == 3);
    CHECK(s.mean[0] == Approx(0.5).epsilon(1e-15));
    CHECK(s.std[0] == Approx(0.5).epsilon(1e-15));
    CHECK(s.mean[1] == Approx(0.2).epsilon(1e-15));
    CHECK(s.std[1] == Approx(0).margin(1e-15));
    CHECK(s.mean[2] == Approx(0.25).epsilon(1e-15));
    CHECK(s.std[2] == Approx(std::sqrt(3.0) / 4).epsilon(1e-15));
}

TEST_CASE("datasets: to_tensor is (v / 255 - mean) / std per channel", "[datasets][normalize]") {
    const ImageSet set = random_images(3, 3, 4, 5, 2, 7);
    const ChannelStats stats = ChannelStats::cifar10();
    const Tensor x = to_tensor(set, stats);
    REQUIRE(x.shape() == Shape{3, 3, 4, 5});
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t y = 0; y < 4; ++y)
                for (int64_t w = 0; w < 5; ++w) {
                    const double v = set.image(i)[(c * 4 + y) * 5 + w];
                    REQUIRE(x.at({i, c, y, w}) == Approx((v / 255.0 - stats.mean[c]) / stats.std[c]).epsilon(1e-12));
                }
    // Normalised with its own statistics, a set has mean 0 and std 1 in every channel.
    const ImageSet big = random_images(20, 2, 8, 8, 2, 8);
    const Tensor z = to_tensor(big, channel_stats(big));
    for (int64_t c = 0; c < 2; ++c) {
        double s = 0, s2 = 0;
        for (int64_t i = 0; i < 20; ++i)
            for (int64_t p = 0; p < 64; ++p) {
                const double v = z.data()[(i * 2 + c) * 64 + p];
                s += v;
                s2 += v * v;
            }
        CHECK(s / 1280 == Approx(0).margin(1e-12));
        CHECK(s2 / 1280 == Approx(1).epsilon(1e-12));
    }
}

TEST_CASE("datasets: normalisation errors", "[datasets][normalize][errors]") {
    const ImageSet set = random_images(2, 3, 2, 2, 2, 1);
    ChannelStats two{{0.5, 0.5}, {0.2, 0.2}};
    require_error([&] { to_tensor(set, two); }, {"to_tensor", "2 means and 2 stds", "3 channels"});
    ChannelStats flat{{0.5, 0.5, 0.5}, {0.2, 0, 0.2}};
    require_error([&] { to_tensor(set, flat); }, {"to_tensor", "channel 1", "positive std"});
    require_error([&] { channel_stats(set.subset({})); }, {"channel_stats", "no images"});
    ImageSet broken = set;
    broken.pixels.pop_back();
    require_error([&] { to_tensor(broken, ChannelStats::cifar10()); }, {"to_tensor", "23 pixel bytes"});
}

}  // namespace patchgrad
