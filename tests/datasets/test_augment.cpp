// Tests for datasets/augment.cpp: random crop/flip, RandAugment (timm's ranges and config
// strings), random erasing and the per-batch pipeline. Each is deterministic for a seed.
#include "patchgrad/datasets/augment.h"

#include <cmath>
#include <set>

#include "catch.h"
#include "datasets_test_util.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

// Levels in [40, 240]: every RandAugment operation at magnitude 9 changes such an image
// (auto_contrast stretches it, solarize finds levels >= 230, ...).
std::vector<uint8_t> busy_image(uint64_t seed) {
    Rng rng(seed);
    std::vector<uint8_t> img(3 * 32 * 32);
    for (uint8_t& v : img) v = static_cast<uint8_t>(40 + rng.below(201));
    return img;
}

}  // namespace

TEST_CASE("datasets: random_crop_flip draws offsets within the padding and a coin flip", "[datasets][augment]") {
    const std::vector<uint8_t> original = busy_image(1);
    std::set<int64_t> tops, lefts;
    int flips = 0;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        std::vector<uint8_t> img = original;
        Rng rng(seed);
        const CropFlip drawn = random_crop_flip(view_of(img, 3, 32, 32), rng);
        REQUIRE(drawn.top >= 0);
        REQUIRE(drawn.top <= 8);  // a shift of -4..4 pixels
        REQUIRE(drawn.left >= 0);
        REQUIRE(drawn.left <= 8);
        tops.insert(drawn.top);
        lefts.insert(drawn.left);
        flips += drawn.flipped;
        // The result is exactly the deterministic crop (and flip) at the drawn offsets.
        std::vector<uint8_t> expected = original;
        crop_padded(view_of(expected, 3, 32, 32), 4, drawn.top, drawn.left);
        if (drawn.flipped) flip_horizontal(view_of(expected, 3, 32, 32));
        REQUIRE(img == expected);
        // The same seed draws the same.
        std::vector<uint8_t> again = original;
        Rng rng2(seed);
        random_crop_flip(view_of(again, 3, 32, 32), rng2);
        REQUIRE(again == img);
    }
    REQUIRE(tops.size() == 9);
    REQUIRE(lefts.size() == 9);
    REQUIRE(flips > 70);
    REQUIRE(flips < 130);
    std::vector<uint8_t> img = original;
    Rng rng(0);
    require_error([&] { random_crop_flip(view_of(img, 3, 32, 32), rng, -1); }, {"random_crop_flip", "padding -1"});
}

TEST_CASE("datasets: RandAugment levels are timm's", "[datasets][augment]") {
    // timm auto_augment.py, magnitude 9 of _LEVEL_DENOM 10.
    CHECK(rand_augment_level(RandAugmentOp::Rotate, 9, false) == Approx(27));
    CHECK(rand_augment_level(RandAugmentOp::ShearX, 9, false) == Approx(0.27));
    CHECK(rand_augment_level(RandAugmentOp::ShearY, 9, false) == Approx(0.27));
    CHECK(rand_augment_level(RandAugmentOp::TranslateX, 9, false) == Approx(0.405));
    CHECK(rand_augment_level(RandAugmentOp::TranslateY, 9, false) == Approx(0.405));
    CHECK(rand_augment_level(RandAugmentOp::Posterize, 9, false) == 3);
    CHECK(rand_augment_level(RandAugmentOp::Solarize, 9, false) == 230);
    CHECK(rand_augment_level(RandAugmentOp::SolarizeAdd, 9, false) == 99);
    for (auto op :
         {RandAugmentOp::Color, RandAugmentOp::Contrast, RandAugmentOp::Brightness, RandAugmentOp::Sharpness}) {
        CHECK(rand_augment_level(op, 9, false) == Approx(1.72));
        CHECK(rand_augment_level(op, 0, false) == Approx(0.1));
        CHECK(rand_augment_level(op, 10, false) == Approx(1.9));
        CHECK(rand_augment_level(op, 9, true) == Approx(1.81));
    }
    CHECK(rand_augment_level(RandAugmentOp::Posterize, 10, false) == 4);
    CHECK(rand_augment_level(RandAugmentOp::Solarize, 10, false) == 256);
    CHECK(rand_augment_level(RandAugmentOp::SolarizeAdd, 10, false) == 110);
    CHECK(rand_augment_level(RandAugmentOp::Posterize, 9, true) == 1);
    CHECK(rand_augment_level(RandAugmentOp::Solarize, 9, true) == 26);
    CHECK(rand_augment_level(RandAugmentOp::Equalize, 9, false) == 0);
    CHECK(std::string(rand_augment_op_name(RandAugmentOp::TranslateX)) == "TranslateXRel");
    CHECK(kRandAugmentOps.size() == 15);
    require_error([] { rand_augment_level(RandAugmentOp::Rotate, 11, false); },
                  {"RandAugment", "magnitude 11", "Rotate"});
}

