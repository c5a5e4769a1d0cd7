// mixup.h — mixup and cutmix on a normalised batch, and the Beta sampler they draw from.
//
// mixup (Zhang et al. 2018) trains on x = lam x_i + (1 - lam) x_j with the loss
// lam CE(y_i) + (1 - lam) CE(y_j); cutmix (Yun et al. 2019) pastes a box of x_j into x_i
// and sets lam to the share of x_i left showing. As in timm's Mixup (mode 'batch'): one
// lam ~ Beta(alpha, alpha) per batch; image i is paired with image B-1-i (the batch
// reversed, timm's x.flip(0)); each batch is cutmix with probability switch_prob and mixup
// otherwise; the cutmix box is timm's rand_bbox and lam is corrected to the box's actual
// area. The labels stay integers: mixed_cross_entropy computes lam CE(labels_a) +
// (1 - lam) CE(labels_b), which is timm's soft-target cross-entropy on the mixed (smoothed)
// one-hot targets, because cross-entropy is linear in the target.
//
// The batch is a plain tensor of data (no graph): mixing makes a new tensor and leaves the
// input as it was.
#pragma once

#include <cstdint>
#include <vector>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/tensor.h"
#include "patchgrad/datasets/image_ops.h"

namespace patchgrad {

// Gamma(shape, 1) by Marsaglia & Tsang (2000), boosted for shape < 1 by Gamma(a) =
// Gamma(a + 1) U^(1/a); and Beta(a, b) = X / (X + Y) for X ~ Gamma(a), Y ~ Gamma(b),
// computed from log X and log Y so that tiny shapes do not give 0 / 0.
double sample_gamma(double shape, Rng& rng);
double sample_beta(double a, double b, Rng& rng);

struct MixedBatch {
    Tensor images;                  // [B, C, H, W]
    std::vector<int64_t> labels_a;  // each image's own label
    std::vector<int64_t> labels_b;  // its partner's label (the batch reversed)
    double lambda = 1;              // weight of labels_a in the loss, in [0, 1]
    bool cutmix = false;
    Box box;  // the pasted box, when cutmix
};

// out[i] = lam x[i] + (1 - lam) x[B-1-i], computed in `real` with lam = real(lambda).
MixedBatch mixup_batch(const Tensor& images, const std::vector<int64_t>& labels, double lambda);
// out[i] = x[i] with `box` (inside the image) taken from x[B-1-i]; lambda = 1 - box area / (H W).
MixedBatch cutmix_batch(const Tensor& images, const std::vector<int64_t>& labels, const Box& box);
// timm's rand_bbox: a box of (int(H sqrt(1 - lambda)), int(W sqrt(1 - lambda))) centred on a
// uniform random pixel, halves rounded down, clipped to the image.
Box cutmix_box(int64_t height, int64_t width, double lambda, Rng& rng);

// timm's Mixup in 'batch' mode (its defaults for DeiT: mixup 0.8, cutmix 1.0, switch 0.5).
struct Mixup {
    double mixup_alpha = 0.8;   // 0 turns mixup off
    double cutmix_alpha = 1.0;  // 0 turns cutmix off
    double switch_prob = 0.5;   // with both on: the probability of cutmix for a batch
    double prob = 1.0;          // the probability of mixing a batch at all

    // images [B, C, H, W], labels [B]. A batch left unmixed comes back as it was (the same
    // tensor) with labels_b = labels_a and lambda 1.
    MixedBatch apply(const Tensor& images, const std::vector<int64_t>& labels, Rng& rng) const;
};

// logits [B, K] -> [] lambda CE(logits, labels_a) + (1 - lambda) CE(logits, labels_b),
// each with label smoothing like cross_entropy (autograd/ops.h).
Tensor mixed_cross_entropy(const Tensor& logits, const MixedBatch& batch, real label_smoothing = 0);

}  // namespace patchgrad
