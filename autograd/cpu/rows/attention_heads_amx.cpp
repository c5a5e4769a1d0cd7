// attention_heads_amx.cpp — attention_heads.h's kernel with every product of a head on AMX's
// tiles (attention_heads_amx.h): the formulas of attention_heads.cpp, one head at a time, its
// operands packed as bf16 pairs into small buffers that stay in L1, each product a few
// tdpbf16ps (gemm_bf16_amx_tile.h explains the tiles and the pairs), the softmax and dS in
// float32 vectors between them. A head of cifar-tiny (65 tokens, d = 32) is tiny for a tile:
// q k^T is 25 instructions. Through gemm_bf16 its packing, the partial tiles and the calls cost
// far more than that; here the packing is a few conversions and 16 x 16 transposes per head.
//
// Shapes, with T = ceil(N / 16) tiles of tokens (rows of S and of the outputs), KT = ceil(N /
// 32) tiles of pairs over tokens, DS = ceil(d / 32) tiles of pairs over d and DT = ceil(d / 16)
// tiles of columns of d; the buffers' rows past N, and their pairs and columns past d, hold
// zeros (or rows that are computed and never stored), so that every tile is whole:
//   scores:      S [16T, 16T] = X [16T, d] Y^T      X's rows as pairs over d, Y^T as pairs
//                (q k^T; dA = dO v^T)                over d for 16 tokens a row
//   rows_times:  Z [16T, d] = P [16T, 32KT] Y       P's rows as pairs over tokens, Y's rows
//                (A v; dS k; dS^T q; A^T dO)         interleaved by pairs of tokens
// Given no A (a null, attention_heads_recompute), the forward does not store it and the backward
// computes it again from q and k: 25 tile instructions and a softmax a head, against 17 KB of A
// written, read for ownership and read back.
// GCC's tile intrinsics name the tiles by number in the instruction and do not tell the compiler
// which memory they read or write, so the tile numbers are written out, and compiler_fence()
// orders the vector stores before a tile load and the tile stores before a vector load
// (gemm_bf16_amx.cpp says the same of its kernel).
#include "patchgrad/autograd/cpu/rows/attention_heads_amx.h"

#if PATCHGRAD_ATTENTION_AMX
#include <algorithm>
#include <cmath>

#include "patchgrad/autograd/cpu/bf16/bf16_avx512.h"
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"
#include "patchgrad/autograd/cpu/rows/attention_heads_avx512_ops.h"
#include "patchgrad/autograd/cpu/rows/attention_heads_simd_kernel.h"  // NextHead, head_offsets, exp, with_row_vectors

