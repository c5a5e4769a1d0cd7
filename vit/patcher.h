// patcher.h — step 1 of the ViT (ViT from scratch §2-1): cut the image into P x P patches and
// flatten every patch into one row.
//
//   images [B, C, H, W] --unfold(kernel = stride = P)--> [B, C*P*P, N] --permute--> [B, N, C*P*P]
//
// N = (H/P) * (W/P): the patches in row-major order (left to right, then top to bottom).
// Within a row, channel c, pixel (i, j) of the patch sits at c*P*P + i*P + j — the order of
// torch.nn.functional.unfold, which is also how a conv kernel [C, P, P] is laid out in memory
// (see patch_embedding.h for why that matters). The permute is ViTs Explained's
// `transpose(2,1)`, not the `transpose(1,0)` of its tokenizer (chapter 5).
#pragma once

#include "patchgrad/layers/module.h"

namespace patchgrad {

class Patcher : public Layer {
public:
    Patcher(int64_t channels, int64_t patch_size);
    std::string type_name() const override { return "Patcher"; }
    // images [B, C, H, W] -> patches [B, N, C*P*P]. Throws if C is not `channels` or if H or
    // W is not a multiple of P (unfold would silently drop the last pixels).
    Tensor forward(const Tensor& images) override;

    int64_t channels, patch_size;
};

}  // namespace patchgrad