TEST_CASE("datasets: every RandAugment op is deterministic, in place, and changes the image", "[datasets][augment]") {
    const std::vector<uint8_t> original = busy_image(2);
    for (RandAugmentOp op : kRandAugmentOps) {
        INFO(rand_augment_op_name(op));
        for (bool increasing : {false, true}) {
            // Guard bytes around the image: an op must write only inside its view.
            std::vector<uint8_t> a(3 * 1024 + 64, 0xAB), b(3 * 1024 + 64, 0xAB);
            std::copy(original.begin(), original.end(), a.begin() + 32);
            std::copy(original.begin(), original.end(), b.begin() + 32);
            Rng rng_a(7), rng_b(7);
            apply_rand_augment_op({a.data() + 32, 3, 32, 32}, op, 9, increasing, 128, rng_a);
            apply_rand_augment_op({b.data() + 32, 3, 32, 32}, op, 9, increasing, 128, rng_b);
            REQUIRE(a == b);
            REQUIRE(std::all_of(a.begin(), a.begin() + 32, [](uint8_t v) { return v == 0xAB; }));
            REQUIRE(std::all_of(a.end() - 32, a.end(), [](uint8_t v) { return v == 0xAB; }));
            REQUIRE_FALSE(std::equal(original.begin(), original.end(), a.begin() + 32));
        }
    }
}

TEST_CASE("datasets: RandAugment ops use the level: posterize bits, solarize threshold", "[datasets][augment]") {
    const std::vector<uint8_t> original = busy_image(3);
    std::vector<uint8_t> img = original;
    Rng rng(1);
    apply_rand_augment_op(view_of(img, 3, 32, 32), RandAugmentOp::Posterize, 9, false, 128, rng);
    for (size_t i = 0; i < img.size(); ++i) REQUIRE(img[i] == (original[i] & 0xE0));  // 3 bits kept
    img = original;
    apply_rand_augment_op(view_of(img, 3, 32, 32), RandAugmentOp::Solarize, 9, false, 128, rng);
    for (size_t i = 0; i < img.size(); ++i)
        REQUIRE(int(img[i]) == (original[i] < 230 ? original[i] : 255 - original[i]));
    // Rotation by +-27 degrees: one of the two signs, exactly.
    img = original;
    apply_rand_augment_op(view_of(img, 3, 32, 32), RandAugmentOp::Rotate, 9, false, 128, rng);
    std::vector<uint8_t> plus = original, minus = original;
    rotate(view_of(plus, 3, 32, 32), 27, 128);
    rotate(view_of(minus, 3, 32, 32), -27, 128);
    REQUIRE((img == plus || img == minus));
    // Translation by 0.405 * 32 = 12.96 pixels either way.
    img = original;
    apply_rand_augment_op(view_of(img, 3, 32, 32), RandAugmentOp::TranslateY, 9, false, 0, rng);
    plus = original;
    minus = original;
    const double shift = rand_augment_level(RandAugmentOp::TranslateY, 9, false) * 32;
    translate_y(view_of(plus, 3, 32, 32), shift, 0);
    translate_y(view_of(minus, 3, 32, 32), -shift, 0);
    REQUIRE((img == plus || img == minus));
}