namespace patchgrad {
namespace {

constexpr int64_t kMaxTokens = 96, kMaxTiles = kMaxTokens / 16, kMaxPairTiles = kMaxTokens / 32;
constexpr int64_t kMaxD = 64;

inline void compiler_fence() { asm volatile("" ::: "memory"); }

// ---- the tiles: 0..3 accumulate, 4 and 5 hold the left operand, 6 and 7 the right one --------
// (Each function names its tiles in the instruction; c selects among the accumulators.)
void zero_tile(int c) {
    switch (c) {
        case 0:
            _tile_zero(0);
            break;
        case 1:
            _tile_zero(1);
            break;
        case 2:
            _tile_zero(2);
            break;
        default:
            _tile_zero(3);
            break;
    }
}
void store_tile(int c, float* p, int64_t stride_bytes) {
    switch (c) {
        case 0:
            _tile_stored(0, p, stride_bytes);
            break;
        case 1:
            _tile_stored(1, p, stride_bytes);
            break;
        case 2:
            _tile_stored(2, p, stride_bytes);
            break;
        default:
            _tile_stored(3, p, stride_bytes);
            break;
    }
}
// Tile 6 (or 7) = 16 rows of 64 bytes from b, rows stride_bytes apart.
void load_right(bool seven, const uint32_t* b, int64_t stride_bytes) {
    if (seven)
        _tile_loadd(7, b, stride_bytes);
    else
        _tile_loadd(6, b, stride_bytes);
}
// Tile c += tile 4 (or 5) times tile 6 (or 7).
void multiply_into(int c, bool five, bool seven) {
    switch (c * 4 + five * 2 + seven) {
        case 0:
            _tile_dpbf16ps(0, 4, 6);
            break;
        case 1:
            _tile_dpbf16ps(0, 4, 7);
            break;
        case 2:
            _tile_dpbf16ps(0, 5, 6);
            break;
        case 3:
            _tile_dpbf16ps(0, 5, 7);
            break;
        case 4:
            _tile_dpbf16ps(1, 4, 6);
            break;
        case 5:
            _tile_dpbf16ps(1, 4, 7);
            break;
        case 6:
            _tile_dpbf16ps(1, 5, 6);
            break;
        case 7:
            _tile_dpbf16ps(1, 5, 7);
            break;
        case 8:
            _tile_dpbf16ps(2, 4, 6);
            break;
        case 9:
            _tile_dpbf16ps(2, 4, 7);
            break;
        case 10:
            _tile_dpbf16ps(2, 5, 6);
            break;
        case 11:
            _tile_dpbf16ps(2, 5, 7);
            break;
        case 12:
            _tile_dpbf16ps(3, 4, 6);
            break;
        case 13:
            _tile_dpbf16ps(3, 4, 7);
            break;
        case 14:
            _tile_dpbf16ps(3, 5, 6);
            break;
        default:
            _tile_dpbf16ps(3, 5, 7);
            break;
    }
}

// A head's buffers, per thread (the heads of one call on one thread reuse them). Rows of 64
// bytes or a multiple, so that a tile row is one or more whole cache lines.
struct Buffers {
    alignas(64) uint32_t x_pairs[kMaxTokens][kMaxD / 2];                // q or dO: row i's pairs over d
    alignas(64) uint32_t y_t[kMaxTiles][kMaxD / 32][16][16];            // k or v: [token tile][d tile][pair][token]
    alignas(64) float s[kMaxTokens][kMaxTokens];                        // S, or dA then dS
    alignas(64) float a[kMaxTokens][kMaxTokens];                        // A, rows past N zero (backward)
    alignas(64) uint32_t p_pairs[kMaxTokens][16 * kMaxPairTiles];       // A or dS: row i's pairs over tokens
    alignas(64) uint32_t p_t_pairs[2][kMaxTokens][16 * kMaxPairTiles];  // dS^T, A^T likewise
    alignas(64) uint32_t y_inter[3][16 * kMaxPairTiles][kMaxD];         // v, k, q, dO: rows by pairs of tokens
    alignas(64) float z[3][kMaxTokens][kMaxD];                          // the products' outputs
};
Buffers& buffers() {
    thread_local Buffers b;
    return b;
}

struct Shape {
    int64_t N, d, T, KT, DS, DT;
};
Shape shape_of(const AttentionHeads& x) {
    const int64_t N = x.N, d = x.D / x.heads;
    return {N, d, (N + 15) / 16, (N + 31) / 32, (d + 31) / 32, (d + 15) / 16};
}
// The lanes of d's vector u that hold values (all 16 but in a last partial vector).
__mmask16 d_lanes(const Shape& sh, int64_t u) { return first_lanes(sh.d - 16 * u); }

// x_pairs[i] = row i of x [N, d] (rows ld apart) as pairs over d; rows N .. 16T - 1 must be zero.
void pack_rows(const float* x, int64_t ld, const Shape& sh, uint32_t (*x_pairs)[kMaxD / 2]) {
    for (int64_t i = 0; i < sh.N; ++i)
        for (int64_t u = 0; u < sh.DS; ++u)
            _mm512_store_si512(&x_pairs[i][16 * u], pairs_of_run(x + i * ld + 32 * u, sh.d - 32 * u));
}

// y_t[c][u][p][j] = pair p of d tile u of token 16c + j of y [N, d] (zero past N): y^T, the right
// operand of scores.
void pack_transposed(const float* y, int64_t ld, const Shape& sh, uint32_t (*y_t)[kMaxD / 32][16][16]) {
    for (int64_t c = 0; c < sh.T; ++c)
        for (int64_t u = 0; u < sh.DS; ++u) {
            __m512i r[16];
            for (int64_t j = 0; j < 16; ++j) {
                const int64_t token = 16 * c + j;
                r[j] = token < sh.N ? pairs_of_run(y + token * ld + 32 * u, sh.d - 32 * u) : _mm512_setzero_si512();
            }
            transpose_16x16(r);
            for (int64_t p = 0; p < 16; ++p) _mm512_store_si512(y_t[c][u][p], r[p]);
        }
}

// y_inter[p][c] = (y[2p][c], y[2p + 1][c]) for the 16 KT pairs of tokens (zero past N): the right
// operand of rows_times. The pairs past N are stored as zeros, not loaded through an empty mask,
// which costs as much as a real load (tutorials/12_speed/measurements.md#kernel-notes).
void pack_interleaved(const float* y, int64_t ld, const Shape& sh, uint32_t (*y_inter)[kMaxD]) {
    __mmask16 lanes[kMaxD / 16];
    for (int64_t u = 0; u < sh.DT; ++u) lanes[u] = d_lanes(sh, u);
    const auto row = [&](int64_t i, int64_t u) { return _mm512_maskz_loadu_ps(lanes[u], y + i * ld + 16 * u); };
    int64_t p = 0;
    for (; 2 * p + 1 < sh.N; ++p)
        for (int64_t u = 0; u < sh.DT; ++u)
            _mm512_store_si512(&y_inter[p][16 * u], interleaved_pairs(row(2 * p, u), row(2 * p + 1, u)));
    if (2 * p < sh.N) {  // the last row, alone
        for (int64_t u = 0; u < sh.DT; ++u)
            _mm512_store_si512(&y_inter[p][16 * u], interleaved_pairs(row(2 * p, u), _mm512_setzero_ps()));
        ++p;
    }
    for (; p < 16 * sh.KT; ++p)
        for (int64_t u = 0; u < sh.DT; ++u) _mm512_store_si512(&y_inter[p][16 * u], _mm512_setzero_si512());
}

// p_pairs = a row of T float vectors as pairs over tokens, zero pairs up to 16 KT.
template <int T>
void row_to_pairs(const __m512 (&v)[T], uint32_t* p_pairs) {
    for (int c = 0; c < T; c += 2) {
        const __m512 lo = v[c], hi = c + 1 < T ? v[c + 1] : _mm512_setzero_ps();
        _mm512_store_si512(p_pairs + 8 * c, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
}

// p_t[j][q] = (m[2q][j], m[2q + 1][j]) for tokens j < 16T: m^T's rows as pairs (rows of m past
// N must be zero up to 32 KT).
void transpose_to_pairs(const float (*m)[kMaxTokens], const Shape& sh, uint32_t (*p_t)[16 * kMaxPairTiles]) {
    for (int64_t c = 0; c < sh.T; ++c)
        for (int64_t qb = 0; qb < sh.KT; ++qb) {
            __m512i r[16];
            for (int64_t p = 0; p < 16; ++p) {
                const int64_t i = 32 * qb + 2 * p;
                r[p] = interleaved_pairs(_mm512_load_ps(&m[i][16 * c]), _mm512_load_ps(&m[i + 1][16 * c]));
            }
            transpose_16x16(r);
            for (int64_t j = 0; j < 16; ++j) _mm512_store_si512(&p_t[16 * c + j][16 * qb], r[j]);
        }
}

// s = x_pairs y^T [16T, 16T] (scores), four tiles of tokens at a time.
void scores(const Shape& sh, const uint32_t (*x_pairs)[kMaxD / 2], const uint32_t (*y_t)[kMaxD / 32][16][16],
            float (*s)[kMaxTokens]) {
    compiler_fence();
    for (int64_t r = 0; r < sh.T; ++r) {
        _tile_loadd(4, &x_pairs[16 * r][0], sizeof x_pairs[0]);
        if (sh.DS == 2) _tile_loadd(5, &x_pairs[16 * r][16], sizeof x_pairs[0]);
        for (int64_t c0 = 0; c0 < sh.T; c0 += 4) {
            const int64_t tiles = std::min<int64_t>(4, sh.T - c0);
            for (int c = 0; c < tiles; ++c) {
                zero_tile(c);
                for (int64_t u = 0; u < sh.DS; ++u) {
                    // (The right operand alternates between tiles 6 and 7: a load waits for the
                    // instructions that read its tile before.)
                    const bool seven = sh.DS == 2 ? u == 1 : c % 2 == 1;
                    load_right(seven, y_t[c0 + c][u][0], 64);
                    multiply_into(c, u == 1, seven);
                }
            }
            for (int c = 0; c < tiles; ++c) store_tile(c, &s[16 * r][16 * (c0 + c)], sizeof s[0]);
        }
    }
    compiler_fence();
}

// z = p_pairs y [16T, d] (rows_times): DT tiles of columns, KT tiles of pairs. With `out`, the
// rows below N go there instead (rows out_ld floats apart): whole tiles straight from the tiles,
// the partial ones (the last rows, or the last columns where d is not a multiple of 16) through
// z (a vector load just after a tile store of the same lines waits for the store to finish,
// and a copy would read every row so).
void rows_times(const Shape& sh, const uint32_t (*p_pairs)[16 * kMaxPairTiles], const uint32_t (*y_inter)[kMaxD],
                float (*z)[kMaxD], float* out = nullptr, int64_t out_ld = 0) {
    compiler_fence();
    for (int64_t r = 0; r < sh.T; ++r) {
        for (int c = 0; c < sh.DT; ++c) zero_tile(c);
        for (int64_t kt = 0; kt < sh.KT; ++kt) {
            _tile_loadd(4, &p_pairs[16 * r][16 * kt], sizeof p_pairs[0]);
            for (int c = 0; c < sh.DT; ++c) {
                load_right(c % 2 == 1, &y_inter[16 * kt][16 * c], sizeof y_inter[0]);
                multiply_into(c, false, c % 2 == 1);
            }
        }
        const bool whole_rows = out && 16 * r + 16 <= sh.N;
        for (int c = 0; c < sh.DT; ++c)
            if (whole_rows && 16 * c + 16 <= sh.d)
                store_tile(c, out + 16 * r * out_ld + 16 * c, out_ld * sizeof(float));
            else
                store_tile(c, &z[16 * r][16 * c], sizeof z[0]);
    }
    compiler_fence();
    if (!out) return;
    for (int64_t i = 0; i < sh.N; ++i)  // what went through z
        for (int64_t u = i < sh.N / 16 * 16 ? sh.d / 16 : 0; u < sh.DT; ++u)
            _mm512_mask_storeu_ps(out + i * out_ld + 16 * u, d_lanes(sh, u), _mm512_load_ps(&z[i][16 * u]));
}

// The key bias of every row, -inf past N (as the float32 kernel's).
void key_bias(const AttentionHeads& x, float (&bias)[kMaxTokens]) {
    for (int64_t j = 0; j < kMaxTokens; ++j) bias[j] = j >= x.N ? -INFINITY : x.bias ? x.bias[j] : 0.0f;
}

// Zeroes the rows N .. kMaxTokens - 1 of x_pairs, s and a, which the products read as padding
// and this call's heads never write (or write as zeros): another call, with more tokens, may
// have left values there.
void zero_padding_rows(Buffers& b, int64_t N) {
    for (int64_t i = N; i < kMaxTokens; ++i) {
        for (uint32_t& w : b.x_pairs[i]) w = 0;
        for (float& v : b.s[i]) v = 0;
        for (float& v : b.a[i]) v = 0;
    }
}

// Rows i .. i + R - 1 of A = softmax(s S + bias) from S's rows, each as T vectors (zero past
// N); with a learned scale the diagonal is masked. R rows side by side: a row's max and sum end
// in chains of dependent instructions, and the other rows' instructions fill their waits. (Each
// row's operations are those of one row alone, in the same order: the same bits for any R.)
template <int T, int R>
inline __attribute__((always_inline)) void softmax_rows(const AttentionHeads& x, const float (&bias)[kMaxTokens],
                                                        __m512 s, const float (*S)[kMaxTokens], int64_t i,
                                                        __m512 (&row)[R][T]) {
    __m512 m[R], sum[R];
    for (int r = 0; r < R; ++r) m[r] = _mm512_set1_ps(-INFINITY), sum[r] = _mm512_setzero_ps();
    for (int c = 0; c < T; ++c)
        for (int r = 0; r < R; ++r) {
            row[r][c] = _mm512_fmadd_ps(_mm512_load_ps(S[i + r] + 16 * c), s, _mm512_load_ps(bias + 16 * c));
            if (x.scales && (i + r) / 16 == c)
                row[r][c] = _mm512_mask_mov_ps(row[r][c], static_cast<__mmask16>(1u << ((i + r) % 16)),
                                               _mm512_set1_ps(-INFINITY));
            m[r] = _mm512_max_ps(m[r], row[r][c]);
        }
    for (int r = 0; r < R; ++r) m[r] = _mm512_set1_ps(_mm512_reduce_max_ps(m[r]));
    for (int c = 0; c < T; ++c)
        for (int r = 0; r < R; ++r) {
            row[r][c] = exp<Avx512>(_mm512_sub_ps(row[r][c], m[r]));
            sum[r] = _mm512_add_ps(sum[r], row[r][c]);
        }
    for (int r = 0; r < R; ++r) {
        const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum[r]));
        for (int c = 0; c < T; ++c) row[r][c] = _mm512_mul_ps(row[r][c], inv);
    }
}

// Calls row_done(i, row) for every row i < N of A (b.s holding S), row being its T vectors; two
// rows at a time.
template <int T, class RowDone>
void for_each_softmax_row(const AttentionHeads& x, const float (&bias)[kMaxTokens], __m512 s, const Buffers& b,
                          RowDone&& row_done) {
    int64_t i = 0;
    for (; i + 2 <= x.N; i += 2) {
        __m512 row[2][T];
        softmax_rows<T, 2>(x, bias, s, b.s, i, row);
        row_done(i, row[0]);
        row_done(i + 1, row[1]);
    }
    if (i < x.N) {
        __m512 row[1][T];
        softmax_rows<T, 1>(x, bias, s, b.s, i, row);
        row_done(i, row[0]);
    }
}

// What every call sets up: the tile configuration, this thread's buffers with their padding rows
// zeroed for N, and the key bias.
Buffers& prepare_call(const AttentionHeads& x, float (&bias)[kMaxTokens]) {
    amx_configure_tiles();
    Buffers& b = buffers();
    zero_padding_rows(b, x.N);
    key_bias(x, bias);
    return b;
}

// b.s = q k^T for a head whose q starts at q (k D further, rows ld apart): the forward's scores,
// and the backward's when it computes A again.
void scores_of_head(const float* q, int64_t D, int64_t ld, const Shape& sh, Buffers& b) {
    pack_rows(q, ld, sh, b.x_pairs);
    pack_transposed(q + D, ld, sh, b.y_t);
    scores(sh, b.x_pairs, b.y_t, b.s);
}

}  // namespace

bool attention_heads_amx_fits(const AttentionHeads& x) {
    const int64_t d = x.heads > 0 ? x.D / x.heads : 0;
    return x.N >= 1 && x.N <= kMaxTokens && d >= 8 && d <= kMaxD && d % 8 == 0 && d * x.heads == x.D;
}

void attention_heads_forward_amx(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out) {
    const Shape sh = shape_of(x);
    const int64_t N = sh.N, D = x.D, ld = 3 * D;
    alignas(64) float bias[kMaxTokens];
    Buffers& b = prepare_call(x, bias);
    for (int64_t t = t0; t < t1; ++t) {
        const HeadOffsets o = head_offsets(x, t);
        const float *q = x.qkv + o.in, *v = q + 2 * D;
        const __m512 s = _mm512_set1_ps(x.scales ? x.scales[o.h] : x.fixed_scale);
        // (Asked for a few lines a row of the softmax.)
        NextHead next = next_head(x, t, t1, a, out, nullptr);
        const int64_t lines_per_row = next.lines() / N + 1;
        pack_interleaved(v, ld, sh, b.y_inter[0]);
        scores_of_head(q, D, ld, sh, b);  // S = q k^T
        // A = softmax(s S + bias) per row, into p_pairs and, unless a is null, into A's block.
        with_row_vectors<16>(sh.T, [&](auto tiles) {
            constexpr int T = decltype(tiles)::value;
            for_each_softmax_row<T>(x, bias, s, b, [&](int64_t i, const __m512(&row)[T]) {
                next.fetch(lines_per_row);
                if (a)
                    for (int c = 0; c < T; ++c)
                        _mm512_mask_storeu_ps(a + t * N * N + i * N + 16 * c, first_lanes(N - 16 * c), row[c]);
                row_to_pairs(row, b.p_pairs[i]);
            });
        });
        next.fetch(next.lines());                                             // (what is left)
        rows_times(sh, b.p_pairs, b.y_inter[0], b.z[0], out + o.columns, D);  // O = A v
    }
}

// [hide:attention-backward]
void attention_heads_backward_amx(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout,
                                  float* dqkv, float beta, float* scale_parts) {
    const Shape sh = shape_of(x);
    const int64_t N = sh.N, D = x.D, ld = 3 * D;
    alignas(64) float bias[kMaxTokens];
    Buffers& b = prepare_call(x, bias);
    for (int64_t t = t0; t < t1; ++t) {
        const HeadOffsets o = head_offsets(x, t);
        const float *q = x.qkv + o.in, *k = q + D, *v = q + 2 * D;
        const float s = x.scales ? x.scales[o.h] : x.fixed_scale;
        const float* dot = dout + o.columns;
        // (Asked for a few lines a row in the loops over the rows below.)
        NextHead next = next_head(x, t, t1, a, dout, dqkv);
        const int64_t lines_per_row = next.lines() / (3 * N) + 1;
        // A's rows into b.a: read from A's block, or, where a is null, computed again as the
        // forward did (the same instructions on the same q and k: the same bits).
        if (a) {
            for (int64_t i = 0; i < N; ++i)
                for (int64_t c = 0; c < sh.T; ++c)
                    _mm512_store_ps(&b.a[i][16 * c],
                                    _mm512_maskz_loadu_ps(first_lanes(N - 16 * c), a + t * N * N + i * N + 16 * c));
        } else {
            scores_of_head(q, D, ld, sh, b);  // S = q k^T
            with_row_vectors<16>(sh.T, [&](auto tiles) {
                constexpr int T = decltype(tiles)::value;
                for_each_softmax_row<T>(x, bias, _mm512_set1_ps(s), b, [&](int64_t i, const __m512(&row)[T]) {
                    next.fetch(lines_per_row);
                    for (int c = 0; c < T; ++c) _mm512_store_ps(&b.a[i][16 * c], row[c]);
                });
            });
        }
        pack_rows(dot, D, sh, b.x_pairs);
        pack_transposed(v, ld, sh, b.y_t);
        pack_interleaved(k, ld, sh, b.y_inter[0]);
        pack_interleaved(q, ld, sh, b.y_inter[1]);
        pack_interleaved(dot, D, sh, b.y_inter[2]);
        scores(sh, b.x_pairs, b.y_t, b.s);  // dA = dO v^T (rows past N: zero, as dO's)
        // dS = A * (dA - rowsum(dA * A)) in place of dA; dS's pairs.
        with_row_vectors<16>(sh.T, [&](auto tiles) {
            constexpr int T = decltype(tiles)::value;
            for (int64_t i = 0; i < N; ++i) {
                next.fetch(lines_per_row);
                __m512 av[T], row[T];
                __m512 dot_sum = _mm512_setzero_ps();
                for (int c = 0; c < T; ++c) {
                    av[c] = _mm512_load_ps(&b.a[i][16 * c]);
                    dot_sum = _mm512_fmadd_ps(_mm512_load_ps(&b.s[i][16 * c]), av[c], dot_sum);
                }
                const __m512 row_dot = _mm512_set1_ps(_mm512_reduce_add_ps(dot_sum));
                for (int c = 0; c < T; ++c) {
                    row[c] = _mm512_mul_ps(av[c], _mm512_sub_ps(_mm512_load_ps(&b.s[i][16 * c]), row_dot));
                    _mm512_store_ps(&b.s[i][16 * c], row[c]);
                }
                row_to_pairs(row, b.p_pairs[i]);
            }
        });
        transpose_to_pairs(b.s, sh, b.p_t_pairs[0]);           // dS^T
        transpose_to_pairs(b.a, sh, b.p_t_pairs[1]);           // A^T
        rows_times(sh, b.p_pairs, b.y_inter[0], b.z[0]);       // dS k
        rows_times(sh, b.p_t_pairs[0], b.y_inter[1], b.z[1]);  // dS^T q
        rows_times(sh, b.p_t_pairs[1], b.y_inter[2], b.z[2]);  // A^T dO
        // dq = s dS k, dk = s dS^T q, dv = A^T dO (beta 0: written, 1: added); the scale's part
        // <q, dS k>.
        __m512 part = _mm512_setzero_ps();
        float* dq = dqkv ? dqkv + o.in : nullptr;
        for (int64_t i = 0; i < N; ++i) {
            next.fetch(lines_per_row);
            for (int64_t u = 0; u < sh.DT; ++u) {
                const __mmask16 lanes = d_lanes(sh, u);
                if (scale_parts)
                    part = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes, q + i * ld + 16 * u),
                                           _mm512_load_ps(&b.z[0][i][16 * u]), part);
                if (!dq) continue;
                for (int64_t which = 0; which < 3; ++which) {
                    float* g = dq + which * D + i * ld + 16 * u;
                    __m512 value = _mm512_load_ps(&b.z[which][i][16 * u]);
                    if (which < 2) value = _mm512_mul_ps(_mm512_set1_ps(s), value);
                    if (beta != 0) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(lanes, g));
                    _mm512_mask_storeu_ps(g, lanes, value);
                }
            }
        }
        if (scale_parts) scale_parts[t] = _mm512_reduce_add_ps(part);
    }
}
// [/hide:attention-backward]

}  // namespace patchgrad

#elif defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE)
namespace patchgrad {
// A compiler that does not know AMX: no heads go to the tiles.
bool attention_heads_amx_fits(const AttentionHeads&) { return false; }
}  // namespace patchgrad
#endif
