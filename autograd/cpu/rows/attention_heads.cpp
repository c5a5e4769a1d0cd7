// attention_heads.cpp — the per-head attention kernel (attention_heads.h): gemm reads q, k and
// v in place through their leading dimension 3D, and each head asks for the next one's memory
// while it computes. Its products are gemm_small's (float32 under bf16 where the kernel is AMX).
// Under bf16 with AMX's kernel, heads of 8 to 64 (multiples of 8) go to the tile kernel of
// attention_heads_amx.h; at the AVX-512 and AVX2 levels, heads whose products are float32 go to
// the kernel of attention_heads_simd.h.
#include "patchgrad/autograd/cpu/rows/attention_heads.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "patchgrad/autograd/check.h"
#include "patchgrad/autograd/cpu/aligned_vector.h"
#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/rows/attention_heads_amx.h"
#include "patchgrad/autograd/cpu/rows/attention_heads_simd.h"
#include "patchgrad/autograd/cpu/rows/softmax_rows.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"

namespace patchgrad {

namespace {

// Where head h of image b finds its q, k and v [N, d] in qkv [B, N, 3 * D] (rows ld = 3D
// apart), and its output's columns in [B, N, D].
struct Head {
    int64_t h;
    const real *q, *k, *v;
    int64_t in;   // offset of q in qkv (k and v are D and 2D further), and of dq in its gradient
    int64_t out;  // offset of the head's first output column in [B, N, D]
};

// [snippet:sdpa-head-pointers]
Head head_at(const real* qkv, int64_t t, int64_t heads, int64_t N, int64_t D) {
    const int64_t b = t / heads, h = t % heads, in = b * N * 3 * D + h * (D / heads);
    return {h, qkv + in, qkv + in + D, qkv + in + 2 * D, in, b * N * D + h * (D / heads)};
}
// [/snippet:sdpa-head-pointers]

// Asks for the cache lines of `rows` rows of `width` reals, `ld` apart.
void prefetch_rows(const real* p, int64_t rows, int64_t width, int64_t ld) {
    constexpr int64_t line = 64 / sizeof(real);
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < width; j += line) __builtin_prefetch(p + i * ld + j);
        __builtin_prefetch(p + i * ld + width - 1);  // (a row that does not start on a line boundary)
    }
}

// What the next head reads and writes, asked for while this one is computed. Each head reads
// and writes cache lines no other head touches (its own columns of qkv and of the output, its
// own block of A), written long before or far out of cache by the time backward reads them;
// without this every head starts by waiting for memory. q, k and v [N, d] are at next.q, D
// and 2D further, rows 3D apart.
void prefetch_qkv(const real* q, int64_t N, int64_t d, int64_t D) {
    for (int64_t part = 0; part < 3; ++part) prefetch_rows(q + part * D, N, d, 3 * D);
}

// Forward: its q, k, v, its N x N block of A and its columns of the output [B, N, D].
void prefetch_forward(const Head& next, const real* next_a, const real* out, int64_t N, int64_t d, int64_t D) {
    prefetch_qkv(next.q, N, d, D);
    prefetch_rows(next_a, 1, N * N, 0);
    prefetch_rows(out + next.out, N, d, D);
}

// [hide:attention-backward]
// Backward: the same, with dOut for the output, and its part of qkv's gradient if there is one.
void prefetch_backward(const Head& next, const real* next_a, const real* dout, const real* dqkv, int64_t N, int64_t d,
                       int64_t D) {
    prefetch_forward(next, next_a, dout, N, d, D);
    if (dqkv) prefetch_qkv(dqkv + next.in, N, d, D);
}
// [/hide:attention-backward]

// Whether the heads go to the tiles' kernel (attention_heads_amx.h): under the bf16 precision
// with AMX's kernel, for a shape it takes.
bool on_tiles(const AttentionHeads& x) {
#if PATCHGRAD_ATTENTION_AMX
    return matmul_precision() == MatmulPrecision::Bf16 && gemm_bf16_is_amx() && attention_heads_amx_fits(x);
#else
    (void)x;
    return false;
#endif
}

#if PATCHGRAD_ATTENTION_AMX
// Whether the tiles' kernel takes these heads now: where on_tiles says so, and for a null A
// (which only that kernel computes again) wherever AMX runs and the shape fits, whatever the
// precision is now. A null A anywhere else is refused by the callers below.
bool to_tiles(const AttentionHeads& x, const real* a) {
    return on_tiles(x) || (a == nullptr && gemm_bf16_is_amx() && attention_heads_amx_fits(x));
}
#endif

#if PATCHGRAD_ATTENTION_SIMD
// Which vector kernel takes the heads (attention_heads_simd.h), if any, where the tiles do not:
// at the AVX-512 and AVX2 levels, where its products would be float32 here too (gemm_small's
// rule) and the shape fits. Its time counts as products' under `bench` (as_products), as the
// tiles' does: the softmax runs inside their loops.
Isa vector_kernel(const AttentionHeads& x) {
    const Isa isa = active_isa();
    if (!gemm_small_is_float32()) return Isa::Baseline;
    if (isa == Isa::Avx512 && attention_heads_avx512_fits(x)) return Isa::Avx512;
    if (isa == Isa::Avx2 && attention_heads_avx2_fits(x)) return Isa::Avx2;
    return Isa::Baseline;
}
#endif

}  // namespace

