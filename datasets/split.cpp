// split.cpp — the stratified, seeded train/validation split.
#include "patchgrad/datasets/split.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "patchgrad/autograd/rng.h"

namespace patchgrad {

TrainValidationSplit split_validation(ImageSet set, int64_t validation_size, uint64_t seed) {
    set.check("split_validation");
    const int64_t K = set.num_classes();
    check(K != 0 && validation_size >= 0 && validation_size % K == 0, "split_validation: validation size ",
          validation_size, " must be a non-negative multiple of the ", K,
          " classes (the split takes the same number from each)");
    const int64_t per_class = validation_size / K;

    std::vector<std::vector<int64_t>> by_class(K);
    for (int64_t i = 0; i < set.size(); ++i) by_class[set.labels[i]].push_back(i);

    Rng rng(seed);
    std::vector<bool> in_validation(set.size(), false);
    for (int64_t k = 0; k < K; ++k) {
        std::vector<int64_t>& members = by_class[k];
        const int64_t n = static_cast<int64_t>(members.size());
        check(per_class < n, "split_validation: class ", k, " ('", set.class_names[k], "') has ", n,
              " images; a validation share of ", per_class, " per class would leave none for training");
        // A partial Fisher–Yates: the first per_class entries become a uniform random draw.
        for (int64_t i = 0; i < per_class; ++i) {
            std::swap(members[i], members[i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - i)))]);
            in_validation[members[i]] = true;
        }
    }

    std::vector<int64_t> validation_indices;
    validation_indices.reserve(validation_size);
    for (int64_t i = 0; i < set.size(); ++i)
        if (in_validation[i]) validation_indices.push_back(i);
    ImageSet validation = set.subset(validation_indices);

    // Compact the training images to the front, in order (image `kept` < i never overlaps i).
    const int64_t n = set.image_numel();
    int64_t kept = 0;
    for (int64_t i = 0; i < set.size(); ++i) {
        if (in_validation[i]) continue;
        if (kept != i) std::memcpy(set.pixels.data() + kept * n, set.pixels.data() + i * n, n);
        set.labels[kept++] = set.labels[i];
    }
    set.labels.resize(kept);
    set.pixels.resize(kept * n);
    return {std::move(set), std::move(validation)};
}

}  // namespace patchgrad
