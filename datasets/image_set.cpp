// image_set.cpp — subsets, class counts, the consistency check of an ImageSet and check_image_shape.
#include "patchgrad/datasets/image_set.h"

#include <cstring>
#include <stdexcept>

namespace patchgrad {

// In ImageSet's members `check` names this member, so the message helper is patchgrad::check.
void ImageSet::check(const std::string& where) const {
    // Not image_shape(): a check that passes builds nothing.
    if (channels <= 0 || height <= 0 || width <= 0) fail(where, ": image shape ", image_shape(), " must be positive");
    const uint64_t expected = static_cast<uint64_t>(size()) * static_cast<uint64_t>(image_numel());
    if (pixels.size() != expected)
        fail(where, ": ", pixels.size(), " pixel bytes for ", size(), " labels of images ", image_shape(),
             "; expected ", expected);
    for (int64_t i = 0; i < size(); ++i)
        patchgrad::check(labels[i] >= 0 && labels[i] < num_classes(), where, ": label ", labels[i], " of image ", i,
                         " is not one of the ", num_classes(), " classes");
}

void check_image_shape(const ImageSet& set, const Shape& expected, const std::string& where,
                       const std::string& expected_by, int64_t num_classes) {
    // fail(), not check(): the message's set.image_shape() is built only when it is needed.
    const bool shape_fits =
        expected.size() == 3 && set.channels == expected[0] && set.height == expected[1] && set.width == expected[2];
    if (num_classes < 0) {
        if (!shape_fits) fail(where, ": images are ", set.image_shape(), "; ", expected_by, " ", expected);
    } else if (!shape_fits || set.num_classes() != num_classes) {
        fail(where, ": images are ", set.image_shape(), " in ", set.num_classes(), " classes; ", expected_by, " ",
             expected, " in ", num_classes, " classes");
    }
}

ImageSet ImageSet::subset(const std::vector<int64_t>& indices) const {
    ImageSet out;
    out.channels = channels;
    out.height = height;
    out.width = width;
    out.class_names = class_names;
    const int64_t n = image_numel();
    out.pixels.resize(indices.size() * n);
    out.labels.resize(indices.size());
    for (size_t k = 0; k < indices.size(); ++k) {
        const int64_t i = indices[k];
        patchgrad::check(i >= 0 && i < size(), "ImageSet::subset: index ", i, " at position ", k,
                         " is out of range for a set of ", size(), " images");
        std::memcpy(out.pixels.data() + k * n, image(i), n);
        out.labels[k] = labels[i];
    }
    return out;
}

std::vector<int64_t> ImageSet::class_counts() const {
    check("ImageSet::class_counts");
    std::vector<int64_t> counts(class_names.size(), 0);
    for (int64_t label : labels) ++counts[label];
    return counts;
}

}  // namespace patchgrad
