// attention_heads_simd_kernel.h — attention_heads.h's kernel in float32 for one vector
// instruction set, written once over a table of its vector operations (`T`, from
// attention_heads_avx512.cpp or attention_heads_avx2.cpp, each compiled for its level): the
// formulas of attention_heads.cpp, a block of T::kRows query rows at a time, from the first
// product through the softmax in registers and on to the second from a small buffer. A head's
// products are small (65 x 65 x 32 for cifar-tiny): through gemm, packing, the partial last
// sliver of columns and the softmax's separate passes over S cost about as much as the
// multiply-adds (chapter 12.10).
//
// A row of S or dA [N] is NV vectors of T::W floats; lanes past N are masked out of every load
// and store. k and v are transposed once per head into [d, NV * W], so that a block's product
// is broadcasts of q (or dO) times whole vectors of k^T (v^T). Included by those two files only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "patchgrad/autograd/cpu/aligned_vector.h"
#include "patchgrad/autograd/cpu/rows/attention_heads.h"

namespace patchgrad {
// Everything here has internal linkage: each level's file gets its own copy, compiled for its
// instructions (one shared copy would run AVX-512 code on a CPU with AVX2 alone).
namespace {

// The cache lines of the next head, asked for a few at a time while this one computes: up to 8
// regions of `rows` rows of `width` floats, `ld` apart. Asked for all at once, hundreds of
// prefetches would queue behind the few lines a core can have in flight. They ask for L2 only
// (prefetcht1), which is near enough for lines read a whole head later, and measured faster
// than asking for L1 (tutorials/12_speed/measurements.md#kernel-notes). A row that may start
// off a 64-byte boundary (its start, or ld, not a whole number of lines) can span one line more
// than its floats fill, and is counted so.
class NextHead {
public:
    void add(const float* start, int64_t rows, int64_t width, int64_t ld) {
        const bool aligned = reinterpret_cast<uintptr_t>(start) % 64 == 0 && ld % 16 == 0;
        const int64_t lines_per_row = (width + 15) / 16 + (aligned ? 0 : 1);
        regions_[count_++] = {start, rows, width, ld, lines_per_row};
        lines_ += rows * lines_per_row;
    }
    int64_t lines() const { return lines_; }
    void fetch(int64_t lines) {
        for (; lines > 0 && region_ < count_; --lines) {
            const Region& g = regions_[region_];
            __builtin_prefetch(g.start + row_ * g.ld + std::min(16 * line_, g.width - 1), 0, 2);
            if (++line_ == g.lines_per_row) {  // (the last line: the row's last float)
                line_ = 0;
                if (++row_ == g.rows) row_ = 0, ++region_;
            }
        }
    }

private:
    struct Region {
        const float* start;
        int64_t rows, width, ld, lines_per_row;
    };
    Region regions_[8];
    int count_ = 0, region_ = 0;
    int64_t lines_ = 0, row_ = 0, line_ = 0;
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

// What head t + 1 reads and writes, if it is before t1: its q, k and v, its N x N block of A
// (when a is not null), its columns of `columns` (the output, or dOut) and of dqkv (when not
// null).
NextHead next_head(const AttentionHeads& x, int64_t t, int64_t t1, const float* a, const float* columns,
                   const float* dqkv) {
    NextHead next;
    if (t + 1 >= t1) return next;
    const int64_t N = x.N, D = x.D, d = D / x.heads;
    const HeadOffsets o = head_offsets(x, t + 1);
    for (int64_t part = 0; part < 3; ++part) next.add(x.qkv + o.in + part * D, N, d, 3 * D);
    if (a) next.add(a + (t + 1) * N * N, 1, N * N, 0);
    next.add(columns + o.columns, N, d, D);
    if (dqkv)
        for (int64_t part = 0; part < 3; ++part) next.add(dqkv + o.in + part * D, N, d, 3 * D);
    return next;
}

// exp(x) for x <= 0 (or -inf): fast_math.h's fast_exp, its steps one vector at a time; the
// level's T::times_power_of_two multiplies by 2^n, built from shifted's bits, and gives 0 where
// x < -87.33654. (max returns its second operand when one is NaN: a NaN goes through as
// fast_exp's does.)
template <class T>
typename T::V exp(typename T::V x) {
    using V = typename T::V;
    const V lo = T::set1(-87.33654f), shifter = T::set1(12582912.0f);
    const V clamped = T::max(lo, x);
    const V shifted = T::fmadd(clamped, T::set1(1.44269504088896341f), shifter);
    const V n = T::sub(shifted, shifter);
    V r = T::fmadd(n, T::set1(-0.693359375f), clamped);
    r = T::fmadd(n, T::set1(2.12194440e-4f), r);
    V p = T::set1(1.9875691500e-4f);
    p = T::fmadd(p, r, T::set1(1.3981999507e-3f));
    p = T::fmadd(p, r, T::set1(8.3334519073e-3f));
    p = T::fmadd(p, r, T::set1(4.1665795894e-2f));
    p = T::fmadd(p, r, T::set1(1.6666665459e-1f));
    p = T::fmadd(p, r, T::set1(5.0000001201e-1f));
    p = T::fmadd(T::mul(p, r), r, T::add(r, T::set1(1.0f)));
    return T::times_power_of_two(p, shifted, x);
}

// v[r] = the maximum (the sum) of v[r]'s lanes, in every lane, for each of R rows: four rows at
// once by T's reduce4, which combines the same pairs in the same order as one row's reduce (the
// same bits); other counts row by row.
enum class RowReduce { Max, Sum };
template <class T, RowReduce op, int R>
__attribute__((always_inline)) inline void reduce_each_row(typename T::V (&v)[R]) {
    using V = typename T::V;
    const auto combine = [](V a, V b) { return op == RowReduce::Max ? T::max(a, b) : T::add(a, b); };
    if constexpr (R == 4)
        T::reduce4(v, combine);
    else
        for (int r = 0; r < R; ++r) v[r] = T::set1(op == RowReduce::Max ? T::reduce_max(v[r]) : T::reduce_add(v[r]));
}

// xT [d, P] = x [N, d]^T (x's rows ld apart, d a multiple of W), columns N..P-1 zero, by W x W
// blocks transposed in registers.
template <class T>
void transpose_into(const float* x, int64_t ld, int64_t N, int64_t d, int64_t P, float* xT) {
    constexpr int64_t W = T::W;
    for (int64_t j0 = 0; j0 < P; j0 += W)
        for (int64_t c0 = 0; c0 < d; c0 += W) {
            typename T::V m[W];
            for (int64_t i = 0; i < W; ++i) m[i] = j0 + i < N ? T::load(x + (j0 + i) * ld + c0) : T::zero();
            T::transpose(m);
            for (int64_t c = 0; c < W; ++c) T::store(xT + (c0 + c) * P + j0, m[c]);
        }
}

// acc[r][v] = sum_k a(r, k) * y[k][W v .. W v + W - 1] for r < ROWS, v < V (y's rows ldy apart):
// every product of the kernel, as broadcasts of a times whole vectors of y. A vector of y used
// by several rows is loaded once; for one row the loads go straight into the multiply-adds.
template <class T, int ROWS, int V, class A>
__attribute__((always_inline)) inline void broadcast_times(int64_t K, A&& a, const float* y, int64_t ldy,
                                                           typename T::V (&acc)[ROWS][V]) {
#pragma GCC unroll 12
    for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 12
        for (int v = 0; v < V; ++v) acc[r][v] = T::zero();
    for (int64_t k = 0; k < K; ++k) {
        const float* yk = y + k * ldy;
        if constexpr (ROWS == 1) {
            const typename T::V ak = T::set1(a(0, k));
#pragma GCC unroll 12
            for (int v = 0; v < V; ++v) acc[0][v] = T::fmadd(ak, T::load(yk + v * T::W), acc[0][v]);
        } else {
            typename T::V yv[V];
#pragma GCC unroll 12
            for (int v = 0; v < V; ++v) yv[v] = T::load(yk + v * T::W);
#pragma GCC unroll 12
            for (int r = 0; r < ROWS; ++r) {
                const typename T::V ark = T::set1(a(r, k));
#pragma GCC unroll 12
                for (int v = 0; v < V; ++v) acc[r][v] = T::fmadd(ark, yv[v], acc[r][v]);
            }
        }
    }
}

// acc = rows i0 .. i0 + ROWS - 1 of x [N, d] (ldx apart; past N, the last row again, computed but
// never stored) times yT [d, P]: a block of S = q k^T or of dA = dO v^T.
template <class T, int ROWS, int NV>
__attribute__((always_inline)) inline void row_block_times_transposed(const float* x, int64_t ldx, int64_t i0,
                                                                      int64_t N, int64_t d, const float* yT, int64_t P,
                                                                      typename T::V (&acc)[ROWS][NV]) {
    const float* rows[ROWS];
#pragma GCC unroll 12
    for (int r = 0; r < ROWS; ++r) rows[r] = x + std::min<int64_t>(i0 + r, N - 1) * ldx;
    const auto x_at = [&](int r, int64_t c) { return rows[r][c]; };
    broadcast_times<T>(d, x_at, yT, P, acc);
}

template <class T, int NV, int DV>
void forward_heads(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out) {
    using V = typename T::V;
    constexpr int64_t W = T::W, R = T::kRows, RS = T::kScoreRows;
    const int64_t N = x.N, D = x.D, d = D / x.heads, ld = 3 * D, P = NV * W;
    thread_local AlignedVector<float> scratch;
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
        // (Not the next head's A, which is only written here: asked for, it came slower.)
        NextHead next = next_head(x, t, t1, nullptr, out, nullptr);
        const int64_t lines_per_block = next.lines() / ((N + R - 1) / R) + 1;
        transpose_into<T>(k, ld, N, d, P, kT);
        for (int64_t i0 = 0; i0 < N; i0 += R) {
            next.fetch(lines_per_block);
            for (int64_t s0 = 0; s0 < R; s0 += RS) {
                V acc[RS][NV];
                row_block_times_transposed<T>(q, ld, i0 + s0, N, d, kT, P, acc);  // q k^T
                // A = softmax(s q k^T + bias) per row, into at's rows and p, the RS rows' maxima
                // and sums reduced together (rows past N: the last row again, never stored).
                V m[RS], sum[RS];
#pragma GCC unroll 12
                for (int r = 0; r < RS; ++r) {
                    const int64_t i = i0 + s0 + r;
                    m[r] = T::set1(-__builtin_inff());
#pragma GCC unroll 12
                    for (int v = 0; v < NV; ++v) {
                        acc[r][v] = T::fmadd(acc[r][v], T::set1(s), T::load(bias + v * W));
                        if (x.scales && i / W == v)  // a learned scale masks the diagonal
                            acc[r][v] = T::with_lane(acc[r][v], i % W, -__builtin_inff());
                        m[r] = T::max(m[r], acc[r][v]);
                    }
                }
                reduce_each_row<T, RowReduce::Max>(m);
#pragma GCC unroll 12
                for (int r = 0; r < RS; ++r) {
                    sum[r] = T::zero();
#pragma GCC unroll 12
                    for (int v = 0; v < NV; ++v) {
                        acc[r][v] = exp<T>(T::sub(acc[r][v], m[r]));
                        sum[r] = T::add(sum[r], acc[r][v]);
                    }
                }
                reduce_each_row<T, RowReduce::Sum>(sum);
#pragma GCC unroll 12
                for (int r = 0; r < RS; ++r) {
                    const int64_t i = i0 + s0 + r;
                    if (i >= N) continue;  // (a constant trip count keeps acc[r] in registers)
                    const V inv = T::div(T::set1(1.0f), sum[r]);
#pragma GCC unroll 12
                    for (int v = 0; v < NV; ++v) {
                        const V av = T::mul(acc[r][v], inv);
                        T::store(p + (s0 + r) * P + v * W, av);
                        T::store_first(at + i * N + v * W, N - v * W, av);
                    }
                }
            }
            V ov[R][DV];
            const auto a_at = [&](int r, int64_t j) { return p[r * P + j]; };
            broadcast_times<T>(N, a_at, vv, ld, ov);  // O = A v
#pragma GCC unroll 12
            for (int r = 0; r < R; ++r)
                if (i0 + r < N)
#pragma GCC unroll 12
                    for (int u = 0; u < DV; ++u) T::store(ot + (i0 + r) * D + u * W, ov[r][u]);
        }
    }
}

// [hide:attention-backward]
// y [N, d] (rows ld apart) (+)= scale * sum_i p[i][j] x[i] for every key j: dv = A^T dO (p = A,
// x = dO) and dk = s dS^T q (p = dS, x = q). J keys at a time (8 accumulators) over all N rows
// i, so y is written once, adding to it when beta is 1. Keys past N read what follows a row of
// p (its padding, the next row, the rows after the last) and are never stored.
template <class T, int DV>
void columns_times(const float* p, int64_t ldp, const float* x, int64_t ldx, int64_t N, float scale, float beta,
                   float* y, int64_t ld) {
    using V = typename T::V;
    constexpr int J = 8 / DV;
    for (int64_t j0 = 0; j0 < N; j0 += J) {
        const int64_t keys = std::min<int64_t>(J, N - j0);
        V acc[J][DV];
        const auto p_at = [&](int j, int64_t i) { return p[i * ldp + j0 + j]; };  // p^T
        broadcast_times<T>(N, p_at, x, ldx, acc);
#pragma GCC unroll 12
        for (int j = 0; j < J; ++j)
#pragma GCC unroll 12
            for (int u = 0; u < DV; ++u) {
                if (j >= keys) continue;  // (a constant trip count keeps acc in registers)
                float* g = y + (j0 + j) * ld + u * T::W;
                const V value = T::mul(T::set1(scale), acc[j][u]);
                T::store(g, beta == 0 ? value : T::add(value, T::load(g)));
            }
    }
}

template <class T, int NV, int DV>
void backward_heads(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout, float* dqkv,
                    float beta, float* scale_parts) {
    using V = typename T::V;
    constexpr int64_t W = T::W, R = T::kRows, RS = T::kScoreRows;
    const int64_t N = x.N, D = x.D, d = D / x.heads, ld = 3 * D, P = NV * W;
    thread_local AlignedVector<float> scratch;
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
        // (dqkv only where it is added to: lines only written came slower when asked for.)
        NextHead next = next_head(x, t, t1, a, dout, beta != 0 ? dqkv : nullptr);
        const int64_t lines_per_block = next.lines() / ((N + R - 1) / R) + 1;
        transpose_into<T>(vv, ld, N, d, P, vT);
        float part = 0;
        for (int64_t i0 = 0; i0 < N; i0 += R) {
            next.fetch(lines_per_block);
            for (int64_t s0 = 0; s0 < R; s0 += RS) {
                V acc[RS][NV];
                row_block_times_transposed<T>(dot, D, i0 + s0, N, d, vT, P, acc);  // dA = dO v^T
                // dS = A * (dA - rowsum(dA * A)) into ds, and A into ap, the RS rows' sums reduced
                // together.
                V dot_sum[RS];
#pragma GCC unroll 12
                for (int r = 0; r < RS; ++r) {
                    const int64_t i = i0 + s0 + r;
                    dot_sum[r] = T::zero();
                    if (i >= N) continue;  // (a constant trip count keeps acc[r] in registers)
#pragma GCC unroll 12
                    for (int v = 0; v < NV; ++v) {
                        const V av = T::load_first(at + i * N + v * W, N - v * W);
                        dot_sum[r] = T::fmadd(acc[r][v], av, dot_sum[r]);
                        T::store(ap + i * P + v * W, av);  // (read back below, from L1)
                    }
                }
                reduce_each_row<T, RowReduce::Sum>(dot_sum);
#pragma GCC unroll 12
                for (int r = 0; r < RS; ++r) {
                    const int64_t i = i0 + s0 + r;
                    if (i >= N) continue;
#pragma GCC unroll 12
                    for (int v = 0; v < NV; ++v)
                        T::store(ds + i * P + v * W,
                                 T::mul(T::load(ap + i * P + v * W), T::sub(acc[r][v], dot_sum[r])));
                }
            }
            // dS k [R, d]: dq's rows (times s) and the scale's part <q, dS k>.
            V dsk[R][DV];
            const auto ds_at = [&](int r, int64_t j) { return ds[(i0 + r) * P + j]; };
            broadcast_times<T>(N, ds_at, k, ld, dsk);
#pragma GCC unroll 12
            for (int r = 0; r < R; ++r) {
                if (i0 + r >= N) continue;  // (a constant trip count keeps dsk[r] in registers)
                const float* qr = q + (i0 + r) * ld;
                V qdot = T::zero();
#pragma GCC unroll 12
                for (int u = 0; u < DV; ++u) {
                    if (scale_parts) qdot = T::fmadd(T::load(qr + u * W), dsk[r][u], qdot);
                    if (!dq) continue;
                    float* g = dq + (i0 + r) * ld + u * W;
                    const V value = T::mul(T::set1(s), dsk[r][u]);
                    T::store(g, beta == 0 ? value : T::add(value, T::load(g)));
                }
                if (scale_parts) part += T::reduce_add(qdot);
            }
        }
        if (scale_parts) scale_parts[t] = part;
        if (!dq) continue;
        columns_times<T, DV>(ap, P, dot, D, N, 1, beta, dq + 2 * D, ld);  // dv = A^T dO
        columns_times<T, DV>(ds, P, q, ld, N, s, beta, dq + D, ld);       // dk = s dS^T q
    }
}
// [/hide:attention-backward]

// Whether the kernel takes these heads: 1 to 96 tokens, and heads of a whole number of vectors
// that T::head_vectors_ok accepts (a block's accumulators must fit in the registers).
template <class T>
bool fits(const AttentionHeads& x) {
    const int64_t d = x.D / x.heads;
    return x.N >= 1 && x.N <= 96 && d % T::W == 0 && T::head_vectors_ok(d / T::W);
}

// Calls f(NV) with NV = nv as a compile-time constant (std::integral_constant), for nv = 1 ..
// ceil(96 / W), the vectors of W floats in a row of S of up to 96 tokens (nothing otherwise).
template <int W, int NV = 1, class F>
void with_row_vectors(int64_t nv, F&& f) {
    if constexpr (NV * W <= 96 + W - 1) {
        if (nv != NV) return with_row_vectors<W, NV + 1>(nv, f);
        f(std::integral_constant<int, NV>{});
    }
}

// Calls f(NV, DV) with both as compile-time constants: NV = ceil(N / W) = 1 .. 96 / W vectors
// per row of S, DV = d / W vectors per row of q.
template <class T, class F>
void with_vector_counts(int64_t nv, int64_t dv, F&& f) {
    with_row_vectors<T::W>(nv, [&](auto nv_constant) {
        if constexpr (T::head_vectors_ok(1))
            if (dv == 1) return f(nv_constant, std::integral_constant<int, 1>{});
        if constexpr (T::head_vectors_ok(2))
            if (dv == 2) return f(nv_constant, std::integral_constant<int, 2>{});
        if constexpr (T::head_vectors_ok(4))
            if (dv == 4) return f(nv_constant, std::integral_constant<int, 4>{});
    });
}

template <class T>
void forward(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out) {
    with_vector_counts<T>((x.N + T::W - 1) / T::W, x.D / x.heads / T::W, [&](auto nv, auto dv) {
        forward_heads<T, decltype(nv)::value, decltype(dv)::value>(x, t0, t1, a, out);
    });
}

// [hide:attention-backward]
template <class T>
void backward(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout, float* dqkv,
              float beta, float* scale_parts) {
    with_vector_counts<T>((x.N + T::W - 1) / T::W, x.D / x.heads / T::W, [&](auto nv, auto dv) {
        backward_heads<T, decltype(nv)::value, decltype(dv)::value>(x, t0, t1, a, dout, dqkv, beta, scale_parts);
    });
}
// [/hide:attention-backward]

}  // namespace
}  // namespace patchgrad
