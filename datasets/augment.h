// augment.h — random augmentation of uint8 training images, every draw from an explicit Rng.
//
// The CIFAR-10 recipes for small ViTs (timm/DeiT style) change each training image by
//   1. a random 32 × 32 crop of the image zero-padded by 4 pixels, and a horizontal flip
//      with probability 0.5 (random_crop_flip);
//   2. RandAugment (Cubuk et al. 2019) as timm implements it, "rand-m9-n2": N operations
//      chosen uniformly, with repeats, from timm's _RAND_TRANSFORMS, each applied with
//      probability 0.5 at magnitude M of 10, with timm's magnitude-to-argument ranges;
//   3. random erasing of one rectangle (timm's RandomErasing);
// then normalisation (normalize.h) and, per batch, mixup or cutmix (mixup.h). The
// operations themselves are in image_ops.h. Everything random comes from the Rng passed
// in: the trainer uses Rng(derive_seed(seed, {epoch, step})) (batcher.h) per batch, so a
// resumed run augments batch (epoch, step) exactly as the uninterrupted run did.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/datasets/image_ops.h"
#include "patchgrad/datasets/image_set.h"

namespace patchgrad {

// ---- crop and flip ------------------------------------------------------------------------
struct CropFlip {
    int64_t top = 0, left = 0;  // window offsets in the padded image, each in [0, 2 padding]
    bool flipped = false;
};
// crop_padded at offsets drawn uniformly from [0, 2 padding], then flip_horizontal with
// probability flip_prob. Returns what was drawn.
CropFlip random_crop_flip(ImageView img, Rng& rng, int64_t padding = 4, double flip_prob = 0.5);

// ---- RandAugment --------------------------------------------------------------------------
// timm's _RAND_TRANSFORMS, in its order (TranslateX/Y are its TranslateXRel/YRel).
enum class RandAugmentOp {
    AutoContrast,
    Equalize,
    Invert,
    Rotate,
    Posterize,
    Solarize,
    SolarizeAdd,
    Color,
    Contrast,
    Brightness,
    Sharpness,
    ShearX,
    ShearY,
    TranslateX,
    TranslateY
};
constexpr std::array<RandAugmentOp, 15> kRandAugmentOps = {
    RandAugmentOp::AutoContrast, RandAugmentOp::Equalize,   RandAugmentOp::Invert,      RandAugmentOp::Rotate,
    RandAugmentOp::Posterize,    RandAugmentOp::Solarize,   RandAugmentOp::SolarizeAdd, RandAugmentOp::Color,
    RandAugmentOp::Contrast,     RandAugmentOp::Brightness, RandAugmentOp::Sharpness,   RandAugmentOp::ShearX,
    RandAugmentOp::ShearY,       RandAugmentOp::TranslateX, RandAugmentOp::TranslateY};
const char* rand_augment_op_name(RandAugmentOp op);  // timm's name, e.g. "TranslateXRel"

// The argument timm passes `op` at `magnitude` in [0, 10], before any random sign:
//   Rotate 30 m/10 degrees; ShearX/Y 0.3 m/10; TranslateX/Y 0.45 m/10 of the image size;
//   Posterize int(4 m/10) bits kept; Solarize threshold min(256, int(256 m/10));
//   SolarizeAdd min(128, int(110 m/10)) added below 128; Color/Contrast/Brightness/Sharpness
//   factor 1.8 m/10 + 0.1; AutoContrast/Equalize/Invert 0 (no argument).
// `increasing` is timm's "inc1" set, where every operation gets stronger with m: Posterize
// keeps 4 - int(4 m/10) bits, Solarize uses 256 - threshold, and the factors become
// 1 + 0.9 m/10 (drawn as 1 ± 0.9 m/10).
double rand_augment_level(RandAugmentOp op, double magnitude, bool increasing);
// `op` at `magnitude`; Rotate, Shear*, Translate* (and the increasing factors) take a random
// sign from `rng`, like timm's _randomly_negate. Geometric operations fill with `fill`.
void apply_rand_augment_op(ImageView img, RandAugmentOp op, double magnitude, bool increasing, uint8_t fill, Rng& rng);

struct RandAugment {
    // At most this many operations per image: as many as there are kinds. timm's recipes
    // use 1 to 4; far more only turn every image into noise, and each one costs time per
    // image (n = 10^9 would never finish an epoch).
    static constexpr int64_t kMaxOps = static_cast<int64_t>(kRandAugmentOps.size());
    int64_t num_ops = 2;       // n: operations per image
    double magnitude = 9;      // m: strength out of 10
    double magnitude_std = 0;  // mstd: per operation, m ~ N(m, mstd) clipped to [0, 10]; inf: U(0, m)
    double prob = 0.5;         // p: each chosen operation is applied with this probability
    bool increasing = false;   // inc1 (see rand_augment_level)
    uint8_t fill = 128;        // for rotate/shear/translate: timm's grey

    // timm's config string: "rand-m9-n2", "rand-m9-mstd0.5-inc1", "rand-n3-m10-p1"; keys
    // m, n, mstd, inc, p. Anything else is an error naming the part.
    static RandAugment parse(const std::string& spec);
    std::string str() const;  // the same form, e.g. "rand-m9-n2-mstd0-inc0-p0.5"
    // Throws std::invalid_argument unless n in [0, kMaxOps], m in [0, 10], mstd >= 0 and p in [0, 1].
    void validate() const;
    void apply(ImageView img, Rng& rng) const;
};

// ---- random erasing ------------------------------------------------------------------------
// timm's RandomErasing (Zhong et al. 2017): with probability `prob`, one rectangle of area
// U(min_area, max_area) of the image and aspect ratio log-uniform in [min_aspect,
// 1/min_aspect] (10 tries to fit it) is overwritten. timm erases the normalised tensor
// with N(0, 1) values; on bytes we write uniform random bytes (std 74/255 ≈ 0.29, close to
// CIFAR's pixel std), or `value` in Constant mode (round(255 · mean) gives timm's 'const').
struct RandomErasing {
    enum class Fill { PerPixel, RandomColor, Constant };  // timm's 'pixel', 'rand', 'const'
    double prob = 0.25;
    double min_area = 0.02;
    double max_area = 1.0 / 3.0;
    double min_aspect = 0.3;
    Fill fill = Fill::PerPixel;
    uint8_t value = 0;  // the Constant fill

    // The erased box; area 0 when the coin or all ten tries said no.
    Box apply(ImageView img, Rng& rng) const;
};

// ---- the whole per-image pipeline ------------------------------------------------------
struct Augmentation {
    bool crop_flip = true;
    int64_t padding = 4;
    double flip_prob = 0.5;
    std::optional<RandAugment> rand_augment;
    std::optional<RandomErasing> erasing;

    // Crop/flip, then RandAugment, then erasing, image after image, all drawn from `rng`.
    void apply(ImageSet& batch, Rng& rng) const;
};

}  // namespace patchgrad
