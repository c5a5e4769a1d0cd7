// bf16.h — the bfloat16 number format, and rounding a float to it.
//
// bfloat16 ("brain float") is the top half of an IEEE float32: the same sign bit and 8
// exponent bits, but 7 fraction bits instead of 23.
//
//     float32   s eeeeeeee fffffffffffffffffffffff    range 1e-38 .. 3e38, 24 bits of precision
//     bfloat16  s eeeeeeee fffffff                    the same range,       8 bits of precision
//
// Because the exponent is the same, a float becomes a bf16 by dropping its low 16 bits
// (after rounding), and a bf16 becomes a float by appending 16 zero bits: no overflow, no
// underflow, no scaling of the loss as float16 needs. What is lost is precision: the unit
// roundoff is u = 2^-8 (a relative error of at most 0.39% per rounded value, against 2^-24
// for float32). The product of two bf16 values has at most 16 significant bits, so it is
// exact in float32: mixed precision rounds only the inputs of a matrix product, and every
// product and sum inside it is a float32 operation (gemm_bf16.h).
#pragma once

#include <cstdint>
#include <cstring>

namespace patchgrad {
// In an anonymous namespace, for gemm_tile.h's reason: gemm_bf16_amx.cpp, compiled for
// AVX-512 and AMX, packs with round_to_bf16 too, and an out-of-line copy of it with ordinary
// linkage (a build without inlining) could be the one the linker keeps for every file.
namespace {

// The bf16 nearest to x, ties to even (IEEE's default rounding, and what the CPUs'
// conversion instructions do). A NaN stays a NaN (its top fraction bit is set, so that
// dropping the low bits cannot turn it into an infinity); infinities stay infinite; a float
// beyond the largest bf16 rounds to infinity, as in float arithmetic.
// [snippet:round-to-bf16]
inline uint16_t round_to_bf16(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
    // Adding 0x7fff carries into the kept bits when the dropped half is above 0x8000 (nearer
    // the next bf16); the kept lowest bit, added too, carries an exact half-way case only when
    // that bit is odd: ties go to even. A carry out of the fraction increments the exponent.
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}
// [/snippet:round-to-bf16]

inline float bf16_to_float(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

}  // namespace
}  // namespace patchgrad