TEST_CASE("datasets: RandAugment config strings", "[datasets][augment]") {
    const RandAugment a = RandAugment::parse("rand-m9-n2");
    CHECK(a.magnitude == 9);
    CHECK(a.num_ops == 2);
    CHECK(a.magnitude_std == 0);
    CHECK(a.prob == 0.5);
    CHECK_FALSE(a.increasing);
    CHECK(a.str() == "rand-m9-n2-mstd0-inc0-p0.5");
    const RandAugment b = RandAugment::parse("rand-m9-mstd0.5-inc1");
    CHECK(b.magnitude_std == 0.5);
    CHECK(b.increasing);
    CHECK(b.num_ops == 2);
    const RandAugment c = RandAugment::parse("rand-n3-m10-p1-mstd101");
    CHECK(c.num_ops == 3);
    CHECK(c.magnitude == 10);
    CHECK(c.prob == 1);
    CHECK(std::isinf(c.magnitude_std));
    CHECK(RandAugment::parse(c.str()).str() == c.str());

    require_error([] { RandAugment::parse("augmix-m9"); }, {"RandAugment", "'augmix-m9'", "rand-"});
    require_error([] { RandAugment::parse("rand-x9"); }, {"RandAugment", "'x9'", "m<magnitude>"});
    require_error([] { RandAugment::parse("rand-m"); }, {"'m'"});
    require_error([] { RandAugment::parse("rand-m9x"); }, {"'m9x'"});
    require_error([] { RandAugment::parse("rand-n2.5"); }, {"'n2.5'", "integer"});
    // n = 10^9 operations per image never finished a batch; 10^30 overflowed the conversion.
    CHECK(RandAugment::parse("rand-m9-n15").num_ops == 15);
    require_error([] { RandAugment::parse("rand-m9-n1000000000"); }, {"'n1000000000'", "integer from 0 to 15"});
    require_error([] { RandAugment::parse("rand-m9-n1e30"); }, {"'n1e30'", "from 0 to 15"});
    RandAugment too_many;
    too_many.num_ops = 16;
    require_error([&] { too_many.validate(); }, {"RandAugment", "n in [0, 15]"});
    require_error([] { RandAugment::parse("rand-m11"); }, {"RandAugment", "m in [0, 10]"});
    require_error([] { RandAugment::parse("rand-p2"); }, {"RandAugment", "p in [0, 1]"});
}

TEST_CASE("datasets: RandAugment policy is seeded", "[datasets][augment]") {
    const std::vector<uint8_t> original = busy_image(4);
    const auto run = [&](const RandAugment& ra, uint64_t seed) {
        std::vector<uint8_t> img = original;
        Rng rng(seed);
        ra.apply(view_of(img, 3, 32, 32), rng);
        return img;
    };
    RandAugment ra = RandAugment::parse("rand-m9-n2-p1");
    REQUIRE(run(ra, 5) == run(ra, 5));
    REQUIRE(run(ra, 5) != run(ra, 6));
    REQUIRE(run(ra, 5) != original);
    ra.num_ops = 0;
    REQUIRE(run(ra, 5) == original);
    ra = RandAugment::parse("rand-m9-n4-p0");
    REQUIRE(run(ra, 5) == original);
    // Noisy magnitudes (normal and uniform) stay seeded.
    ra = RandAugment::parse("rand-m9-n2-mstd0.5-p1");
    REQUIRE(run(ra, 8) == run(ra, 8));
    ra = RandAugment::parse("rand-m9-n2-mstd101-p1");
    REQUIRE(run(ra, 8) == run(ra, 8));
}

