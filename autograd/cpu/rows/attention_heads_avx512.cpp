// attention_heads_avx512.cpp — attention_heads.h's kernel for AVX-512 in float32: the same
// formulas as attention_heads.cpp, a block of 4 query rows at a time, from the first product
// through the softmax in registers and on to the second from a 4-row buffer. A head's products
// are small (65 x 65 x 32 for cifar-tiny): through gemm, packing, the partial last sliver of
// columns and the softmax's separate passes over S cost about as much as the multiply-adds
// (chapter 12's kernel notes).
//
// A row of S or dA [N] is NV vectors of 16 floats (NV = ceil(N / 16) <= 6); lanes past N are
// masked out of every load and store. k and v are transposed once per head into [d, NV * 16]
// so that a row block's product is broadcasts of q (or dO) times whole vectors of k^T (v^T).
// Compiled with -march=x86-64-v4 (CMakeLists.txt) and called only at the AVX-512 level.
#include "patchgrad/autograd/cpu/rows/attention_heads_avx512.h"

#if PATCHGRAD_ATTENTION_AVX512

#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

namespace patchgrad {

namespace {

constexpr int64_t W = 16;  // floats per vector
constexpr int64_t R = 4;   // query rows per block: R * NV accumulators + NV columns + 1 <= 32 registers

// exp(x) for x <= 0 (or -inf): fast_math.h's fast_exp, its steps one vector at a time.
inline __m512 exp_vector(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.33654f), shifter = _mm512_set1_ps(12582912.0f);
    const __mmask16 underflow = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    const __m512 clamped = _mm512_maskz_max_ps(0xFFFF, x, lo);
    const __m512 shifted = _mm512_fmadd_ps(clamped, _mm512_set1_ps(1.44269504088896341f), shifter);
    const __m512 n = _mm512_sub_ps(shifted, shifter);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), clamped);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    // 2^n: n + 127 in the exponent bits, taken from shifted's bits as fast_exp does.
    const __m512i bits = _mm512_maskz_slli_epi32(
        0xFFFF, _mm512_add_epi32(_mm512_castps_si512(shifted), _mm512_set1_epi32(127 - 0x4B400000)), 23);
    return _mm512_maskz_mul_ps(static_cast<__mmask16>(~underflow), p, _mm512_castsi512_ps(bits));
}

// The sum and the maximum of a vector's 16 floats, halving 16 -> 8 -> 4 -> 2 -> 1 within the
// register. (The masked forms with every lane set: GCC 12 warns of an uninitialised variable
// inside the unmasked ones and inside _mm512_reduce_add_ps.)
template <class Combine>
inline float reduce(__m512 v, Combine combine) {
    const __mmask16 all = 0xFFFF;
    v = combine(v, _mm512_mask_shuffle_f32x4(v, all, v, v, 0x4E));  // 256-bit halves swapped
    v = combine(v, _mm512_mask_shuffle_f32x4(v, all, v, v, 0xB1));  // 128-bit quarters swapped in pairs
    v = combine(v, _mm512_mask_permute_ps(v, all, v, 0x4E));        // 64-bit halves of each quarter swapped
    v = combine(v, _mm512_mask_permute_ps(v, all, v, 0xB1));        // neighbouring floats swapped
    return _mm512_cvtss_f32(v);
}
inline float reduce_add(__m512 v) {
    return reduce(v, [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); });
}
inline float reduce_max(__m512 v) {
    return reduce(v, [](__m512 a, __m512 b) { return _mm512_maskz_max_ps(0xFFFF, a, b); });
}

