// image_file.h — reading your own pictures (PNG and binary PPM) with the standard library,
// and turning one into the image a model takes.
//
// PNG (ISO/IEC 15948): the 8-byte signature, then chunks (4-byte big-endian length, 4-byte
// type, data, CRC-32 of type + data). Read here: IHDR (size, bit depth, colour type,
// interlace), PLTE (the palette), tRNS (a palette's alpha), the IDAT chunks (together one
// zlib stream, inflate.h) and IEND; other ancillary chunks (lower-case first letter: gAMA,
// tEXt, pHYs, ...) are skipped, and an unknown critical one is refused. The stream holds
// the rows, each a filter byte (None, Sub, Up, Average, Paeth: png.h) and the row's bytes
// minus their prediction. Every colour type and bit depth the standard allows is read:
// gray (1, 2, 4, 8, 16 bits), RGB (8, 16), palette (1, 2, 4, 8), gray + alpha and RGBA
// (8, 16); 16-bit samples are rounded to 8 bits. Adam7-interlaced files are refused, with
// a message saying so (re-saving without interlacing is a click in any editor).
//
// PPM / PGM (netpbm): "P6" (RGB) or "P5" (gray), whitespace-separated width, height and
// maxval (1-255; '#' comments allowed), one whitespace byte, then the pixels, one byte per
// sample, row by row. maxval > 255 (two bytes a sample) is refused.
//
// Every damaged or unsupported file throws std::invalid_argument naming it and what is
// wrong, never reads outside the file's bytes, and never allocates more than a picture of
// kMaxPicturePixels needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "patchgrad/datasets/image_set.h"

namespace patchgrad {

// A picture as read: height rows of width pixels, each `channels` bytes (interleaved, top
// row first): 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA.
struct Picture {
    int64_t width = 0, height = 0, channels = 0;
    std::vector<uint8_t> pixels;  // [height, width, channels]
};

// The largest picture read: 2^26 pixels (67 megapixels, a 9,000 x 7,000 photo), with
// each side at most 2^16. Larger declared sizes are refused before anything is allocated.
constexpr int64_t kMaxPicturePixels = int64_t(1) << 26;
constexpr int64_t kMaxPictureSide = int64_t(1) << 16;

// The file's bytes as a PNG, a P6 / P5 PPM, by their first bytes. `name` starts every
// message: "<name>: PNG chunk IDAT at byte 41: bad CRC (...)".
Picture decode_png(const std::string& bytes, const std::string& name);
Picture decode_ppm(const std::string& bytes, const std::string& name);
Picture decode_picture(const std::string& bytes, const std::string& name);

// decode_picture on the file at `path` (a regular file, at most 1 GiB).
Picture read_picture(const std::string& path);

// The picture as one image [channels, height, width] of an ImageSet with one label (0) of
// class `class_name`: alpha composited over white (a transparent pixel shows as what a
// viewer shows it on, not as whatever colour it hides), gray repeated into R, G, B for a
// 3-channel model or colour turned to luma for a 1-channel one (image_ops.h's ITU-R 601),
// then resize_center_crop (image_ops.h) to height x width.
ImageSet picture_to_image_set(const Picture& picture, int64_t channels, int64_t height, int64_t width,
                              const std::string& class_name);

}  // namespace patchgrad
