// mixup.cpp — Gamma/Beta sampling, mixup, cutmix, timm's per-batch choice, and the mixed loss.
#include "patchgrad/datasets/mixup.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

namespace {

// log of a Gamma(shape, 1) draw; logs keep shape << 1 from underflowing to 0.
double log_gamma_draw(double shape, Rng& rng) {
    if (shape < 1) return log_gamma_draw(shape + 1, rng) + std::log(1.0 - rng.uniform()) / shape;
    // Marsaglia–Tsang: d v with v = (1 + c x)^3, x ~ N(0, 1), accepted by a squeeze test
    // (cheap, almost always) or the exact log test.
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
        double x, v;
        do {
            x = rng.normal();
            v = 1.0 + c * x;
        } while (v <= 0);
        v = v * v * v;
        const double u = rng.uniform();
        if (u < 1.0 - 0.0331 * x * x * x * x) return std::log(d * v);
        if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return std::log(d * v);
    }
}

void check_batch(const char* op, const Tensor& images, const std::vector<int64_t>& labels) {
    if (!images.defined() || images.dim() != 4 || images.size(0) < 1)
        throw std::invalid_argument(std::string(op) + ": images must be [B, C, H, W] with B >= 1, not " +
                                    (images.defined() ? shape_str(images.shape()) : std::string("undefined")));
    check(static_cast<int64_t>(labels.size()) == images.size(0), op, ": ", labels.size(), " labels for images ",
          images.shape());
}

MixedBatch paired(const Tensor& images, const std::vector<int64_t>& labels) {
    MixedBatch out;
    out.images = Tensor::empty(images.shape());
    out.labels_a = labels;
    out.labels_b.assign(labels.rbegin(), labels.rend());
    return out;
}

}  // namespace

double sample_gamma(double shape, Rng& rng) {
    check(shape > 0 && std::isfinite(shape), "sample_gamma: shape ", shape, " must be positive and finite");
    return std::exp(log_gamma_draw(shape, rng));
}

double sample_beta(double a, double b, Rng& rng) {
    check(a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b), "sample_beta: parameters ", a, ", ", b,
          " must be positive and finite");
    const double log_x = log_gamma_draw(a, rng);
    const double log_y = log_gamma_draw(b, rng);
    return 1.0 / (1.0 + std::exp(log_y - log_x));  // X / (X + Y)
}

MixedBatch mixup_batch(const Tensor& images, const std::vector<int64_t>& labels, double lambda) {
    check_batch("mixup_batch", images, labels);
    check(lambda >= 0 && lambda <= 1, "mixup_batch: lambda ", lambda, " must be in [0, 1]");
    MixedBatch out = paired(images, labels);
    const real lam = static_cast<real>(lambda);
    out.lambda = lam;
    const int64_t B = images.size(0), n = images.numel() / B;
    const real* x = images.data();
    real* y = out.images.data();
    // [snippet:mixup-batch]
    for (int64_t i = 0; i < B; ++i) {
        const real* a = x + i * n;
        const real* b = x + (B - 1 - i) * n;
        real* o = y + i * n;
        for (int64_t k = 0; k < n; ++k) o[k] = lam * a[k] + (1 - lam) * b[k];
    }
    // [/snippet:mixup-batch]
    return out;
}

MixedBatch cutmix_batch(const Tensor& images, const std::vector<int64_t>& labels, const Box& box) {
    check_batch("cutmix_batch", images, labels);
    const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
    check(box.top >= 0 && box.left >= 0 && box.height >= 0 && box.width >= 0 && box.top + box.height <= H &&
              box.left + box.width <= W,
          "cutmix_batch: box (top ", box.top, ", left ", box.left, ", ", box.height, " x ", box.width,
          ") does not fit images ", images.shape());
    MixedBatch out = paired(images, labels);
    out.cutmix = true;
    out.box = box;
    out.lambda = 1.0 - static_cast<double>(box.area()) / static_cast<double>(H * W);
    std::memcpy(out.images.data(), images.data(), sizeof(real) * images.numel());
    const int64_t n = C * H * W;
    for (int64_t i = 0; i < B; ++i)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t y = box.top; y < box.top + box.height; ++y) {
                const int64_t offset = (c * H + y) * W + box.left;
                std::memcpy(out.images.data() + i * n + offset, images.data() + (B - 1 - i) * n + offset,
                            sizeof(real) * box.width);
            }
    return out;
}

Box cutmix_box(int64_t height, int64_t width, double lambda, Rng& rng) {
    check(height >= 1 && width >= 1 && lambda >= 0 && lambda <= 1, "cutmix_box: image ", height, " x ", width,
          " and lambda ", lambda, "; expected a non-empty image and lambda in [0, 1]");
    const double ratio = std::sqrt(1.0 - lambda);
    const auto cut_h = static_cast<int64_t>(height * ratio), cut_w = static_cast<int64_t>(width * ratio);
    const auto cy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(height)));
    const auto cx = static_cast<int64_t>(rng.below(static_cast<uint64_t>(width)));
    const int64_t top = std::clamp<int64_t>(cy - cut_h / 2, 0, height),
                  bottom = std::clamp<int64_t>(cy + cut_h / 2, 0, height);
    const int64_t left = std::clamp<int64_t>(cx - cut_w / 2, 0, width),
                  right = std::clamp<int64_t>(cx + cut_w / 2, 0, width);
    return {top, left, bottom - top, right - left};
}

MixedBatch Mixup::apply(const Tensor& images, const std::vector<int64_t>& labels, Rng& rng) const {
    check_batch("Mixup", images, labels);
    check(mixup_alpha >= 0 && cutmix_alpha >= 0 && (mixup_alpha != 0 || cutmix_alpha != 0) && switch_prob >= 0 &&
              switch_prob <= 1 && prob >= 0 && prob <= 1,
          "Mixup: mixup_alpha ", mixup_alpha, ", cutmix_alpha ", cutmix_alpha, ", switch_prob ", switch_prob, ", prob ",
          prob, "; expected alphas >= 0, not both 0, and probabilities in [0, 1]");
    if (!(rng.uniform() < prob)) {
        MixedBatch unmixed;
        unmixed.images = images;
        unmixed.labels_a = labels;
        unmixed.labels_b = labels;
        return unmixed;
    }
    const bool use_cutmix = cutmix_alpha > 0 && (mixup_alpha == 0 || rng.uniform() < switch_prob);
    const double alpha = use_cutmix ? cutmix_alpha : mixup_alpha;
    const double lambda = sample_beta(alpha, alpha, rng);
    if (!use_cutmix) return mixup_batch(images, labels, lambda);
    return cutmix_batch(images, labels, cutmix_box(images.size(2), images.size(3), lambda, rng));
}

Tensor mixed_cross_entropy(const Tensor& logits, const MixedBatch& batch, real label_smoothing) {
    // [snippet:mixed-cross-entropy]
    const Tensor loss_a = cross_entropy(logits, batch.labels_a, label_smoothing);
    if (batch.lambda == 1) return loss_a;
    const Tensor loss_b = cross_entropy(logits, batch.labels_b, label_smoothing);
    return loss_a * static_cast<real>(batch.lambda) + loss_b * static_cast<real>(1 - batch.lambda);
    // [/snippet:mixed-cross-entropy]
}

}  // namespace patchgrad
