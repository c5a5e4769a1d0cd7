// png.h — a small PNG writer, so `patchgrad train` and `patchgrad inspect` can save
// pictures without libpng or zlib (image_file.h reads PNGs, with inflate.h).
//
// A PNG file is the 8-byte signature and three chunks (each: 4-byte big-endian length, 4-byte
// type, data, CRC-32 of type + data):
//
//   IHDR   width, height, bit depth 8, colour type (0 gray, 2 RGB, 6 RGBA), no interlace
//   IDAT   a zlib stream of the filtered rows: each row is one filter byte (None, Sub, Up,
//          Average or Paeth: whichever leaves the residuals closest to zero) followed by
//          its width * channels bytes, each minus its prediction from its neighbours
//   IEND   empty
//
// The zlib stream (RFC 1950) is a 2-byte header, DEFLATE data (RFC 1951: LZ77 matches and
// Huffman codes, implemented in deflate.cpp) and the Adler-32 of the filtered rows. An 800x500
// training-curve chart, 1.2 MB of pixels, takes about 8 KB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace patchgrad {

// CRC-32 as PNG and zip use it (reflected polynomial 0xEDB88320): crc32("123456789") = 0xCBF43926.
uint32_t crc32(const uint8_t* data, size_t size);

// The Paeth filter's prediction of a byte from its left (a), upper (b) and upper-left (c)
// neighbours: whichever of them is closest to a + b - c, ties in that order (PNG
// specification 9.4). The writer subtracts it, the reader (image_file.cpp) adds it back.
inline int paeth_predictor(int a, int b, int c) {
    const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    if (pa <= pb && pa <= pc) return a;
    return pb <= pc ? b : c;
}

// pixels: height rows of width * channels bytes, row-major, top row first; channels 1 (gray),
// 3 (RGB) or 4 (RGBA). Throws std::invalid_argument naming the sizes if width or height is
// not positive, channels is not 1/3/4, or pixels.size() != width * height * channels.
std::vector<uint8_t> encode_png(int width, int height, int channels, const std::vector<uint8_t>& pixels);

// encode_png, written atomically (atomic_write: a temporary file renamed over `path`), so a reader
// never sees a half-written picture and a failed write leaves any old file untouched. I/O
// failures throw std::runtime_error naming the path.
void write_png(const std::string& path, int width, int height, int channels, const std::vector<uint8_t>& pixels);

// "" when a picture may be written at `path`: nothing is there, or a PNG (a regular file that
// starts with the PNG signature); else why not, phrased to follow "<path> ": "is a directory, not a
// regular file", "holds something that is not a PNG". The commands that draw into a path the user names ask
// first, so that a slip of the keyboard never replaces a checkpoint with a picture.
std::string png_replace_problem(const std::string& path);

}  // namespace patchgrad
