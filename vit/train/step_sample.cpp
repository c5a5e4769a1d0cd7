#include "patchgrad/vit/train/step_sample.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/storage.h"

namespace patchgrad {

namespace {

// A quarter of a batch of cifar-tiny activations: 32 x 65 tokens of width 128, an MLP of 256,
// softmax rows of 65.
constexpr int64_t kTokens = 32 * 65, kDim = 128, kHidden = 256, kRow = 65;

}  // namespace

StepSample::StepSample() {
    Rng rng(0);
    inputs_ = {Tensor::uniform({kTokens, kDim}, -1, 1, rng),
               Tensor::uniform({kDim}, -1, 1, rng),
               Tensor::uniform({kDim}, -1, 1, rng),
               Tensor::uniform({kHidden, kDim}, -0.1, 0.1, rng),
               Tensor::uniform({kHidden}, -0.1, 0.1, rng),
               Tensor::uniform({kHidden, kHidden}, -0.1, 0.1, rng),
               Tensor::uniform({kTokens, kHidden}, -1, 1, rng)};
}

double StepSample::seconds() const {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> xs;
    for (const Tensor& x : inputs_) xs.push_back(x.detach().requires_grad_());
    Tensor h = gelu(linear(layer_norm(xs[0], xs[1], xs[2], real(1e-6)), xs[3], xs[4]), GeluApproximation::None);
    Tensor scores = reshape(linear(h, xs[5], xs[4]), {kTokens * kHidden / kRow, kRow});
    sum(softmax(scores, -1) * reshape(xs[6], scores.shape())).backward();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<double> StepSample::best_seconds(int settings, const std::function<void(int)>& apply) const {
    std::vector<double> best(static_cast<size_t>(settings), 1e30);
    for (int i = 0; i < settings; ++i) {
        apply(i);
        seconds();  // warm-up
    }
    for (int round = 0; round < 3; ++round)
        for (int i = 0; i < settings; ++i) {
            apply(i);
            best[i] = std::min(best[i], seconds());
        }
    release_cached_memory();
    return best;
}

double measure_bf16_speedup() {
    const MatmulPrecisionGuard caller(matmul_precision());  // the caller's precision comes back
    const MatmulPrecision precisions[2] = {MatmulPrecision::Fp32, MatmulPrecision::Bf16};
    const std::vector<double> best =
        StepSample().best_seconds(2, [&precisions](int i) { set_matmul_precision(precisions[i]); });
    return best[0] / best[1];
}

std::string bf16_speed_note(double speedup) {
    char text[240];
    if (speedup >= 1)
        std::snprintf(text, sizeof text,
                      "           bf16 ran a sample of the step %.2fx as fast as float32 here (measured now)", speedup);
    else
        std::snprintf(text, sizeof text,
                      "warning: bf16 ran a sample of the step at %.2fx float32's speed on this CPU (measured "
                      "now): --precision fp32 trains faster here (chapter 12.9)",
                      speedup);
    return text;
}

std::string bf16_header_note(MatmulPrecision precision) {
    if (precision != MatmulPrecision::Bf16 || !bf16_native()) return "";
    return bf16_speed_note(measure_bf16_speedup()) + "\n";
}

}  // namespace patchgrad
