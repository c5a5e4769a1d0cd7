// image_set.cpp — subsets, class counts and the consistency check of an ImageSet.
#include "image_set.h"

#include <cstring>
#include <stdexcept>

namespace patchgrad {

void ImageSet::check(const std::string& where) const {
    if (channels <= 0 || height <= 0 || width <= 0)
        throw std::invalid_argument(where + ": image shape [" + std::to_string(channels) + ", " +
                                    std::to_string(height) + ", " + std::to_string(width) + "] must be positive");
    const uint64_t expected = static_cast<uint64_t>(size()) * static_cast<uint64_t>(image_numel());
    if (pixels.size() != expected)
        throw std::invalid_argument(where + ": " + std::to_string(pixels.size()) + " pixel bytes for " +
                                    std::to_string(size()) + " labels of images [" + std::to_string(channels) + ", " +
                                    std::to_string(height) + ", " + std::to_string(width) + "]; expected " +
                                    std::to_string(expected));
    for (int64_t i = 0; i < size(); ++i)
        if (labels[i] < 0 || labels[i] >= num_classes())
            throw std::invalid_argument(where + ": label " + std::to_string(labels[i]) + " of image " +
                                        std::to_string(i) + " is not one of the " + std::to_string(num_classes()) +
                                        " classes");
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
        if (i < 0 || i >= size())
            throw std::invalid_argument("ImageSet::subset: index " + std::to_string(i) + " at position " +
                                        std::to_string(k) + " is out of range for a set of " + std::to_string(size()) +
                                        " images");
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
