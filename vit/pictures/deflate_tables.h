// deflate_tables.h — the constants of the DEFLATE format (RFC 1951) that the compressor
// (deflate.cpp) and the decompressor (inflate.cpp) must agree on, kept in one place.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace patchgrad::deflate {

constexpr size_t kWindow = 32768;  // the farthest a match may point back
constexpr size_t kMinMatch = 3, kMaxMatch = 258;
constexpr size_t kMaxStoredBlock = 65535;  // a stored block's LEN is 16 bits
constexpr int kEndOfBlock = 256;
constexpr int kLitLenSymbols = 286, kDistSymbols = 30, kCodeLengthSymbols = 19;
constexpr int kMaxCodeBits = 15, kMaxCodeLengthBits = 7;  // longest codes the format allows

// Lengths 3..258 are symbols 257..285, distances 1..32768 symbols 0..29: a base value plus
// that many extra bits (section 3.2.5).
constexpr std::array<uint16_t, 29> kLengthBase = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                                  31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr std::array<uint8_t, 29> kLengthExtra = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                                  2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr std::array<uint16_t, 30> kDistBase = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,
                                                33,   49,   65,   97,   129,  193,  257,  385,   513,   769,
                                                1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr std::array<uint8_t, 30> kDistExtra = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                                6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
// The order the code-length code's lengths are sent in (3.2.7): the likeliest first, so
// the trailing unused ones can be left off.
constexpr std::array<uint8_t, 19> kCodeLengthOrder = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

// The fixed codes of BTYPE 01 (3.2.6): literals 0-143 in 8 bits, 144-255 in 9, symbols
// 256-279 in 7, 280-287 in 8; distances 0-31 in 5. Symbols 286, 287 and distances 30, 31
// complete the codes but never occur in valid data.
inline std::vector<uint8_t> fixed_litlen_lengths() {
    std::vector<uint8_t> l(288);
    for (size_t s = 0; s < l.size(); ++s) l[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
    return l;
}
inline std::vector<uint8_t> fixed_dist_lengths() { return std::vector<uint8_t>(32, 5); }

}  // namespace patchgrad::deflate
