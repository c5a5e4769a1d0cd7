// positional_encoding.h — step 4 of the ViT (ViT from scratch §2-4): E_pos, added to the
// sequence [x_class; x_p^1 E; ...; x_p^N E] so that the Transformer knows where each patch
// came from (the paper's eq. (1)). One row per position: row 0 is the class token, rows 1..N the
// patches in the Patcher's row-major order.
//
// Two kinds:
//  - learnable (the paper, the ViT study notes, Visual Transformer in CV, the ViT notebook,
//    timm): a parameter [1, N+1, D], initialised trunc_normal(std 0.02) like timm and ViTs
//    Explained's _init_weights;
//  - fixed sinusoidal (ViT from scratch's PositionalEncoder with learnable=False, ViTs
//    Explained's get_sinusoid_encoding), not trained:
//        PE(pos, 2i)   = sin(pos / 10000^(2i/D))
//        PE(pos, 2i+1) = cos(pos / 10000^(2i/D))
//    (cos in the odd dimensions, unlike ViT from scratch's "Method 1" loop: see chapter 6.)
//
// Parameter names. timm keeps `pos_embed` (and `cls_token`) as top-level parameters of the
// VisionTransformer, not inside a submodule. A learnable PositionalEncoding registers its table
// as its own parameter "pos_embed"; the VisionTransformer holds the encoding as a member, not as
// a named child (a child would rename it "pos_encoding.pos_embed"), and registers the same tensor
// under "pos_embed" itself. The fixed table is not a parameter, like a PyTorch buffer.
#pragma once

#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/tensor.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

// The fixed table [1, num_positions, dim] of the formula above. An odd `dim` ends with a
// sine column that has no cosine partner.
Tensor sinusoidal_positional_encoding(int64_t num_positions, int64_t dim);

class PositionalEncoding : public Layer {
public:
    // learnable: trunc_normal(0, 0.02, a=-2, b=2) drawn from `init`, the parameter "pos_embed";
    // otherwise the sinusoidal table (no random numbers drawn, no parameter).
    PositionalEncoding(int64_t num_positions, int64_t dim, bool learnable, Rng& init);
    std::string type_name() const override { return "PositionalEncoding"; }

    // x [B, num_positions, dim] -> x + E_pos (broadcast over the batch)
    Tensor forward(const Tensor& x) override;

    Tensor table;  // E_pos [1, num_positions, dim]
    bool learnable;
};

}  // namespace patchgrad