// Lanes [0, n - 16 v) of vector v of a row: all 16 but in the last vector.
inline __mmask16 lanes(int64_t n, int64_t v) {
    const int64_t left = n - v * W;
    return left >= W ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// xT [d, P] = x [N, d]^T (x's rows ld apart, d a multiple of 16), columns N..P-1 zero: 16 x 16
// blocks transposed in registers. Each of the 4 rounds swaps one bit of the row index with the
// same bit of the column index: rows i and i + b (b = 1, 2, 4, 8) trade their odd b-wide
// blocks of columns for the other's even ones.
void transpose_into(const float* x, int64_t ld, int64_t N, int64_t d, int64_t P, float* xT) {
    alignas(64) static const int32_t pick[4][2][16] = {
        {{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
         {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}},
        {{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
         {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31}},
        {{0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
         {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31}},
        {{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
         {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}}};
    for (int64_t j0 = 0; j0 < P; j0 += W)
        for (int64_t c0 = 0; c0 < d; c0 += W) {
            __m512 m[W];
            for (int64_t i = 0; i < W; ++i)
                m[i] = j0 + i < N ? _mm512_loadu_ps(x + (j0 + i) * ld + c0) : _mm512_setzero_ps();
            for (int round = 0, b = 1; round < 4; ++round, b *= 2) {
                const __m512i even = _mm512_load_si512(pick[round][0]), odd = _mm512_load_si512(pick[round][1]);
                for (int group = 0; group < W; group += 2 * b)
                    for (int i = group; i < group + b; ++i) {
                        const __m512 low = m[i], high = m[i + b];
                        m[i] = _mm512_permutex2var_ps(low, even, high);
                        m[i + b] = _mm512_permutex2var_ps(low, odd, high);
                    }
            }
            for (int64_t c = 0; c < W; ++c) _mm512_storeu_ps(xT + (c0 + c) * P + j0, m[c]);
        }
}

// The cache lines of the next head, asked for a few at a time while this one computes: up to 8
// regions of `rows` rows of `width` floats, `ld` apart. Asked for all at once, hundreds of
// prefetches would queue behind the few lines a core can have in flight.
class NextHead {
public:
    void add(const float* start, int64_t rows, int64_t width, int64_t ld) {
        regions_[count_++] = {start, rows, width, ld};
        lines_ += rows * ((width + 15) / 16 + 1);
    }
    int64_t lines() const { return lines_; }
    void fetch(int64_t lines) {
        for (; lines > 0 && region_ < count_; --lines) {
            const Region& g = regions_[region_];
            __builtin_prefetch(g.start + row_ * g.ld + (column_ < g.width ? column_ : g.width - 1));
            column_ += 16;
            if (column_ >= g.width + 16) {  // one line past the row's floats: its end when unaligned
                column_ = 0;
                if (++row_ == g.rows) row_ = 0, ++region_;
            }
        }
    }

private:
    struct Region {
        const float* start;
        int64_t rows, width, ld;
    };
    Region regions_[8];
    int count_ = 0, region_ = 0;
    int64_t lines_ = 0, row_ = 0, column_ = 0;
};

// Where head t (t = b * heads + h) finds q in qkv (k and v D and 2D further, rows 3D apart),
// and its columns in [B, N, D].
struct HeadOffsets {
    int64_t h, in, columns;
};
HeadOffsets head_offsets(const AttentionHeads& x, int64_t t) {
    const int64_t b = t / x.heads, h = t % x.heads, d = x.D / x.heads;
    return {h, b * x.N * 3 * x.D + h * d, b * x.N * x.D + h * d};
}

// What head t + 1 reads and writes, if it is before t1: its q, k and v, its N x N block of A,
// its columns of `columns` (the output, or dOut) and of dqkv (when not null).
NextHead next_head(const AttentionHeads& x, int64_t t, int64_t t1, const float* a, const float* columns,
                   const float* dqkv) {
    NextHead next;
    if (t + 1 >= t1) return next;
    const int64_t N = x.N, D = x.D, d = D / x.heads;
    const HeadOffsets o = head_offsets(x, t + 1);
    for (int64_t part = 0; part < 3; ++part) next.add(x.qkv + o.in + part * D, N, d, 3 * D);
    next.add(a + (t + 1) * N * N, 1, N * N, 0);
    next.add(columns + o.columns, N, d, D);
    if (dqkv)
        for (int64_t part = 0; part < 3; ++part) next.add(dqkv + o.in + part * D, N, d, 3 * D);
    return next;
}

// acc[r][v] = sum_k a(r, k) * y[k][16 v .. 16 v + 15] for r < ROWS, v < V (y's rows ldy apart):
// every product of the kernel, as broadcasts of a times whole vectors of y.
template <int ROWS, int V, class A>
__attribute__((always_inline)) inline void broadcast_times(int64_t K, A&& a, const float* y, int64_t ldy,
                                                           __m512 (&acc)[ROWS][V]) {
#pragma GCC unroll 8
    for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
        __m512 yk[V];
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) yk[v] = _mm512_loadu_ps(y + k * ldy + v * W);
#pragma GCC unroll 8
        for (int r = 0; r < ROWS; ++r) {
            const __m512 ark = _mm512_set1_ps(a(r, k));
#pragma GCC unroll 8
            for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(ark, yk[v], acc[r][v]);
        }
    }
}

// acc = rows i0 .. i0 + R - 1 of x [N, d] (ldx apart; past N, the last row again, computed but
// never stored) times yT [d, P]: a block of S = q k^T or of dA = dO v^T.
template <int NV>
__attribute__((always_inline)) inline void row_block_times_transposed(const float* x, int64_t ldx, int64_t i0,
                                                                      int64_t N, int64_t d, const float* yT, int64_t P,
                                                                      __m512 (&acc)[R][NV]) {
    const float* rows[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) rows[r] = x + std::min<int64_t>(i0 + r, N - 1) * ldx;
    const auto x_at = [&](int r, int64_t c) { return rows[r][c]; };
    broadcast_times(d, x_at, yT, P, acc);
}

template <int NV, int DV>
void forward_heads(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out) {
    const int64_t N = x.N, D = x.D, d = D / x.heads, ld = 3 * D, P = NV * W;
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(d * P + R * P));
    float* kT = scratch.data();
    float* p = kT + d * P;  // the block's R rows of A, [R, P] (past N: computed, never stored)
    // The key bias, -inf past N (read from memory in the loop: in registers it would push the
    // accumulators out of them).
    alignas(64) float bias[NV * W];
    for (int64_t j = 0; j < NV * W; ++j) bias[j] = j >= N ? -__builtin_inff() : x.bias ? x.bias[j] : 0.0f;
    for (int64_t t = t0; t < t1; ++t) {
        const HeadOffsets o = head_offsets(x, t);
        const float *q = x.qkv + o.in, *k = q + D, *vv = q + 2 * D;
        const float s = x.scales ? x.scales[o.h] : x.fixed_scale;
        float* at = a + t * N * N;
        float* ot = out + o.columns;
        NextHead next = next_head(x, t, t1, a, out, nullptr);
        const int64_t lines_per_block = next.lines() / ((N + R - 1) / R) + 1;
        transpose_into(k, ld, N, d, P, kT);
        for (int64_t i0 = 0; i0 < N; i0 += R) {
            next.fetch(lines_per_block);
            __m512 acc[R][NV];
            row_block_times_transposed(q, ld, i0, N, d, kT, P, acc);  // q k^T
            // A = softmax(s q k^T + bias) per row, into at's rows and p.
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                if (i0 + r >= N) continue;  // (a constant trip count keeps acc[r] in registers)
                const int64_t i = i0 + r;
                __m512 m = _mm512_set1_ps(-__builtin_inff());
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) {
                    acc[r][v] = _mm512_fmadd_ps(acc[r][v], _mm512_set1_ps(s), _mm512_load_ps(bias + v * W));
                    if (x.scales && i / W == v)  // a learned scale masks the diagonal
                        acc[r][v] =
                            _mm512_mask_mov_ps(acc[r][v], __mmask16(1u << (i % W)), _mm512_set1_ps(-__builtin_inff()));
                    m = _mm512_maskz_max_ps(0xFFFF, m, acc[r][v]);
                }
                const __m512 row_max = _mm512_set1_ps(reduce_max(m));
                __m512 sum = _mm512_setzero_ps();
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) {
                    acc[r][v] = exp_vector(_mm512_sub_ps(acc[r][v], row_max));
                    sum = _mm512_add_ps(sum, acc[r][v]);
                }
                const __m512 inv = _mm512_set1_ps(1.0f / reduce_add(sum));
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) {
                    const __m512 av = _mm512_mul_ps(acc[r][v], inv);
                    _mm512_storeu_ps(p + r * P + v * W, av);
                    _mm512_mask_storeu_ps(at + i * N + v * W, lanes(N, v), av);
                }
            }
            __m512 o[R][DV];
            const auto a_at = [&](int r, int64_t j) { return p[r * P + j]; };
            broadcast_times(N, a_at, vv, ld, o);  // O = A v
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                if (i0 + r < N)
#pragma GCC unroll 8
                    for (int u = 0; u < DV; ++u) _mm512_storeu_ps(ot + (i0 + r) * D + u * W, o[r][u]);
        }
    }
}

