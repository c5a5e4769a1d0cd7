// evaluation.h — a model's accuracy, mean loss and confusion matrix on a set of images: what
// the trainer runs after every epoch and at the end (trainer.h), and `patchgrad eval` prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "patchgrad/autograd/enum_names.h"
#include "patchgrad/datasets/image_set.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/vit/vision_transformer.h"

namespace patchgrad {

// Test-time augmentation: what evaluate() shows the model of each image.
enum class TestTimeAugment {
    None,  // "none": the image
    Flip,  // "flip": the image and its mirror image, their logits averaged
};
template <>
struct EnumNames<TestTimeAugment> {
    static constexpr std::pair<TestTimeAugment, const char*> table[] = {{TestTimeAugment::None, "none"},
                                                                        {TestTimeAugment::Flip, "flip"}};
};

struct Evaluation {
    int64_t images = 0;
    double loss = 0;      // mean cross-entropy, no label smoothing
    double accuracy = 0;  // fraction of images whose largest logit is their label
    std::vector<std::string> class_names;
    std::vector<int64_t> confusion;  // [K, K] row-major: row = true class, column = predicted

    int64_t num_classes() const { return static_cast<int64_t>(class_names.size()); }
    // Per class: correct / images of that class; NaN for a class without images.
    std::vector<double> class_accuracy() const;
};

// The model in eval mode (no dropout, no drop path) under NoGradGuard, batch after batch;
// its train/eval mode is restored afterwards. With TestTimeAugment::Flip each image's logits
// are the mean of the image's and its mirror image's (the training flips images too, so
// the model knows both; twice the forward passes), and the loss is that of the mean. Throws std::invalid_argument when the images
// or the class count do not fit the model, and std::runtime_error naming the first
// parameter that holds NaN or infinity when the mean loss is not finite (a broken model
// must not report "accuracy 10%, loss nan" as a result).
Evaluation evaluate(VisionTransformer& model, const ImageSet& set, const ChannelStats& stats, int64_t batch_size,
                    TestTimeAugment tta = TestTimeAugment::None);

// The accuracy line, a table of per-class accuracy with class names, and the confusion
// matrix with abbreviated class names as column headers, every column aligned.
std::string format_evaluation(const Evaluation& evaluation);

// One class of a prediction, and how probable the model finds it.
struct ClassProbability {
    int64_t label = 0;
    double probability = 0;  // softmax of the logits (the op, autograd/ops/softmax.cpp)
};

// The `k` most probable classes of each image of `set` ([N][min(k, classes)], most probable
// first, ties by label), the model in eval mode under NoGradGuard as in evaluate(): what
// `patchgrad predict` prints. Throws std::invalid_argument when the images do not fit the
// model or k < 1.
std::vector<std::vector<ClassProbability>> top_classes(VisionTransformer& model, const ImageSet& set,
                                                       const ChannelStats& stats, int64_t k);

// The index of the largest of row[0..n): the class a row of logits predicts.
int64_t argmax(const real* row, int64_t n);

}  // namespace patchgrad
