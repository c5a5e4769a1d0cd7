// image_set.h — a labelled set of images kept as bytes, the unit the data pipeline passes on.
//
// A data set stays as uint8 pixels until a batch is fed to the model: the 50,000 CIFAR-10
// training images are 150 MiB as bytes and would be 600 MiB as floats. ImageSet is that
// storage ([N, C, H, W] bytes, channel planes row-major, like a torch uint8 tensor) with
// one label per image and the class names. A batch is an ImageSet too (`subset`), which the
// augmentations change in place before `to_tensor` (normalize.h) turns it into floats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "patchgrad/autograd/check.h"

namespace patchgrad {

// One image [channels, height, width] inside someone else's storage, which the image
// operations (image_ops.h) change in place.
struct ImageView {
    uint8_t* data = nullptr;
    int64_t channels = 0;
    int64_t height = 0;
    int64_t width = 0;

    int64_t plane() const { return height * width; }
    int64_t numel() const { return channels * height * width; }
    uint8_t& at(int64_t c, int64_t y, int64_t x) const { return data[(c * height + y) * width + x]; }
};

struct ImageSet {
    int64_t channels = 3;
    int64_t height = 32;
    int64_t width = 32;
    std::vector<uint8_t> pixels;           // [N, C, H, W]
    std::vector<int64_t> labels;           // [N], each in [0, class_names.size())
    std::vector<std::string> class_names;  // label -> name

    int64_t size() const { return static_cast<int64_t>(labels.size()); }
    int64_t num_classes() const { return static_cast<int64_t>(class_names.size()); }
    int64_t image_numel() const { return channels * height * width; }
    Shape image_shape() const { return {channels, height, width}; }
    const uint8_t* image(int64_t i) const { return pixels.data() + i * image_numel(); }
    ImageView view(int64_t i) { return {pixels.data() + i * image_numel(), channels, height, width}; }

    // The images at `indices`, in that order (repeats allowed): a batch, or a split.
    ImageSet subset(const std::vector<int64_t>& indices) const;
    // Images per class, [num_classes].
    std::vector<int64_t> class_counts() const;
    // Throws std::invalid_argument naming `where` unless the sizes agree and every label is
    // a class: the invariant every function taking an ImageSet relies on.
    void check(const std::string& where) const;
};

// The one check that a set's images are what a consumer takes (a model, a file format):
// throws std::invalid_argument
//   "<where>: images are [1, 32, 32]; <expected_by> [3, 32, 32]"
// and, when num_classes >= 0, compares the class count too:
//   "<where>: images are [3, 32, 32] in 5 classes; <expected_by> [3, 32, 32] in 10 classes".
// `expected_by` ends in its verb: "CIFAR-10 records hold", "the model takes".
void check_image_shape(const ImageSet& set, const Shape& expected, const std::string& where,
                       const std::string& expected_by, int64_t num_classes = -1);

}  // namespace patchgrad
