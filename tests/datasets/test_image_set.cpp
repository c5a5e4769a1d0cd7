// Tests for datasets/image_set.cpp: subsets, class counts, the consistency check and check_image_shape.
#include "patchgrad/datasets/image_set.h"

#include <stdexcept>
#include <string>

#include "catch.h"
#include "datasets_test_util.h"
#include "test_util.h"

namespace patchgrad {

using namespace patchgrad::test;

TEST_CASE("datasets: ImageSet subset copies the chosen images in order", "[datasets][image_set]") {
    const ImageSet set = random_images(5, 2, 3, 4, 3, 1);
    const ImageSet sub = set.subset({4, 0, 4});
    REQUIRE(sub.size() == 3);
    REQUIRE(sub.channels == 2);
    REQUIRE(sub.height == 3);
    REQUIRE(sub.width == 4);
    REQUIRE(sub.class_names == set.class_names);
    REQUIRE(sub.labels == std::vector<int64_t>{set.labels[4], set.labels[0], set.labels[4]});
    for (int64_t k = 0; k < 3; ++k) {
        const int64_t i = std::vector<int64_t>{4, 0, 4}[k];
        REQUIRE(std::equal(sub.image(k), sub.image(k) + 24, set.image(i)));
    }
    REQUIRE(set.subset({}).size() == 0);
    REQUIRE(set.class_counts() == std::vector<int64_t>{2, 2, 1});
}

TEST_CASE("datasets: ImageSet errors", "[datasets][image_set][errors]") {
    const ImageSet set = random_images(5, 2, 3, 4, 3, 1);
    require_error([&] { set.subset({1, 5}); }, {"ImageSet::subset", "index 5 at position 1", "5 images"});
    require_error([&] { set.subset({-1}); }, {"index -1"});
    ImageSet bad_label = set;
    bad_label.labels[2] = 3;
    require_error([&] { bad_label.check("here"); }, {"here", "label 3 of image 2", "3 classes"});
    require_error([&] { bad_label.class_counts(); }, {"ImageSet::class_counts", "label 3"});
    ImageSet bad_size = set;
    bad_size.pixels.resize(100);
    require_error([&] { bad_size.check("there"); }, {"there", "100 pixel bytes for 5 labels", "[2, 3, 4]", "120"});
    ImageSet bad_shape = set;
    bad_shape.height = 0;
    require_error([&] { bad_shape.check("shape"); }, {"shape", "[2, 0, 4]", "positive"});
}

TEST_CASE("datasets: check_image_shape compares images and classes with what a consumer takes",
          "[datasets][image_set][errors]") {
    const ImageSet set = random_images(5, 2, 3, 4, 3, 1);  // [2, 3, 4] images, 3 classes
    REQUIRE(set.image_shape() == Shape{2, 3, 4});
    REQUIRE_NOTHROW(check_image_shape(set, {2, 3, 4}, "here", "the model takes"));
    REQUIRE_NOTHROW(check_image_shape(set, {2, 3, 4}, "here", "the model takes", 3));
    REQUIRE_THROWS_AS(check_image_shape(set, {3, 3, 4}, "here", "x"), std::invalid_argument);
    try {
        check_image_shape(set, {3, 32, 32}, "save: a.bin", "CIFAR-10 records hold");
        FAIL("no error");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) == "save: a.bin: images are [2, 3, 4]; CIFAR-10 records hold [3, 32, 32]");
    }
    try {
        check_image_shape(set, {2, 3, 4}, "evaluate", "the model takes", 10);
        FAIL("no error");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) ==
              "evaluate: images are [2, 3, 4] in 3 classes; the model takes [2, 3, 4] in 10 classes");
    }
}

}  // namespace patchgrad
