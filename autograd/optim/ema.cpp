#include "patchgrad/autograd/optim/ema.h"

#include <algorithm>
#include <string>

#include "patchgrad/autograd/check.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"

namespace patchgrad {

ExponentialMovingAverage::ExponentialMovingAverage(std::vector<Tensor> weights, std::vector<Tensor> average,
                                                   double decay)
    : decay(decay), weights_(std::move(weights)), average_(std::move(average)) {
    check(decay >= 0 && decay < 1, "ExponentialMovingAverage: decay must be in [0, 1), got ", decay);
    check(weights_.size() == average_.size(), "ExponentialMovingAverage: ", weights_.size(), " weights but ",
          average_.size(), " tensors for their average");
    for (size_t i = 0; i < weights_.size(); ++i) {
        check(weights_[i].shape() == average_[i].shape(), "ExponentialMovingAverage: weight ", i, " has shape ",
              weights_[i].shape(), " but its average ", average_[i].shape());
        std::copy(weights_[i].data(), weights_[i].data() + weights_[i].numel(), average_[i].data());
    }
}

double ExponentialMovingAverage::decay_at(int64_t step) const {
    return std::min(decay, (1.0 + double(step)) / (10.0 + double(step)));
}

void ExponentialMovingAverage::update(int64_t step) {
    const real rate = static_cast<real>(1 - decay_at(step));  // 1 - d_t
    for (size_t i = 0; i < weights_.size(); ++i) {
        const real* w = weights_[i].data();
        real* a = average_[i].data();
        parallel_for(weights_[i].numel(), int64_t(1) << 14, [=](int64_t begin, int64_t end) {
            for (int64_t j = begin; j < end; ++j) a[j] += rate * (w[j] - a[j]);
        });
    }
}

}  // namespace patchgrad
