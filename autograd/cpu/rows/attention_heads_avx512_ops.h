// attention_heads_avx512_ops.h — attention_heads_simd_kernel.h's vector operations for AVX-512
// (the table `T` its templates take): 16 floats a register, 32 registers, so blocks of 4 query
// rows carry up to 6 vectors of S each (4 x 6 accumulators + 6 columns + 1 broadcast), lanes
// past N masked by mask registers. Included by attention_heads_avx512.cpp (compiled with
// -march=x86-64-v4) and attention_heads_amx.cpp, whose softmax uses its exp; internal linkage,
// so that each gets its own copy.
#pragma once

#include <cstdint>

#include <immintrin.h>

namespace patchgrad {
namespace {

struct Avx512 {
    static constexpr __mmask16 kAll = 0xFFFF;
    // Lanes [0, n) of a vector (all 16 for n >= 16).
    static __mmask16 first_lanes(int64_t n) { return n >= 16 ? kAll : static_cast<__mmask16>((1u << n) - 1); }

    using V = __m512;
    static constexpr int64_t W = 16;
    static constexpr int64_t kRows = 4;       // query rows a block: S, the softmax, A v
    static constexpr int64_t kScoreRows = 4;  // rows of S computed together
    static constexpr bool head_vectors_ok(int64_t dv) { return dv == 1 || dv == 2 || dv == 4; }

    // (The masked forms with every lane set where GCC 12 warns of an uninitialised variable
    // inside the unmasked ones.)
    static V zero() { return _mm512_setzero_ps(); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V load_first(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(first_lanes(n), p); }
    static void store_first(float* p, int64_t n, V v) { _mm512_mask_storeu_ps(p, first_lanes(n), v); }
    static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V div(V a, V b) { return _mm512_div_ps(a, b); }
    static V max(V a, V b) { return _mm512_maskz_max_ps(kAll, a, b); }
    static V with_lane(V v, int64_t lane, float x) { return _mm512_mask_mov_ps(v, __mmask16(1u << lane), set1(x)); }

    // The sum and the maximum of the 16 floats, halving 16 -> 8 -> 4 -> 2 -> 1 in the register.
    template <class Combine>
    static float reduce(V v, Combine combine) {
        v = combine(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0x4E));  // 256-bit halves swapped
        v = combine(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0xB1));  // 128-bit quarters swapped in pairs
        v = combine(v, _mm512_mask_permute_ps(v, kAll, v, 0x4E));        // 64-bit halves of each quarter swapped
        v = combine(v, _mm512_mask_permute_ps(v, kAll, v, 0xB1));        // neighbouring floats swapped
        return _mm512_cvtss_f32(v);
    }
    static float reduce_add(V v) {
        return reduce(v, [](V a, V b) { return add(a, b); });
    }
    static float reduce_max(V v) {
        return reduce(v, [](V a, V b) { return max(a, b); });
    }
    // v[r] = reduce's result for v[r], in every lane, for 4 rows together: the halves of two rows
    // side by side, then their quarters, so that one instruction combines all four rows' pairs.
    template <class Combine>
    static void reduce4(V (&v)[4], Combine combine) {
        const V h01 = combine(_mm512_mask_shuffle_f32x4(v[0], kAll, v[0], v[1], 0x44),   // halves: 0 lo, 1 lo
                              _mm512_mask_shuffle_f32x4(v[0], kAll, v[0], v[1], 0xEE));  // 0 hi, 1 hi
        const V h23 = combine(_mm512_mask_shuffle_f32x4(v[2], kAll, v[2], v[3], 0x44),
                              _mm512_mask_shuffle_f32x4(v[2], kAll, v[2], v[3], 0xEE));
        V q = combine(_mm512_mask_shuffle_f32x4(h01, kAll, h01, h23, 0x88),   // quarter r: row r's four
                      _mm512_mask_shuffle_f32x4(h01, kAll, h01, h23, 0xDD));  // partial results
        q = combine(q, _mm512_mask_permute_ps(q, kAll, q, 0x4E));
        q = combine(q, _mm512_mask_permute_ps(q, kAll, q, 0xB1));
        v[0] = _mm512_mask_shuffle_f32x4(q, kAll, q, q, 0x00);
        v[1] = _mm512_mask_shuffle_f32x4(q, kAll, q, q, 0x55);
        v[2] = _mm512_mask_shuffle_f32x4(q, kAll, q, q, 0xAA);
        v[3] = _mm512_mask_shuffle_f32x4(q, kAll, q, q, 0xFF);
    }

    // p * 2^n, n + 127 in the exponent bits taken from shifted's bits as fast_exp does; 0 where
    // x underflows (exp in attention_heads_simd_kernel.h).
    static V times_power_of_two(V p, V shifted, V x) {
        const __mmask16 underflow = _mm512_cmp_ps_mask(x, set1(-87.33654f), _CMP_LT_OQ);
        const __m512i bits = _mm512_maskz_slli_epi32(
            kAll, _mm512_add_epi32(_mm512_castps_si512(shifted), _mm512_set1_epi32(127 - 0x4B400000)), 23);
        return _mm512_maskz_mul_ps(static_cast<__mmask16>(~underflow), p, _mm512_castsi512_ps(bits));
    }

    // m [16] = its transpose. Each of the 4 rounds swaps one bit of the row index with the same
    // bit of the column index: rows i and i + b (b = 1, 2, 4, 8) trade their odd b-wide blocks of
    // columns for the other's even ones.
    static void transpose(V (&m)[16]) {
        alignas(64) static const int32_t pick[4][2][16] = {
            {{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
             {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}},
            {{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
             {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31}},
            {{0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
             {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31}},
            {{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
             {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}}};
        for (int round = 0, b = 1; round < 4; ++round, b *= 2) {
            const __m512i even = _mm512_load_si512(pick[round][0]), odd = _mm512_load_si512(pick[round][1]);
            for (int group = 0; group < 16; group += 2 * b)
                for (int i = group; i < group + b; ++i) {
                    const V low = m[i], high = m[i + b];
                    m[i] = _mm512_permutex2var_ps(low, even, high);
                    m[i + b] = _mm512_permutex2var_ps(low, odd, high);
                }
        }
    }
};

}  // namespace
}  // namespace patchgrad
