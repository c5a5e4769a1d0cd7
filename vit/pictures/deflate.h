// deflate.h — writing zlib streams (what a PNG's IDAT chunk holds) with the standard library:
// the compressor png.cpp calls, the mirror of inflate.h. The stream's layout (RFC 1950 around
// RFC 1951's DEFLATE blocks) is described in inflate.h; both use deflate_tables.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace patchgrad {

// zlib's Adler-32 checksum: adler32("Wikipedia") = 0x11E60398.
uint32_t adler32(const uint8_t* data, size_t size);

// The zlib stream (RFC 1950) of `size` bytes: header 0x78 0x9C, DEFLATE blocks (each stored,
// fixed-Huffman or dynamic-Huffman, whichever is smallest), Adler-32. What IDAT holds; any
// inflater (zlib, Python's zlib.decompress) reads it back.
std::vector<uint8_t> zlib_compress(const uint8_t* data, size_t size);

}  // namespace patchgrad
