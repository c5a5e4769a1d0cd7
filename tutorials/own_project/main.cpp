// own_project — a project of your own that uses patchgrad: copy this folder out of the
// repository and change it. A small MLP learns which of three rings around the origin a
// point lies in (2-D points, 3 classes: no straight line separates them); it prints its loss
// and accuracy as it trains, in a second or two.
// CMakeLists.txt beside it finds an installed patchgrad (tutorials/00_setup/README.md, "Use
// patchgrad in your own project"), or builds one from source with -DPATCHGRAD_SOURCE_DIR=path/to/patchgrad.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include <patchgrad/autograd/ops.h>
#include <patchgrad/autograd/optim/optimizer.h>
#include <patchgrad/autograd/rng.h>
#include <patchgrad/autograd/version.h>
#include <patchgrad/layers/activation.h>
#include <patchgrad/layers/linear.h>
#include <patchgrad/layers/sequential.h>

using namespace patchgrad;

constexpr int64_t kClasses = 3;
constexpr int64_t kPoints = 600;
constexpr double kPi = 3.14159265358979323846;

struct Dataset {
    Tensor points;                // [N, 2]
    std::vector<int64_t> labels;  // [N], each in 0 .. kClasses-1
};

// kPoints random points of the unit disc; ring k (the label) holds the radii from k/3 to (k+1)/3.
Dataset rings(Rng& rng) {
    Dataset d{Tensor::zeros({kPoints, 2}), {}};
    for (int64_t row = 0; row < kPoints; ++row) {
        const double radius = rng.uniform(), angle = rng.uniform(0, 2 * kPi);
        d.points.at({row, 0}) = static_cast<real>(radius * std::cos(angle));
        d.points.at({row, 1}) = static_cast<real>(radius * std::sin(angle));
        d.labels.push_back(static_cast<int64_t>(radius * kClasses));
    }
    return d;
}

// The fraction of points the model puts in their class (the largest of its kClasses logits).
double accuracy(Layer& model, const Dataset& d) {
    NoGradGuard no_grad;                            // evaluation only: no graph for backward
    const Tensor logits = model.forward(d.points);  // [N, kClasses]
    const std::vector<int64_t>& labels = d.labels;
    int64_t right = 0;
    for (int64_t row = 0; row < static_cast<int64_t>(labels.size()); ++row) {
        int64_t best = 0;
        for (int64_t k = 1; k < kClasses; ++k)
            if (logits.at({row, k}) > logits.at({row, best})) best = k;
        right += best == labels[static_cast<size_t>(row)];
    }
    return static_cast<double>(right) / static_cast<double>(labels.size());
}

int main() {
    std::printf("patchgrad %s, %s\n", kVersion, sizeof(real) == 4 ? "float32" : "float64");
    Rng rng(1);
    const Dataset train = rings(rng);
    const Dataset test = rings(rng);

    // 2 -> 64 -> 64 -> 3: the hidden layers bend the plane until the rings come apart.
    Sequential model;
    model.add(std::make_shared<Linear>(2, 64, rng))
        .add(std::make_shared<GELU>())
        .add(std::make_shared<Linear>(64, 64, rng))
        .add(std::make_shared<GELU>())
        .add(std::make_shared<Linear>(64, kClasses, rng));
    AdamW optimizer(model.parameters(), 1e-2, {0.9, 0.999}, 1e-8, 0);

    // Full-batch training: every step sees all kPoints training points.
    for (int step = 1; step <= 300; ++step) {
        Tensor loss = cross_entropy(model.forward(train.points), train.labels);
        loss.backward();
        optimizer.step();
        optimizer.zero_grad();
        if (step % 50 == 0)
            std::printf("step %3d  loss %.4f  train accuracy %.3f\n", step, static_cast<double>(loss.item()),
                        accuracy(model, train));
    }
    const double test_accuracy = accuracy(model, test);
    std::printf("test accuracy %.3f on %zu new points (chance: %.3f)\n", test_accuracy, test.labels.size(),
                1.0 / kClasses);
    return test_accuracy > 0.9 ? 0 : 1;  // so CI notices a template that no longer learns
}