TEST_CASE("datasets: RandomErasing boxes follow timm's area and aspect ranges", "[datasets][augment]") {
    const std::vector<uint8_t> original = busy_image(5);
    RandomErasing erasing;
    erasing.prob = 1;
    int erased = 0;
    for (uint64_t seed = 0; seed < 100; ++seed) {
        std::vector<uint8_t> img = original;
        Rng rng(seed);
        const Box box = erasing.apply(view_of(img, 3, 32, 32), rng);
        if (box.area() == 0) continue;
        ++erased;
        INFO("seed " << seed << " box " << box.top << "," << box.left << " " << box.height << "x" << box.width);
        REQUIRE(box.top >= 0);
        REQUIRE(box.left >= 0);
        REQUIRE(box.top + box.height <= 32);
        REQUIRE(box.left + box.width <= 32);
        // Area in [0.02, 1/3] of the image and aspect in [0.3, 1/0.3], up to rounding each
        // side to whole pixels: h w <= a + (sqrt(a r) + sqrt(a / r)) / 2 + 1/4 at the extremes,
        // and h / w <= (sqrt(a r) + 1/2) / (sqrt(a / r) - 1/2) < 4.5 (largest for the smallest a).
        const double h = static_cast<double>(box.height), w = static_cast<double>(box.width);
        const double a_max = 1024.0 / 3;
        REQUIRE(h * w <= a_max + (std::sqrt(a_max / 0.3) + std::sqrt(a_max * 0.3)) / 2 + 0.25);
        REQUIRE((h + 0.5) * (w + 0.5) >= 0.02 * 1024);
        REQUIRE(h / w < 4.5);
        REQUIRE(w / h < 4.5);
        // Pixels outside the box are untouched.
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t y = 0; y < 32; ++y)
                for (int64_t x = 0; x < 32; ++x) {
                    const bool inside =
                        y >= box.top && y < box.top + box.height && x >= box.left && x < box.left + box.width;
                    const size_t i = (c * 32 + y) * 32 + x;
                    if (!inside) REQUIRE(img[i] == original[i]);
                }
        std::vector<uint8_t> again = original;
        Rng rng2(seed);
        const Box box2 = erasing.apply(view_of(again, 3, 32, 32), rng2);
        REQUIRE(again == img);
        REQUIRE(box2.top == box.top);
    }
    REQUIRE(erased > 90);

    erasing.fill = RandomErasing::Fill::Constant;
    erasing.value = 7;
    std::vector<uint8_t> img = original;
    Rng rng(3);
    Box box = erasing.apply(view_of(img, 3, 32, 32), rng);
    REQUIRE(box.area() > 0);
    REQUIRE(std::count(img.begin(), img.end(), 7) >= 3 * box.area());
    erasing.fill = RandomErasing::Fill::RandomColor;
    img = original;
    box = erasing.apply(view_of(img, 3, 32, 32), rng);
    REQUIRE(box.area() > 1);
    for (int64_t c = 0; c < 3; ++c) {
        const uint8_t colour = img[(c * 32 + box.top) * 32 + box.left];
        for (int64_t y = box.top; y < box.top + box.height; ++y)
            for (int64_t x = box.left; x < box.left + box.width; ++x) REQUIRE(img[(c * 32 + y) * 32 + x] == colour);
    }
    erasing.prob = 0;
    img = original;
    REQUIRE(erasing.apply(view_of(img, 3, 32, 32), rng).area() == 0);
    REQUIRE(img == original);
    erasing.min_area = 0.5;
    require_error([&] { erasing.apply(view_of(img, 3, 32, 32), rng); }, {"RandomErasing", "area [0.500000, 0.333333]"});
}

TEST_CASE("datasets: Augmentation pipeline on a batch is seeded and keeps labels", "[datasets][augment]") {
    const ImageSet batch = random_images(16, 3, 32, 32, 10, 9);
    Augmentation aug;
    aug.rand_augment = RandAugment::parse("rand-m9-n2");
    aug.erasing = RandomErasing{};
    const auto run = [&](const Augmentation& a, uint64_t seed) {
        ImageSet b = batch;
        Rng rng(seed);
        a.apply(b, rng);
        return b;
    };
    const ImageSet once = run(aug, 3);
    REQUIRE(once.labels == batch.labels);
    REQUIRE(once.pixels.size() == batch.pixels.size());
    REQUIRE(run(aug, 3).pixels == once.pixels);
    REQUIRE(run(aug, 4).pixels != once.pixels);
    // Each image's change differs from the next one's: the draws move on image after image.
    Augmentation crop_only;
    const ImageSet cropped = run(crop_only, 3);
    int changed = 0;
    for (int64_t i = 0; i < 16; ++i) changed += !std::equal(cropped.image(i), cropped.image(i) + 3072, batch.image(i));
    REQUIRE(changed >= 12);  // only offsets (4, 4) without a flip leave an image alone
    Augmentation nothing;
    nothing.crop_flip = false;
    REQUIRE(run(nothing, 3).pixels == batch.pixels);
}

}  // namespace patchgrad
