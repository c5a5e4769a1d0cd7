#include "patchgrad/vit/patcher.h"

#include <stdexcept>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

Patcher::Patcher(int64_t channels, int64_t patch_size) : channels(channels), patch_size(patch_size) {
    check(channels > 0 && patch_size > 0, "Patcher: channels (", channels, ") and patch size (", patch_size,
          ") must be positive");
}

// [snippet:patcher-forward]
Tensor Patcher::forward(const Tensor& images) {
    const Shape& s = images.shape();
    check(s.size() == 4, "Patcher: expected images [B, C, H, W], got shape ", s);
    check(s[1] == channels, "Patcher: expected ", channels, " channels, got images of shape ", s);
    const int64_t P = patch_size;
    check(s[2] % P == 0 && s[3] % P == 0, "Patcher: image size ", s[2], "x", s[3],
          " is not divisible by the patch size ", P, " (images of shape ", s, ")");
    return permute(unfold(images, P, P, P, P), {0, 2, 1});
}
// [/snippet:patcher-forward]

}  // namespace patchgrad
