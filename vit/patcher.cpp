#include "vit/patcher.h"

#include <stdexcept>

#include "autograd/ops.h"

namespace patchgrad {

Patcher::Patcher(int64_t channels, int64_t patch_size) : channels(channels), patch_size(patch_size) {
    if (channels <= 0 || patch_size <= 0)
        throw std::invalid_argument("Patcher: channels (" + std::to_string(channels) + ") and patch size (" +
                                    std::to_string(patch_size) + ") must be positive");
}

// [snippet:patcher-forward]
Tensor Patcher::forward(const Tensor& images) {
    const Shape& s = images.shape();
    if (s.size() != 4) throw std::invalid_argument("Patcher: expected images [B, C, H, W], got shape " + shape_str(s));
    if (s[1] != channels)
        throw std::invalid_argument("Patcher: expected " + std::to_string(channels) +
                                    " channels, got images of shape " + shape_str(s));
    const int64_t P = patch_size;
    if (s[2] % P != 0 || s[3] % P != 0)
        throw std::invalid_argument("Patcher: image size " + std::to_string(s[2]) + "x" + std::to_string(s[3]) +
                                    " is not divisible by the patch size " + std::to_string(P) + " (images of shape " +
                                    shape_str(s) + ")");
    return permute(unfold(images, P, P, P, P), {0, 2, 1});
}
// [/snippet:patcher-forward]

}  // namespace patchgrad
