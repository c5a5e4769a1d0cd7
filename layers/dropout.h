// dropout.h — zeroes each element with probability p while training and scales the others
// by 1/(1-p), so the expected activation is unchanged and evaluation needs no rescaling.
//
// The mask is drawn from the Rng handed down by the model (there is no global RNG), which
// makes a training run reproducible from its seed.
#pragma once

#include <memory>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

class Dropout : public Layer {
public:
    // p in [0, 1). `rng` may be null only when p == 0 (such a Dropout never draws).
    Dropout(real p, std::shared_ptr<Rng> rng);
    std::string type_name() const override { return "Dropout"; }
    // The identity (the same tensor, no copy) in eval mode or when p == 0.
    Tensor forward(const Tensor& x) override;
    // Whether forward changes anything: training, with p > 0.
    bool active() const { return training() && p > 0; }

    real p;
    std::shared_ptr<Rng> rng;
};

}  // namespace patchgrad