// [hide:attention-backward]
// y [N, d] (rows ld apart) (+)= scale * sum_i p[i][j] x[i] for every key j: dv = A^T dO (p = A,
// x = dO) and dk = s dS^T q (p = dS, x = q). J keys at a time (8 accumulators) over all N rows
// i, so y is written once, adding to it when beta is 1. Keys past N read what follows a row of
// p (its padding, the next row, the R rows after the last: at least 64 floats) and are never
// stored.
template <int DV>
void columns_times(const float* p, int64_t ldp, const float* x, int64_t ldx, int64_t N, float scale, float beta,
                   float* y, int64_t ld) {
    constexpr int J = 8 / DV;
    for (int64_t j0 = 0; j0 < N; j0 += J) {
        const int64_t keys = std::min<int64_t>(J, N - j0);
        __m512 acc[J][DV];
        const auto p_at = [&](int j, int64_t i) { return p[i * ldp + j0 + j]; };  // p^T
        broadcast_times(N, p_at, x, ldx, acc);
#pragma GCC unroll 8
        for (int j = 0; j < J; ++j)
#pragma GCC unroll 8
            for (int u = 0; u < DV; ++u) {
                if (j >= keys) continue;  // (a constant trip count keeps acc in registers)
                float* g = y + (j0 + j) * ld + u * W;
                const __m512 value = _mm512_mul_ps(_mm512_set1_ps(scale), acc[j][u]);
                _mm512_storeu_ps(g, beta == 0 ? value : _mm512_add_ps(value, _mm512_loadu_ps(g)));
            }
    }
}

