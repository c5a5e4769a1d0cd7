// ema.h — an exponential moving average of the weights (Polyak averaging; timm's ModelEma):
// a second copy of the parameters that trails the trained ones, updated after every step.
//
//   after optimizer step t = 0, 1, 2, ...:
//       d_t     = min(decay, (1 + t) / (10 + t))
//       average = d_t * average + (1 - d_t) * weight      (as average += (1 - d_t)(weight - average))
//
// The average of the last ~1 / (1 - decay) steps sits nearer the middle of the valley the
// noisy steps bounce around in, so it usually evaluates better than the last weights; the
// training itself never sees it. The ramp (1 + t) / (10 + t), TensorFlow's
// ExponentialMovingAverage with num_updates, keeps the first steps from weighting the random
// initial weights for thousands of steps: d_t reaches 0.99 after 890 steps and 0.999 after
// 8,990, then stays at `decay`. Every element is updated on its own, in float32 like the
// weights, so the result is the same for any thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

class ExponentialMovingAverage {
public:
    // `weights` are the trained parameters, `average` tensors of the same shapes, in the same
    // order, that receive the average (another model's parameters, so that it can be evaluated
    // and saved like any model); they start as a copy of the weights. decay in [0, 1).
    ExponentialMovingAverage(std::vector<Tensor> weights, std::vector<Tensor> average, double decay);

    double decay_at(int64_t step) const;  // d_t
    void update(int64_t step);            // after optimizer step `step` (0 for the first)

    const double decay;

private:
    std::vector<Tensor> weights_, average_;
};

}  // namespace patchgrad
