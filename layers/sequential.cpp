#include "patchgrad/layers/sequential.h"

#include <string>

namespace patchgrad {

Sequential& Sequential::add(std::shared_ptr<Layer> layer) {
    layers_.push_back(register_module(std::to_string(layers_.size()), std::move(layer)));
    return *this;
}

Tensor Sequential::forward(const Tensor& x) {
    Tensor h = x;
    for (auto& layer : layers_) h = layer->forward(h);
    return h;
}

}  // namespace patchgrad