template <int NV, int DV>
void backward_heads(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout, float* dqkv,
                    float beta, float* scale_parts) {
    const int64_t N = x.N, D = x.D, d = D / x.heads, ld = 3 * D, P = NV * W;
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(d * P + 2 * (N + R) * P));
    float* vT = scratch.data();
    float* ds = vT + d * P;        // dS [N, P], and R rows past N that are read but never used
    float* ap = ds + (N + R) * P;  // A likewise
    for (int64_t t = t0; t < t1; ++t) {
        const HeadOffsets o = head_offsets(x, t);
        const float *q = x.qkv + o.in, *k = q + D, *vv = q + 2 * D;
        const float s = x.scales ? x.scales[o.h] : x.fixed_scale;
        const float* at = a + t * N * N;
        const float* dot = dout + o.columns;
        float* dq = dqkv ? dqkv + o.in : nullptr;
        NextHead next = next_head(x, t, t1, a, dout, dqkv);
        const int64_t lines_per_block = next.lines() / ((N + R - 1) / R) + 1;
        transpose_into(vv, ld, N, d, P, vT);
        float part = 0;
        for (int64_t i0 = 0; i0 < N; i0 += R) {
            next.fetch(lines_per_block);
            __m512 acc[R][NV];
            row_block_times_transposed(dot, D, i0, N, d, vT, P, acc);  // dA = dO v^T
            // dS = A * (dA - rowsum(dA * A)) into ds, and A into ap.
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                if (i0 + r >= N) continue;  // (a constant trip count keeps acc[r] in registers)
                const int64_t i = i0 + r;
                __m512 av[NV], dot_sum = _mm512_setzero_ps();
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) {
                    av[v] = _mm512_maskz_loadu_ps(lanes(N, v), at + i * N + v * W);
                    dot_sum = _mm512_fmadd_ps(acc[r][v], av[v], dot_sum);
                    _mm512_storeu_ps(ap + i * P + v * W, av[v]);
                }
                const __m512 row_dot = _mm512_set1_ps(reduce_add(dot_sum));
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v)
                    _mm512_storeu_ps(ds + i * P + v * W, _mm512_mul_ps(av[v], _mm512_sub_ps(acc[r][v], row_dot)));
            }
            // dS k [R, d]: dq's rows (times s) and the scale's part <q, dS k>.
            __m512 dsk[R][DV];
            const auto ds_at = [&](int r, int64_t j) { return ds[(i0 + r) * P + j]; };
            broadcast_times(N, ds_at, k, ld, dsk);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                if (i0 + r >= N) continue;  // (a constant trip count keeps acc[r] in registers)
                const float* qr = q + (i0 + r) * ld;
                __m512 qdot = _mm512_setzero_ps();
