// inflate.h — reading zlib streams (what a PNG's IDAT chunks hold) with the standard library.
//
// A zlib stream (RFC 1950) is
//
//   CMF FLG    2 bytes: method 8 (deflate) with a window of at most 32 KiB, no preset
//              dictionary, and (CMF * 256 + FLG) a multiple of 31
//   blocks     DEFLATE data (RFC 1951), read as a stream of bits, least significant first
//   ADLER32    4 bytes, big-endian: the Adler-32 checksum of the decompressed bytes
//
// Each DEFLATE block starts with BFINAL (1 bit: the last block) and BTYPE (2 bits):
//
//   00 stored    skip to a byte boundary; LEN, NLEN = ~LEN (16 bits each); LEN raw bytes
//   01 fixed     symbols in the Huffman codes the RFC fixes (3.2.6)
//   10 dynamic   the block first sends its own codes (3.2.7): how many literal/length and
//                distance code lengths follow (HLIT, HDIST), the code lengths of a small
//                "code-length code" (HCLEN of them, 3 bits each), then the lengths of both
//                codes in that code, with symbols 16/17/18 repeating the previous length or
//                a zero 3-138 times
//   11           reserved: an error
//
// A Huffman-coded block is a sequence of symbols: 0-255 a literal byte, 256 the end of the
// block, 257-285 a match length (plus extra bits), each followed by a distance symbol
// 0-29 (plus extra bits): "copy `length` bytes from `distance` bytes back", which may
// overlap the bytes it writes (a run). The codes are canonical: the code lengths alone
// define them (3.2.2). The compressor is deflate.h; both use deflate_tables.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace patchgrad {

// What a stream held, for the tests that check the compressor's choices.
struct InflateTrace {
    std::vector<int> block_types;                    // BTYPE of every block, in order
    std::vector<std::pair<size_t, size_t>> matches;  // (length, distance) of every back-reference
    size_t literals = 0;
};

// The bytes of the zlib stream data[0, size). Anything that is not a well-formed stream
// throws std::invalid_argument "<what>: <what is wrong> at byte N" (a bad header, a
// truncated stream, a reserved block type, a stored block whose NLEN is not ~LEN, an
// over-subscribed or empty Huffman code, a code the bits do not match, a distance before
// the start of the data, a wrong Adler-32); so does output beyond `max_output` bytes, which
// bounds the memory a small hostile file can ask for (DEFLATE expands up to 1032-fold).
// Bytes after the Adler-32 are ignored, as zlib does. `trace`, if given, records the blocks
// and matches.
std::vector<uint8_t> zlib_decompress(const uint8_t* data, size_t size, size_t max_output, const std::string& what,
                                     InflateTrace* trace = nullptr);

}  // namespace patchgrad
