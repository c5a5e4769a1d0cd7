// fast_math.h — exp and erf that the compiler can vectorise, for softmax and GELU.
//
// std::exp and std::erf are calls into libm, one element at a time, a large part of a float32
// training step (GELU's erf and exp, softmax's exp). The versions below are
// branch-free polynomials, so a loop calling them compiles to SIMD code (16 floats per
// instruction with AVX-512). They are used in the float build only: the double build keeps
// libm, so gradient checks in float64 test the exact functions and the formulas around them,
// and tests/autograd/cpu/rows/test_fast_math_f32.cpp bounds the error of these against libm.
//
//   fast_exp: Cephes' expf. exp(x) = 2^n * exp(r) with n = round(x / ln 2) and
//             |r| <= ln(2) / 2; exp(r) by a degree-7 polynomial; 2^n built in the exponent
//             bits. Relative error below 2.5e-7 (about 2 ulp); 0 below -87.3, including -inf;
//             NaN for NaN.
//   fast_erf: erf(x) = x P(x^2) / Q(x^2) for |x| < 3.75 (P of degree 6, Q of degree 4,
//             fitted by autograd/scripts/fit_erf.py), else +-1. No exponential: ten
//             multiply-adds, two products and a division, as GELU's loops are bound by
//             arithmetic. Odd in x. Absolute error below 4.1e-7, the float32 rounding of P / Q
//             near erf = 1, about 7 ulp there (the fit itself: 2.5e-8); GELU multiplies it
//             by x / 2, far inside float32 training noise.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "patchgrad/autograd/storage.h"