#pragma GCC unroll 8
                for (int u = 0; u < DV; ++u) {
                    if (scale_parts) qdot = _mm512_fmadd_ps(_mm512_loadu_ps(qr + u * W), dsk[r][u], qdot);
                    if (!dq) continue;
                    float* g = dq + (i0 + r) * ld + u * W;
                    const __m512 value = _mm512_mul_ps(_mm512_set1_ps(s), dsk[r][u]);
                    _mm512_storeu_ps(g, beta == 0 ? value : _mm512_add_ps(value, _mm512_loadu_ps(g)));
                }
                if (scale_parts) part += reduce_add(qdot);
            }
        }
        if (scale_parts) scale_parts[t] = part;
        if (!dq) continue;
        columns_times<DV>(ap, P, dot, D, N, 1, beta, dq + 2 * D, ld);  // dv = A^T dO
        columns_times<DV>(ds, P, q, ld, N, s, beta, dq + D, ld);       // dk = s dS^T q
    }
}
// [/hide:attention-backward]

// Calls f(NV, DV) with both as compile-time constants (std::integral_constant): NV = 1..6
// vectors per row of S, DV = 1, 2 or 4 vectors per row of q (attention_heads_avx512_fits).
template <class F>
void with_vector_counts(int64_t NV, int64_t DV, F&& f) {
    const auto rows = [&](auto dv) {
        using Dv = decltype(dv);
        switch (NV) {
            case 1:
                return f(std::integral_constant<int, 1>{}, Dv{});
            case 2:
                return f(std::integral_constant<int, 2>{}, Dv{});
            case 3:
                return f(std::integral_constant<int, 3>{}, Dv{});
            case 4:
                return f(std::integral_constant<int, 4>{}, Dv{});
            case 5:
                return f(std::integral_constant<int, 5>{}, Dv{});
            default:
                return f(std::integral_constant<int, 6>{}, Dv{});
        }
    };
    if (DV == 1) return rows(std::integral_constant<int, 1>{});
    if (DV == 2) return rows(std::integral_constant<int, 2>{});
    return rows(std::integral_constant<int, 4>{});
}

}  // namespace

bool attention_heads_avx512_fits(const AttentionHeads& x) {
    const int64_t d = x.D / x.heads;
    return x.N >= 1 && x.N <= 6 * W && (d == 16 || d == 32 || d == 64);
}

void attention_heads_forward_avx512(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out) {
    with_vector_counts((x.N + W - 1) / W, x.D / x.heads / W, [&](auto nv, auto dv) {
        forward_heads<decltype(nv)::value, decltype(dv)::value>(x, t0, t1, a, out);
    });
}

// [hide:attention-backward]
void attention_heads_backward_avx512(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout,
                                     float* dqkv, float beta, float* scale_parts) {
    with_vector_counts((x.N + W - 1) / W, x.D / x.heads / W, [&](auto nv, auto dv) {
        backward_heads<decltype(nv)::value, decltype(dv)::value>(x, t0, t1, a, dout, dqkv, beta, scale_parts);
    });
}
// [/hide:attention-backward]

}  // namespace patchgrad

#endif  // PATCHGRAD_ATTENTION_AVX512
