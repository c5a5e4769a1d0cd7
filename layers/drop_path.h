// drop_path.h — stochastic depth as a layer: while training, drops a residual branch for a
// whole sample with probability p (timm's DropPath, in every ViT block as drop_path1 after
// the attention and drop_path2 after the MLP). A dropped branch makes the block the identity
// for that sample, so a deep model trains like a random shallower one; at evaluation every
// branch is kept and nothing is rescaled.
#pragma once

#include <memory>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

class DropPath : public Layer {
public:
    // p in [0, 1). `rng` may be null only when p == 0 (such a DropPath never draws).
    DropPath(real p, std::shared_ptr<Rng> rng);
    std::string type_name() const override { return "DropPath"; }
    // The identity (the same tensor, no copy) in eval mode or when p == 0.
    Tensor forward(const Tensor& x) override;
    // Whether forward changes anything: training, with p > 0.
    bool active() const { return training() && p > 0; }

    real p;
    std::shared_ptr<Rng> rng;
};

}  // namespace patchgrad
