// patch_embedding.h — step 2 of the ViT (ViT from scratch §2-2): the trainable linear
// projection E that maps every flattened patch to D dimensions, x_p^i E in the paper's eq. (1).
//
//   images [B, C, H, W] --Patcher--> [B, N, C*P*P] --proj (Linear C*P*P -> D)--> [B, N, D]
//
// Conv2d form. ViT from scratch and Visual Transformer in CV note that the same map is a
// Conv2d(C, D, kernel_size=P, stride=P): each output pixel of that convolution is the dot
// product of one patch with one filter, which is what a row of `proj` computes. timm implements it as that conv, so its
// weight is patch_embed.proj.weight [D, C, P, P], while ours is [D, C*P*P]. The two are the
// same numbers in the same row-major order (the Patcher flattens a patch as c, i, j, like the
// kernel's [C, P, P]), so moving weights between patchgrad and PyTorch is one reshape:
//
//   ours = timm.reshape(D, C*P*P)          timm = ours.reshape(D, C, P, P)
//
// The bias [D] is identical. tests/vit/test_patch_embedding.cpp checks the equivalence with
// a direct convolution loop. (Weights from a model that flattens patches as (p1 p2 c) need a
// permute instead: chapter 5.)
#pragma once

#include <memory>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/linear.h"
#include "patchgrad/layers/module.h"
#include "patchgrad/vit/patcher.h"

namespace patchgrad {

class PatchEmbedding : public Layer {
public:
    PatchEmbedding(int64_t channels, int64_t patch_size, int64_t dim, Rng& init);
    std::string type_name() const override { return "PatchEmbedding"; }
    // images [B, C, H, W] -> patch embeddings [B, N, D]
    Tensor forward(const Tensor& images) override;

    std::shared_ptr<Patcher> patcher;
    std::shared_ptr<Linear> proj;  // E: weight [D, C*P*P], bias [D]
};

}  // namespace patchgrad
