// Tests for datasets/split.cpp: the stratified, seeded validation split.
#include "patchgrad/datasets/split.h"

#include <set>

#include "catch.h"
#include "datasets_test_util.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

// `count` images [1, 2, 2] whose first two bytes spell their index, labels i % classes.
ImageSet numbered(int64_t count, int64_t classes) {
    ImageSet set = random_images(count, 1, 2, 2, classes, 3);
    for (int64_t i = 0; i < count; ++i) {
        set.view(i).at(0, 0, 0) = static_cast<uint8_t>(i / 256);
        set.view(i).at(0, 0, 1) = static_cast<uint8_t>(i % 256);
    }
    return set;
}

std::vector<int64_t> indices_of(const ImageSet& set) {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < set.size(); ++i) out.push_back(set.image(i)[0] * 256 + set.image(i)[1]);
    return out;
}

}  // namespace

TEST_CASE("datasets: validation split is stratified, disjoint and complete", "[datasets][split]") {
    const ImageSet set = numbered(300, 10);
    const TrainValidationSplit split = split_validation(set, 50, 17);
    REQUIRE(split.validation.size() == 50);
    REQUIRE(split.train.size() == 250);
    REQUIRE(split.validation.class_counts() == std::vector<int64_t>(10, 5));
    REQUIRE(split.train.class_counts() == std::vector<int64_t>(10, 25));
    REQUIRE(split.train.class_names == set.class_names);

    const std::vector<int64_t> train = indices_of(split.train), validation = indices_of(split.validation);
    // Both keep the original order, so each index list is increasing.
    REQUIRE(std::is_sorted(train.begin(), train.end()));
    REQUIRE(std::is_sorted(validation.begin(), validation.end()));
    std::set<int64_t> all(train.begin(), train.end());
    all.insert(validation.begin(), validation.end());
    REQUIRE(all.size() == 300);
    for (size_t k = 0; k < validation.size(); ++k) REQUIRE(split.validation.labels[k] == set.labels[validation[k]]);
    // A random draw within each class, not simply its first five images (indices 0..49).
    REQUIRE(validation.back() >= 50);
}

TEST_CASE("datasets: validation split depends only on the seed", "[datasets][split]") {
    const ImageSet set = numbered(200, 4);
    REQUIRE(indices_of(split_validation(set, 20, 1).validation) == indices_of(split_validation(set, 20, 1).validation));
    REQUIRE(indices_of(split_validation(set, 20, 1).validation) != indices_of(split_validation(set, 20, 2).validation));
    // Moving the set in (no second copy of the pixels) splits it the same way.
    ImageSet moved = set;
    const TrainValidationSplit from_move = split_validation(std::move(moved), 20, 1);
    REQUIRE(from_move.train.pixels == split_validation(set, 20, 1).train.pixels);
    REQUIRE(from_move.train.labels == split_validation(set, 20, 1).train.labels);
    REQUIRE(from_move.validation.pixels == split_validation(set, 20, 1).validation.pixels);
    const TrainValidationSplit none = split_validation(set, 0, 1);
    REQUIRE(none.validation.size() == 0);
    REQUIRE(none.train.pixels == set.pixels);
}

TEST_CASE("datasets: validation split errors", "[datasets][split][errors]") {
    const ImageSet set = numbered(40, 10);
    require_error([&] { split_validation(set, 25, 1); }, {"split_validation", "25", "multiple of the 10 classes"});
    require_error([&] { split_validation(set, -10, 1); }, {"split_validation", "-10"});
    require_error([&] { split_validation(set, 40, 1); },
                  {"split_validation", "class 0 ('class0') has 4 images", "4 per class", "none for training"});
    ImageSet uneven = numbered(40, 10);
    uneven.labels[3] = 0;  // class 3 now has 3 images
    require_error([&] { split_validation(uneven, 30, 1); }, {"class 3 ('class3') has 3 images"});
}

}  // namespace patchgrad
