// split.h — a validation split carved out of the training set.
//
// Hyper-parameters are tuned on images the model does not train on, and the test set is
// kept for the final numbers only (so it is never an argument here). The split is
// stratified: the validation set holds the same number of images of every class, drawn by
// a seeded shuffle within each class, so a 5,000-image split of CIFAR-10 is exactly 500 per
// class and the same seed always carves out the same images. Both parts keep the images in
// their original order.
#pragma once

#include <cstdint>

#include "patchgrad/datasets/image_set.h"

namespace patchgrad {

struct TrainValidationSplit {
    ImageSet train;
    ImageSet validation;
};

// validation_size must be a multiple of the number of classes (0 gives an empty validation
// set), and every class must keep at least one training image. The training part is the
// set itself with the validation images taken out: split_validation(std::move(train), ...)
// makes no second copy of the 150 MiB.
TrainValidationSplit split_validation(ImageSet set, int64_t validation_size, uint64_t seed);

}  // namespace patchgrad