bool attention_heads_recompute(const AttentionHeads& x) { return on_tiles(x); }

void attention_heads_forward(const AttentionHeads& x, int64_t t0, int64_t t1, real* a, real* out) {
    const int64_t heads = x.heads, N = x.N, D = x.D, d = D / heads, ld = 3 * D;
#if PATCHGRAD_ATTENTION_AMX
    if (to_tiles(x, a)) return as_products([&] { attention_heads_forward_amx(x, t0, t1, a, out); });
#endif
    check(a != nullptr, "attention_heads_forward: no A to write, and no kernel here that computes it again");
#if PATCHGRAD_ATTENTION_SIMD
    switch (vector_kernel(x)) {
        case Isa::Avx512:
            return as_products([&] { attention_heads_forward_avx512(x, t0, t1, a, out); });
        case Isa::Avx2:
            return as_products([&] { attention_heads_forward_avx2(x, t0, t1, a, out); });
        default:
            break;
    }
#endif
    // [snippet:sdpa-forward-head]
    for (int64_t t = t0; t < t1; ++t) {
        const Head h = head_at(x.qkv, t, heads, N, D);
        real* at = a + t * N * N;
        if (t + 1 < t1) prefetch_forward(head_at(x.qkv, t + 1, heads, N, D), at + N * N, out, N, d, D);
        gemm_small(false, true, N, N, d, x.scales ? x.scales[h.h] : x.fixed_scale, h.q, ld, h.k, ld, 0, at, N, x.bias);
        if (x.scales)
            for (int64_t i = 0; i < N; ++i) at[i * N + i] = -std::numeric_limits<real>::infinity();
        softmax_rows_forward(at, at, N, N, false);
        gemm_small(false, false, N, d, N, 1, at, N, h.v, ld, 0, out + h.out, D);
    }
    // [/snippet:sdpa-forward-head]
}

// [hide:attention-backward]
void attention_heads_backward(const AttentionHeads& x, int64_t t0, int64_t t1, const real* a, const real* dout,
                              real* dqkv, real beta, real* scale_parts) {
    const int64_t heads = x.heads, N = x.N, D = x.D, d = D / heads, ld = 3 * D;
#if PATCHGRAD_ATTENTION_AMX
    if (to_tiles(x, a))
        return as_products([&] { attention_heads_backward_amx(x, t0, t1, a, dout, dqkv, beta, scale_parts); });
#endif
    check(a != nullptr, "attention_heads_backward: no A, and no kernel here that computes it again");
#if PATCHGRAD_ATTENTION_SIMD
    switch (vector_kernel(x)) {
        case Isa::Avx512:
            return as_products([&] { attention_heads_backward_avx512(x, t0, t1, a, dout, dqkv, beta, scale_parts); });
        case Isa::Avx2:
            return as_products([&] { attention_heads_backward_avx2(x, t0, t1, a, dout, dqkv, beta, scale_parts); });
        default:
            break;
    }
#endif
    thread_local AlignedVector<real> scratch;  // this thread's dA, dS and dS k, reused call after call
    scratch.resize(static_cast<size_t>(2 * N * N + N * d));
    real* da = scratch.data();
    real* ds = da + N * N;
    real* dsk = ds + N * N;  // dS k, unscaled
    for (int64_t t = t0; t < t1; ++t) {
        const Head h = head_at(x.qkv, t, heads, N, D);
        const real s = x.scales ? x.scales[h.h] : x.fixed_scale;
        const real *q = h.q, *k = h.k, *v = h.v;
        const real* at = a + t * N * N;
        const real* dot = dout + h.out;
        if (t + 1 < t1) prefetch_backward(head_at(x.qkv, t + 1, heads, N, D), at + N * N, dout, dqkv, N, d, D);
        gemm_small(false, true, N, N, d, 1, dot, D, v, ld, 0, da, N);  // dA = dO v^T
        std::fill(ds, ds + N * N, real(0));
        softmax_rows_backward(at, da, ds, N, N);  // dS
        real* dq = dqkv ? dqkv + h.in : nullptr;
        if (dq) {
            gemm_small(true, false, N, d, N, 1, at, N, dot, D, beta, dq + 2 * D, ld);  // dv = A^T dO
            gemm_small(true, false, N, d, N, s, ds, N, q, ld, beta, dq + D, ld);       // dk = s dS^T q
        }
        if (!scale_parts) {
            if (dq) gemm_small(false, false, N, d, N, s, ds, N, k, ld, beta, dq, ld);  // dq = s dS k
            continue;
        }
        gemm_small(false, false, N, d, N, 1, ds, N, k, ld, 0, dsk, d);
        real part = 0;
        for (int64_t i = 0; i < N; ++i)
            for (int64_t c = 0; c < d; ++c) {
                part += q[i * ld + c] * dsk[i * d + c];
                if (dq) {
                    real& g = dq[i * ld + c];
                    g = s * dsk[i * d + c] + (beta == 0 ? real(0) : g);  // beta 0: g may be garbage
                }
            }
        scale_parts[t] = part;
    }
}
// [/hide:attention-backward]

}  // namespace patchgrad
