// sequential.h — layers applied one after the other, like torch.nn.Sequential: the
// children are named "0", "1", ... so parameters read "head.0.weight", "head.2.bias".
#pragma once

#include <memory>
#include <vector>

#include "patchgrad/layers/module.h"

namespace patchgrad {

class Sequential : public Layer {
public:
    std::string type_name() const override { return "Sequential"; }
    // Appends `layer` as child "<number of layers so far>"; returns *this for chaining.
    Sequential& add(std::shared_ptr<Layer> layer);
    Tensor forward(const Tensor& x) override;

    int64_t size() const { return static_cast<int64_t>(layers_.size()); }

private:
    std::vector<std::shared_ptr<Layer>> layers_;
};

}  // namespace patchgrad
