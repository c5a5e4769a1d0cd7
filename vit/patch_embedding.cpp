#include "patchgrad/vit/patch_embedding.h"

namespace patchgrad {

// [snippet:patch-embedding]
PatchEmbedding::PatchEmbedding(int64_t channels, int64_t patch_size, int64_t dim, Rng& init)
    : patcher(register_module("patcher", std::make_shared<Patcher>(channels, patch_size))),
      proj(register_module("proj", std::make_shared<Linear>(channels * patch_size * patch_size, dim, init))) {}

Tensor PatchEmbedding::forward(const Tensor& images) { return proj->forward(patcher->forward(images)); }
// [/snippet:patch-embedding]

}  // namespace patchgrad
