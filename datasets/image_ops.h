// image_ops.h — the image operations of data augmentation, on one uint8 image, in place.
//
// Each operation here takes its arguments explicitly and is deterministic; augment.h draws
// the arguments from an Rng. An image is an ImageView [C, H, W] (image_set.h). The colour
// operations follow PIL's ImageOps and ImageEnhance, which timm's RandAugment calls, so the
// arguments mean the same (a factor of 1 is the identity, 0 the "degenerate" image: black
// for brightness, mean grey for contrast, grey for colour, blurred for sharpness). Where we
// differ from PIL, on purpose:
//   - results are rounded to the nearest level where PIL truncates (blends, auto_contrast),
//     so an enhancement does not darken the image by half a level on average;
//   - geometric operations (rotate, shear, translate) sample bilinearly at pixel centres and
//     read `fill` outside the image; shear is about the image centre like torchvision's
//     affine (PIL/timm shear about the top-left corner, which moves the bottom rows twice as
//     far). A whole-pixel translation and a rotation by 0 are exact.
//   - grey is PIL's ITU-R 601 luma L = (19595 R + 38470 G + 7471 B + 2^15) >> 16 for three
//     channels; a one-channel image is its own grey.
#pragma once

#include <cstdint>

#include "patchgrad/datasets/image_set.h"

namespace patchgrad {

// A rectangle of pixels: rows [top, top + height), columns [left, left + width).
struct Box {
    int64_t top = 0;
    int64_t left = 0;
    int64_t height = 0;
    int64_t width = 0;
    int64_t area() const { return height * width; }
};

// ---- geometry that keeps pixels exact -----------------------------------------------------
void flip_horizontal(ImageView img);  // x -> W - 1 - x
// The H × W window at (top, left) of the image zero-padded by `padding` pixels on every side
// (torchvision's RandomCrop(32, padding=4) with fixed offsets): 0 <= top, left <= 2 padding,
// and top = left = padding is the identity. The content moves by (padding - top) rows down.
void crop_padded(ImageView img, int64_t padding, int64_t top, int64_t left);

// ---- per-channel look-up operations (PIL ImageOps) ----------------------------------------
void auto_contrast(ImageView img);                               // stretch each channel's [min, max] to [0, 255]
void equalize(ImageView img);                                    // flatten each channel's histogram (PIL's algorithm)
void invert(ImageView img);                                      // v -> 255 - v
void solarize(ImageView img, int threshold);                     // v >= threshold -> 255 - v; threshold in [0, 256]
void solarize_add(ImageView img, int add, int threshold = 128);  // v < threshold -> min(v + add, 255)
void posterize(ImageView img, int bits);                         // keep the top `bits` of 8 bits, bits in [0, 8]

// ---- enhancements: blend(degenerate, img, factor) = degenerate + factor (img - degenerate) --
void color(ImageView img, double factor);       // degenerate: the grey image (saturation)
void contrast(ImageView img, double factor);    // degenerate: the mean grey level everywhere
void brightness(ImageView img, double factor);  // degenerate: black
void sharpness(ImageView img, double factor);   // degenerate: PIL's SMOOTH 3×3 filter, border kept

// ---- resampling geometry (bilinear, `fill` outside) ----------------------------------------
void rotate(ImageView img, double degrees, uint8_t fill);      // counter-clockwise about the centre
void shear_x(ImageView img, double factor, uint8_t fill);      // out(x, y) = in(x + factor (y - cy), y)
void shear_y(ImageView img, double factor, uint8_t fill);      // out(x, y) = in(x, y + factor (x - cx))
void translate_x(ImageView img, double pixels, uint8_t fill);  // content moves right by `pixels`
void translate_y(ImageView img, double pixels, uint8_t fill);  // content moves down by `pixels`

// ---- resampling to another size -------------------------------------------------------------
// `dst` (its size given, its channels those of `src`) filled from the centre of `src`: src
// is scaled so that it just covers dst, keeping its aspect ratio, and what overhangs is cut
// off equally on both sides (torchvision's Resize(shorter side) then CenterCrop, in one
// pass). Each axis is resampled with a triangle (tent) filter whose half-width is one
// source pixel when enlarging (plain bilinear interpolation at pixel centres) and 1/scale
// source pixels when shrinking, so every source pixel counts and a large photo does not
// alias into noise at 32x32 (PIL's BILINEAR resize, torchvision's antialias=True). Weights
// are renormalised at the borders: a constant image stays constant.
void resize_center_crop(ImageView src, ImageView dst);

// Every pixel of `box` (clipped to the image) in every channel set to `value`.
void fill_box(ImageView img, const Box& box, uint8_t value);

}  // namespace patchgrad
