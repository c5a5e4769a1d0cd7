// normalize.h — per-channel normalisation: from uint8 images to the float batch the model eats.
//
// torchvision's ToTensor() then Normalize(mean, std) in one pass: pixel v of channel c
// becomes (v / 255 - mean[c]) / std[c], so each channel has mean about 0 and std about 1
// over the training set. The standard CIFAR-10 constants are the training set's own
// per-channel statistics over all 50,000 × 1,024 pixels (channel_stats computes them for
// any set). The often-copied std (0.2023, 0.1994, 0.2010) is not that statistic (it is
// smaller than the pixel std); we use the pixel std (0.2470, 0.2435, 0.2616), which
// channel_stats gives on the training set. (timm ships no CIFAR constants, only ImageNet's.)
#pragma once

#include <array>
#include <vector>

#include "patchgrad/autograd/tensor.h"
#include "patchgrad/datasets/image_set.h"

namespace patchgrad {

constexpr std::array<double, 3> kCifar10Mean = {0.4914, 0.4822, 0.4465};
constexpr std::array<double, 3> kCifar10Std = {0.2470, 0.2435, 0.2616};

// Per-channel mean and (population) standard deviation of pixel values scaled to [0, 1].
struct ChannelStats {
    std::vector<double> mean;  // [C]
    std::vector<double> std;   // [C]

    static ChannelStats cifar10() {
        return {{kCifar10Mean.begin(), kCifar10Mean.end()}, {kCifar10Std.begin(), kCifar10Std.end()}};
    }
    // CIFAR-10's for a model of `channels` channels: 3, the above; 1, those of the gray level
    // that pictures become for a gray model (PIL's luma, a weighted sum of R, G and B), whose
    // mean is that sum of the means (0.4809) and whose std is taken as that sum of the stds
    // (0.2466: exact if the channels rose and fell together, as they nearly do).
    static ChannelStats cifar10_for(int64_t channels);
};

// The statistics of every pixel of every image in `set` (exact: integer sums).
ChannelStats channel_stats(const ImageSet& set);

// images [N, C, H, W] uint8 -> Tensor [N, C, H, W] of (v / 255 - mean[c]) / std[c].
Tensor to_tensor(const ImageSet& images, const ChannelStats& stats);

}  // namespace patchgrad
