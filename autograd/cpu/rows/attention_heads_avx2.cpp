// attention_heads_avx2.cpp — attention_heads_simd_kernel.h's vector operations for AVX2: 8
// floats a register and only 16 registers, so S is computed a row at a time (up to 12 vectors
// of accumulators, the columns loaded straight into the multiply-adds), A v two rows at a time,
// lanes past N masked by vmaskmovps. Compiled with -march=x86-64-v3 (CMakeLists.txt) and called
// only at the AVX2 level.
#include "patchgrad/autograd/cpu/rows/attention_heads_simd.h"

#if PATCHGRAD_ATTENTION_SIMD

#include <immintrin.h>

#include "patchgrad/autograd/cpu/rows/attention_heads_simd_kernel.h"

namespace patchgrad {

namespace {

struct Avx2 {
    using V = __m256;
    static constexpr int64_t W = 8;
    static constexpr int64_t kRows = 2;       // query rows a block: A v two rows at a time
    static constexpr int64_t kScoreRows = 1;  // rows of S computed together
    static constexpr bool head_vectors_ok(int64_t dv) { return dv == 2 || dv == 4; }

    // All-ones in lanes [0, n) (all 8 for n >= 8): vmaskmovps's mask.
    static __m256i first_lanes(int64_t n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n < 8 ? n : 8)),
                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static V zero() { return _mm256_setzero_ps(); }
    static V set1(float x) { return _mm256_set1_ps(x); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static V load_first(const float* p, int64_t n) { return _mm256_maskload_ps(p, first_lanes(n)); }
    static void store_first(float* p, int64_t n, V v) { _mm256_maskstore_ps(p, first_lanes(n), v); }
    static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V div(V a, V b) { return _mm256_div_ps(a, b); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static V with_lane(V v, int64_t lane, float x) {
        const __m256i one =
            _mm256_cmpeq_epi32(_mm256_set1_epi32(static_cast<int>(lane)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        return _mm256_blendv_ps(v, set1(x), _mm256_castsi256_ps(one));
    }

    // The sum and the maximum of the 8 floats: the two halves, then within 4.
    template <class Combine>
    static float reduce(V v, Combine combine) {
        __m128 x = combine(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        x = combine(x, _mm_movehl_ps(x, x));
        x = combine(x, _mm_shuffle_ps(x, x, 0x55));
        return _mm_cvtss_f32(x);
    }
    static float reduce_add(V v) {
        return reduce(v, [](__m128 a, __m128 b) { return _mm_add_ps(a, b); });
    }
    static float reduce_max(V v) {
        return reduce(v, [](__m128 a, __m128 b) { return _mm_max_ps(a, b); });
    }

    // p * 2^n, n + 127 in the exponent bits taken from shifted's bits as fast_exp does; 0 where
    // x underflows (exp in attention_heads_simd_kernel.h).
    static V times_power_of_two(V p, V shifted, V x) {
        const V underflow = _mm256_cmp_ps(x, set1(-87.33654f), _CMP_LT_OQ);
        const __m256i bits =
            _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(shifted), _mm256_set1_epi32(127 - 0x4B400000)), 23);
        return _mm256_andnot_ps(underflow, mul(p, _mm256_castsi256_ps(bits)));
    }

    // m [8] = its transpose: pairs of rows interleaved, then pairs of pairs, then the 128-bit
    // halves exchanged.
    static void transpose(V (&m)[8]) {
        V t[8], u[8];
        for (int i = 0; i < 8; i += 2) {
            t[i] = _mm256_unpacklo_ps(m[i], m[i + 1]);
            t[i + 1] = _mm256_unpackhi_ps(m[i], m[i + 1]);
        }
        for (int i = 0; i < 8; i += 4) {
            u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
            u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
            u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
            u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
        }
        for (int i = 0; i < 4; ++i) {
            m[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
            m[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
        }
    }
};

}  // namespace

bool attention_heads_avx2_fits(const AttentionHeads& x) { return fits<Avx2>(x); }

void attention_heads_forward_avx2(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out) {
    forward<Avx2>(x, t0, t1, a, out);
}

// [hide:attention-backward]
void attention_heads_backward_avx2(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout,
                                   float* dqkv, float beta, float* scale_parts) {
    backward<Avx2>(x, t0, t1, a, dout, dqkv, beta, scale_parts);
}
// [/hide:attention-backward]

}  // namespace patchgrad

#endif  // PATCHGRAD_ATTENTION_SIMD
