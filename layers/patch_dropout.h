// patch_dropout.h — PatchDropout (Liu et al. 2022, "PatchDropout: Economizing Vision
// Transformers Using Patch Dropout"; timm's layers/patch_dropout.py): while training, each
// image keeps a random subset of its patch tokens and the blocks after it see only those.
//
//   x [B, prefix + N, D] -> [B, prefix + K, D],   K = patch_dropout_kept(p, N) = max(1, floor((1 - p) N))
//
// The first `prefix` tokens (the class token) are always kept; the K patches are drawn
// without replacement, independently per image, and kept in their original order. It
// comes after the position encoding, so each kept token still carries where it was.
// Unlike dropout nothing is rescaled: a token is either there or not, and attention and
// mean pooling average over whatever is there. What it buys is compute: every block's
// matrix products shrink with the token count (attention's scores with its square), so a
// fixed budget of training FLOPs holds more epochs. Identity in eval mode, where every
// token is seen.
#pragma once

#include <memory>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

// How many of n patch tokens PatchDropout(p) keeps in training: max(1, floor((1 - p) n)).
int64_t patch_dropout_kept(real p, int64_t n);

class PatchDropout : public Layer {
public:
    // p in [0, 1); `rng` may be null only when p == 0 (such a PatchDropout never draws).
    PatchDropout(real p, int64_t prefix_tokens, std::shared_ptr<Rng> rng);
    std::string type_name() const override { return "PatchDropout"; }
    // The identity (the same tensor) in eval mode or when p == 0.
    Tensor forward(const Tensor& x) override;

    real p;
    int64_t prefix_tokens;
    std::shared_ptr<Rng> rng;
};

}  // namespace patchgrad
