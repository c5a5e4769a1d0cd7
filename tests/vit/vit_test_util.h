// vit_test_util.h — helpers shared by the tests in tests/vit/.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/layers/module.h"
#include "patchgrad/vit/vision_transformer.h"
#include "test_util.h"

namespace patchgrad::test {

// Images 3 x 8 x 12 (non-square), patch 4 (2 x 3 = 6 patches), dim 8, depth 2, heads 2,
// MLP 16, 5 classes, no dropout: small enough to gradcheck every parameter.
inline ViTConfig small_config() {
    ViTConfig c;
    c.name = "small";
    c.image_height = 8;
    c.image_width = 12;
    c.channels = 3;
    c.patch_size = 4;
    c.dim = 8;
    c.depth = 2;
    c.heads = 2;
    c.mlp_dim = 16;
    c.num_classes = 5;
    return c;
}

inline double max_abs_difference(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    double m = 0;
    for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(double(a.data()[i]) - double(b.data()[i])));
    return m;
}

}  // namespace patchgrad::test
