// fast_math.h — exp and erf that the compiler can vectorise, for softmax and GELU.
//
// std::exp and std::erf are calls into libm, one element at a time: in a float32 training
// step they were 14% of the time (GELU's erf and exp, softmax's exp). The versions below are
// branch-free polynomials, so a loop calling them compiles to SIMD code (16 floats per
// instruction with AVX-512). They are used in the float build only: the double build keeps
// libm, so gradient checks in float64 test the exact functions and the formulas around them,
// and tests/autograd/ops/test_fast_math_f32.cpp bounds the error of these against libm.
//
//   fast_exp: Cephes' expf. exp(x) = 2^n * exp(r) with n = round(x / ln 2) and
//             |r| <= ln(2) / 2; exp(r) by a degree-7 polynomial; 2^n built in the exponent
//             bits. Relative error below 2.5e-7 (about 2 ulp); 0 below -87.3, including -inf.
//   fast_erf: a Taylor series for |x| < 0.75, else Abramowitz & Stegun 7.1.26,
//             erf(x) = 1 - t (a1 + t (a2 + ... a5 t)) exp(-x^2) with t = 1 / (1 + p |x|);
//             odd in x. Absolute error below 2.5e-7 (GELU multiplies it by x / 2: far
//             inside float32 training noise).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "autograd/storage.h"

namespace patchgrad {

inline float fast_exp(float x) {
    // Above hi, 2^n would need exponent 128: saturate there (the ops only pass x <= 0).
    const float lo = -87.33654f, hi = 88.37626f;
    const float clamped = x < lo ? lo : (x > hi ? hi : x);
    // n = round(x / ln 2): adding and subtracting 1.5 * 2^23 rounds to an integer in plain
    // arithmetic (every SIMD instruction set has it, unlike a rounding instruction).
    const float shifter = 12582912.0f;
    const float n = (clamped * 1.44269504088896341f + shifter) - shifter;
    // r = x - n ln 2, with ln 2 split in two so n * ln2_hi is exact.
    const float r = clamped - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n as a float
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return x < lo ? 0.0f : p * scale;
}

// erf(x), and exp(-x^2) in *gaussian: the tail's formula needs that exponential, and GELU's
// derivative needs it too (x phi(x) with exp(-x^2 / 2) = exp(-(x / sqrt 2)^2)), so its backward
// gets both for one exp (on an AMD EPYC Zen 5, GELU's backward was 4% of a bf16 step).
inline float fast_erf(float x, float* gaussian) {
    const float a = std::fabs(x);
    const float t = 1.0f / (1.0f + 0.3275911f * a);
    float poly = 1.061405429f;
    poly = poly * t - 1.453152027f;
    poly = poly * t + 1.421413741f;
    poly = poly * t - 0.284496736f;
    poly = poly * t + 0.254829592f;
    *gaussian = fast_exp(-a * a);
    const float tail = 1.0f - poly * t * *gaussian;
    // Near 0 the subtraction above cancels; there the Taylor series 2/sqrt(pi) (x - x^3/3 +
    // x^5/10 - x^7/42 + ... + x^17/685440) is accurate to 3e-9 for |x| < 0.75.
    const float z = a * a;
    float series = 1.0f / 685440;
    series = series * z - 1.0f / 75600;
    series = series * z + 1.0f / 9360;
    series = series * z - 1.0f / 1320;
    series = series * z + 1.0f / 216;
    series = series * z - 1.0f / 42;
    series = series * z + 1.0f / 10;
    series = series * z - 1.0f / 3;
    series = (series * z + 1.0f) * a * 1.12837916709551257f;
    return std::copysign(a < 0.75f ? series : tail, x);
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
// Why vectors of 16 bytes, not an array of 16 reals or one vector of 64 bytes: written as
// `real lanes[16]` with the tail folded into lanes[0 .. n % 16), the lanes were indexed at run
// time and GCC kept them in memory (softmax rows of 65, attention's, took about twice as long
// on an AMD EPYC Zen 5). One 64-byte vector is one register with AVX-512, but code compiled for
// AVX2 or SSE2 has no register that wide, and GCC then keeps it in memory too (a cifar-tiny
// step 10% slower under PATCHGRAD_ISA=avx2). 16 bytes is a register on every level and on NEON.
constexpr int64_t kLanes = 16;
enum class LaneOp { sum, max };
template <LaneOp op, class Term>
inline __attribute__((always_inline)) real lane_reduce(int64_t n, Term&& term) {
    typedef real Vector __attribute__((vector_size(16)));
    constexpr int64_t per_vector = 16 / sizeof(real), vectors = kLanes / per_vector;
    const real init = op == LaneOp::max ? -std::numeric_limits<real>::infinity() : real(0);
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
            if constexpr (op == LaneOp::max)
                lanes[v] = lanes[v] < terms ? terms : lanes[v];
            else
                lanes[v] += terms;
        }
    }
    auto combine = [](real a, real b) { return op == LaneOp::max ? (a < b ? b : a) : a + b; };
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
    return lane_reduce<LaneOp::sum>(n, term);
}

// The largest term (-inf for n == 0); NaN-free input assumed, as std::max does.
template <class Term>
inline __attribute__((always_inline)) real lane_max(int64_t n, Term&& term) {
    return lane_reduce<LaneOp::max>(n, term);
}

// What the ops call, for `real`: the fast forms in float, libm in double.
inline float vector_exp(float x) { return fast_exp(x); }
inline double vector_exp(double x) { return std::exp(x); }
inline float vector_erf(float x) { return fast_erf(x); }
inline double vector_erf(double x) { return std::erf(x); }
inline float vector_erf(float x, float* gaussian) { return fast_erf(x, gaussian); }  // and exp(-x^2)
inline double vector_erf(double x, double* gaussian) {
    *gaussian = std::exp(-x * x);
    return std::erf(x);
}

}  // namespace patchgrad
