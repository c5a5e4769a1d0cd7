// evaluation.cpp — accuracy, loss and confusion matrix of a model on a set; see evaluation.h.
#include "patchgrad/vit/train/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/datasets/batcher.h"
#include "patchgrad/datasets/image_ops.h"
#include "patchgrad/layers/module.h"
#include "patchgrad/vit/train/checkpoint.h"

namespace patchgrad {

int64_t argmax(const real* row, int64_t n) { return std::max_element(row, row + n) - row; }

std::vector<double> Evaluation::class_accuracy() const {
    const int64_t K = num_classes();
    std::vector<double> out(K);
    for (int64_t k = 0; k < K; ++k) {
        int64_t total = 0;
        for (int64_t j = 0; j < K; ++j) total += confusion[k * K + j];
        out[k] = total > 0 ? double(confusion[k * K + k]) / double(total) : std::nan("");
    }
    return out;
}

std::vector<std::vector<ClassProbability>> top_classes(VisionTransformer& model, const ImageSet& set,
                                                       const ChannelStats& stats, int64_t k) {
    const ViTConfig& c = model.config;
    check_image_shape(set, {c.channels, c.image_height, c.image_width}, "top_classes", "the model takes");
    check(k >= 1, "top_classes: k must be positive, got ", k);
    EvalModeGuard eval_mode(model);
    NoGradGuard no_grad;
    const Tensor probabilities = softmax(model.forward(to_tensor(set, stats)), -1);  // [N, classes]
    const int64_t K = c.num_classes;
    std::vector<std::vector<ClassProbability>> result;
    for (int64_t i = 0; i < set.size(); ++i) {
        std::vector<ClassProbability> classes;
        for (int64_t j = 0; j < K; ++j) classes.push_back({j, double(probabilities.data()[i * K + j])});
        std::stable_sort(classes.begin(), classes.end(), [](const ClassProbability& a, const ClassProbability& b) {
            return a.probability > b.probability;
        });
        classes.resize(static_cast<size_t>(std::min(k, K)));
        result.push_back(std::move(classes));
    }
    return result;
}

Evaluation evaluate(VisionTransformer& model, const ImageSet& set, const ChannelStats& stats, int64_t batch_size,
                    TestTimeAugment tta) {
    const ViTConfig& c = model.config;
    check_image_shape(set, {c.channels, c.image_height, c.image_width}, "evaluate", "the model takes", c.num_classes);
    EvalModeGuard eval_mode(model);
    NoGradGuard no_grad;
    Evaluation e;
    e.class_names = set.class_names;
    const int64_t K = e.num_classes();
    e.confusion.assign(K * K, 0);
    const Batcher batcher = Batcher::sequential(set.size(), batch_size);
    const std::vector<int64_t> order = batcher.epoch_order(0);
    int64_t correct = 0;
    for (int64_t b = 0; b < batcher.num_batches(); ++b) {
        const ImageSet batch = set.subset(batcher.batch(order, b));
        Tensor logits = model.forward(to_tensor(batch, stats));
        if (tta == TestTimeAugment::Flip) {
            ImageSet mirrored = batch;
            for (int64_t i = 0; i < mirrored.size(); ++i) flip_horizontal(mirrored.view(i));
            logits = (logits + model.forward(to_tensor(mirrored, stats))) * real(0.5);
        }
        e.loss += double(cross_entropy(logits, batch.labels).item()) * double(batch.size());
        for (int64_t i = 0; i < batch.size(); ++i) {
            const int64_t predicted = argmax(logits.data() + i * K, K);
            ++e.confusion[batch.labels[i] * K + predicted];
            correct += predicted == batch.labels[i];
        }
    }
    e.images = set.size();
    if (e.images > 0) {
        e.loss /= double(e.images);
        e.accuracy = double(correct) / double(e.images);
    }
    if (!std::isfinite(e.loss)) {
        for (const auto& [name, p] : model.named_parameters()) {
            const std::string non_finite = non_finite_element(name, p);
            if (!non_finite.empty())
                fail<std::runtime_error>("evaluate: the mean loss is ", exact_text(e.loss), ": ", non_finite);
        }
        fail<std::runtime_error>("evaluate: the mean loss is ", exact_text(e.loss),
                                 " though every parameter is finite: the logits overflow");
    }
    return e;
}

std::string format_evaluation(const Evaluation& e) {
    const int64_t K = e.num_classes();
    size_t name_width = 5;
    for (const std::string& n : e.class_names) name_width = std::max(name_width, n.size());
    const int w = static_cast<int>(name_width) + 2;
    std::ostringstream os;
    char line[160];
    std::snprintf(line, sizeof line, "accuracy %.2f%% (%lld of %lld images), mean loss %.4f\n\n", 100 * e.accuracy,
                  static_cast<long long>(std::llround(e.accuracy * double(e.images))), static_cast<long long>(e.images),
                  e.loss);
    os << line;
    std::snprintf(line, sizeof line, "%-*s %9s %8s\n", w, "class", "accuracy", "images");
    os << line;
    const std::vector<double> per_class = e.class_accuracy();
    for (int64_t k = 0; k < K; ++k) {
        int64_t images = 0;
        for (int64_t j = 0; j < K; ++j) images += e.confusion[k * K + j];
        std::snprintf(line, sizeof line, "%-*s %8.1f%% %8lld\n", w, e.class_names[k].c_str(), 100 * per_class[k],
                      static_cast<long long>(images));
        os << line;
    }
    // Columns wide enough for the largest count and a 5-letter class abbreviation.
    const int64_t largest = e.confusion.empty() ? 0 : *std::max_element(e.confusion.begin(), e.confusion.end());
    const int cw = std::max<int>(6, static_cast<int>(std::to_string(largest).size()) + 1);
    os << "\nconfusion matrix (rows: true class, columns: predicted class)\n";
    std::snprintf(line, sizeof line, "%-*s", w, "");
    os << line;
    for (int64_t k = 0; k < K; ++k) {
        std::snprintf(line, sizeof line, "%*s", cw, e.class_names[k].substr(0, 5).c_str());
        os << line;
    }
    os << "\n";
    for (int64_t k = 0; k < K; ++k) {
        std::snprintf(line, sizeof line, "%-*s", w, e.class_names[k].c_str());
        os << line;
        for (int64_t j = 0; j < K; ++j) {
            std::snprintf(line, sizeof line, "%*lld", cw, static_cast<long long>(e.confusion[k * K + j]));
            os << line;
        }
        os << "\n";
    }
    return os.str();
}

}  // namespace patchgrad