namespace patchgrad {

inline float fast_exp(float x) {
    // Above hi, 2^n would need exponent 128: saturate there (the ops only pass x <= 0).
    const float lo = -87.33654f, hi = 88.37626f;
    const float clamped = x < lo ? lo : (x > hi ? hi : x);
    // n = round(x / ln 2): adding and subtracting 1.5 * 2^23 rounds to an integer in plain
    // arithmetic (every SIMD instruction set has it, unlike a rounding instruction).
    const float shifter = 12582912.0f;  // its bits are 0x4B400000, and shifted's 0x4B400000 + n
    const float shifted = clamped * 1.44269504088896341f + shifter;
    const float n = shifted - shifter;
    // r = x - n ln 2, with ln 2 split in two so n * ln2_hi is exact.
    const float r = clamped - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    // 2^n as a float: n + 127 in the exponent bits. n is taken from shifted's bits, in unsigned
    // arithmetic, not by converting n to an integer, which is undefined behaviour for a NaN
    // (UBSan reports it); a NaN gives a NaN through p. (As fast as the conversion.)
    uint32_t shifted_bits;
    std::memcpy(&shifted_bits, &shifted, sizeof shifted_bits);
    const uint32_t bits = (shifted_bits - 0x4B400000u + 127u) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return x < lo ? 0.0f : p * scale;
}

// erf(x), and exp(-x^2) in *gaussian, from the same square: GELU's derivative needs the
// Gaussian too (x phi(x) with exp(-x^2 / 2) = exp(-(x / sqrt 2)^2)).
inline float fast_erf(float x, float* gaussian) {
    const float a = std::fabs(x), t = a * a;
    float p = 2.189073516e-08f;
    p = p * t - 2.037560739e-06f;
    p = p * t + 1.376181548e-04f;
    p = p * t + 3.360395085e-03f;
    p = p * t + 4.940820369e-02f;
    p = p * t + 1.908125194e-01f;
    p = p * t + 1.128378935e+00f;
    float q = 8.861646330e-04f;
    q = q * t + 1.361652798e-02f;
    q = q * t + 1.112757311e-01f;
    q = q * t + 5.024337258e-01f;
    q = q * t + 1.0f;
    *gaussian = fast_exp(-t);
    // Beyond 3.75 (or inf) P / Q is left for 1, erf(3.75) being 1 - 1.1e-7; a NaN stays NaN.
    return std::copysign(!(a >= 3.75f) ? a * p / q : 1.0f, x);
}

inline float fast_erf(float x) {
    float gaussian;
    return fast_erf(x, &gaussian);
}

// Reductions over j in [0, n) of term(j) that vectorise: kLanes running results in vector
// registers (GCC/clang vector-extension values, as in gemm_tile.h), combined pairwise in a
// fixed order at the end. One running sum cannot be vectorised (the compiler must keep its
// order of additions); 16 independent ones are a few vector registers. The last n % 16 terms
// run in a result of their own, combined last. The result depends only on n, never on the
// threads, and a sum agrees with the one-sum order to rounding. (LayerNorm and softmax rows.)
//
// Vectors of 16 bytes, a register on every level and on NEON: an array `real lanes[16]` indexed
// at run time, or one 64-byte vector compiled for AVX2 or SSE2, is kept in memory by GCC and
// slower (tutorials/12_speed/measurements.md#kernel-notes).
constexpr int64_t kLanes = 16;
enum class LaneOp { Sum, Max };
template <LaneOp op, class Term>
inline __attribute__((always_inline)) real lane_reduce(int64_t n, Term&& term) {
    typedef real Vector __attribute__((vector_size(16)));
    constexpr int64_t per_vector = 16 / sizeof(real), vectors = kLanes / per_vector;
    const real init = op == LaneOp::Max ? -std::numeric_limits<real>::infinity() : real(0);
    Vector lanes[vectors];  // lane l is element l % per_vector of lanes[l / per_vector]
#pragma GCC unroll 8
    for (int64_t v = 0; v < vectors; ++v) lanes[v] = init - Vector{};  // (init in every element)
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes) {
        // One or a few vector loads per 16 terms, if the compiler sees a loop: at -O3 GCC 12
        // unrolls a loop of 16 first and then assembles the vectors one element at a time,
        // hence `unroll 1`; and an array, because a vector's elements, set one by one, stay one
        // by one in clang and GCC alike.
        real values[kLanes];
#pragma GCC unroll 1
        for (int64_t l = 0; l < kLanes; ++l) values[l] = term(j + l);
#pragma GCC unroll 8
        for (int64_t v = 0; v < vectors; ++v) {
            Vector terms;
            std::memcpy(&terms, values + v * per_vector, sizeof terms);
            if constexpr (op == LaneOp::Max)
                lanes[v] = lanes[v] < terms ? terms : lanes[v];
            else
                lanes[v] += terms;
        }
    }
    auto combine = [](real a, real b) { return op == LaneOp::Max ? (a < b ? b : a) : a + b; };
    real rest = init;
    for (; j < n; ++j) rest = combine(rest, term(j));
    real r[kLanes];
#pragma GCC unroll 16
    for (int64_t l = 0; l < kLanes; ++l) r[l] = lanes[l / per_vector][l % per_vector];
#pragma GCC unroll 4
    for (int64_t width = kLanes / 2; width > 0; width /= 2)  // 16 -> 8 -> 4 -> 2 -> 1
#pragma GCC unroll 8
        for (int64_t l = 0; l < width; ++l) r[l] = combine(r[l], r[l + width]);
    return combine(r[0], rest);
}

template <class Term>
inline __attribute__((always_inline)) real lane_sum(int64_t n, Term&& term) {
    return lane_reduce<LaneOp::Sum>(n, term);
}

// The largest term (-inf for n == 0); NaN-free input assumed, as std::max does.
template <class Term>
inline __attribute__((always_inline)) real lane_max(int64_t n, Term&& term) {
    return lane_reduce<LaneOp::Max>(n, term);
}

// The same names for double: libm's exp and erf (the float64 build checks gradients against
// the exact functions).
inline double fast_exp(double x) { return std::exp(x); }
inline double fast_erf(double x) { return std::erf(x); }
inline double fast_erf(double x, double* gaussian) {
    *gaussian = std::exp(-x * x);
    return std::erf(x);
}

}  // namespace patchgrad
