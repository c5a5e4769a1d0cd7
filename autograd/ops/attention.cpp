// attention.cpp — scaled dot-product attention as one op, head by head, reading q, k and v
// where the qkv projection wrote them: what MultiHeadSelfAttention's step-by-step forward
// (layers/attention.cpp, chapter 7) computes, without its copies (like PyTorch's
// F.scaled_dot_product_attention, which timm's Attention calls when fused_attn is on).
//
// The step-by-step version permutes qkv [B, N, 3, heads, d] into [3, B, heads, N, d] (a copy),
// runs each product over all B * heads matrices before the next, so that the [B, heads, N, N]
// scores and their gradients (8.5 MB per layer for cifar-tiny at batch 128) go out to memory and
// come back between passes, and permutes the result back (another copy). Here each (batch,
// head) pair runs start to end on one thread: gemm reads q, k and v in place through their
// leading dimension 3D, writes the head's output straight into its columns of [B, N, D], and
// its N x N block of scores stays in cache from the product to the softmax to the next
// product. The same in backward, where dA and dS never leave a per-thread scratch buffer.
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/cpu/gemm.h"
#include "autograd/cpu/parallel.h"
#include "autograd/ops.h"
#include "softmax_rows.h"

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

}  // namespace

// Per (batch b, head h), q, k, v [N, d] being columns h*d .. h*d+d-1 of qkv's three thirds,
// s the head's scale and bias the key bias (plus -inf on the diagonal with a learned scale):
//   S = s q k^T + bias [N, N]       A = softmax(S) per row        O = A v [N, d]
// [hide:attention-backward]
// Backward, given dO (O's columns of dOut):
//   dA = dO v^T     dS = A * (dA - rowsum(dA * A))     dv = A^T dO
//   dq = s dS k     dk = s dS^T q                      ds = <q, dS k> (summed over the batch)
// (ds: S = s (q k^T) + bias, so dL/ds = sum_ij dS_ij (q k^T)_ij = sum_i q_i . (dS k)_i.)
// [/hide:attention-backward]
Tensor scaled_dot_product_attention(const Tensor& qkv, int64_t heads, const Tensor& key_bias, const Tensor& head_scale,
                                    Tensor* attention) {
    const char* op = "scaled_dot_product_attention";
    if (!qkv.defined()) fail(op, ": qkv is an undefined tensor");
    // [handout:attention-backward] check(!grad_enabled() || !(qkv.requires_grad() || (head_scale.defined() && head_scale.requires_grad())),
    // [handout:attention-backward]       op, ": records no gradient in this handout (it would give away exercise attention-backward)");
    check(qkv.dim() == 3, op, ": expected qkv of shape [B, N, 3 * D], got ", qkv.shape());
    check(heads > 0 && qkv.size(2) > 0 && qkv.size(2) % (3 * heads) == 0, op, ": qkv ", qkv.shape(),
          " does not split into q, k and v of ", heads,
          " heads each (its last size must be a positive multiple of 3 * ", heads, ")");
    const int64_t B = qkv.size(0), N = qkv.size(1), D = qkv.size(2) / 3, d = D / heads, ld = 3 * D;
    const bool learned = head_scale.defined();
    if (learned)
        check(head_scale.dim() == 1 && head_scale.size(0) == heads, op, ": head_scale ", head_scale.shape(),
              " must be [", heads, "], one scale per head");
    // Every row of S needs a finite entry, or its softmax is 0 / 0.
    int64_t visible = N;
    if (key_bias.defined()) {
        check(key_bias.dim() == 1 && key_bias.size(0) == N, op, ": key_bias ", key_bias.shape(), " must be [", N,
              "], one entry per token of qkv ", qkv.shape());
        check(!key_bias.requires_grad(), op, ": key_bias is a fixed mask and takes no gradient");
        visible = 0;
        for (int64_t j = 0; j < N; ++j) visible += std::isfinite(key_bias.data()[j]) ? 1 : 0;
    }
    check(N == 0 || visible >= (learned ? 2 : 1), op, ": every token must see ", learned ? "another" : "a",
          " token, but ", visible, " of the ", N, " keys are visible",
          learned ? " (a learned scale masks the diagonal)" : "");

    const real fixed_scale = static_cast<real>(1 / std::sqrt(double(d)));
    const real* bias = key_bias.defined() ? key_bias.data() : nullptr;
    Tensor a = Tensor::empty({B, heads, N, N});  // A, kept for backward
    Tensor out = Tensor::empty({B, N, D});
    const int64_t grain = grain_for_multiply_adds(2 * N * N * d);  // two products per head
    parallel_for(B * heads, grain, [&](int64_t t0, int64_t t1) {
        // [snippet:sdpa-forward-head]
        for (int64_t t = t0; t < t1; ++t) {
            const Head x = head_at(qkv.data(), t, heads, N, D);
            real* at = a.data() + t * N * N;
            if (t + 1 < t1) prefetch_forward(head_at(qkv.data(), t + 1, heads, N, D), at + N * N, out.data(), N, d, D);
            gemm(false, true, N, N, d, learned ? head_scale.data()[x.h] : fixed_scale, x.q, ld, x.k, ld, 0, at, N,
                 bias);
            if (learned)
                for (int64_t i = 0; i < N; ++i) at[i * N + i] = -std::numeric_limits<real>::infinity();
            softmax_rows(at, at, N, N);
            gemm(false, false, N, d, N, 1, at, N, x.v, ld, 0, out.data() + x.out, D);
        }
        // [/snippet:sdpa-forward-head]
    });
    if (attention) *attention = a.detach();  // a copy: backward's A stays as it is

    // [hide:attention-backward]
    record(out, op, {qkv, head_scale},
           [qkv, head_scale, a, heads, B, N, D, d, ld, learned, fixed_scale, grain](Tensor& o) mutable {
               const real* dout = o.grad_data();
               const bool want_qkv = qkv.requires_grad(), want_scale = learned && head_scale.requires_grad();
               const Tensor::GradOverwrite g = want_qkv ? qkv.grad_for_overwrite() : Tensor::GradOverwrite{nullptr, 0};
               std::vector<real> scale_parts(want_scale ? B * heads : 0);  // <q, dS k> per (b, h)
               parallel_for(B * heads, grain, [&](int64_t t0, int64_t t1) {
                   thread_local std::vector<real> scratch;
                   scratch.resize(static_cast<size_t>(2 * N * N + N * d));
                   real* da = scratch.data();
                   real* ds = da + N * N;
                   real* dsk = ds + N * N;  // dS k, unscaled
                   for (int64_t t = t0; t < t1; ++t) {
                       const Head x = head_at(qkv.data(), t, heads, N, D);
                       const real s = learned ? head_scale.data()[x.h] : fixed_scale;
                       const real *q = x.q, *k = x.k, *v = x.v;
                       const real* at = a.data() + t * N * N;
                       const real* dot = dout + x.out;
                       if (t + 1 < t1)
                           prefetch_backward(head_at(qkv.data(), t + 1, heads, N, D), at + N * N, dout,
                                             want_qkv ? g.data : nullptr, N, d, D);
                       gemm(false, true, N, N, d, 1, dot, D, v, ld, 0, da, N);  // dA = dO v^T
                       std::fill(ds, ds + N * N, real(0));
                       softmax_rows_backward(at, da, ds, N, N);  // dS
                       real* dq = want_qkv ? g.data + x.in : nullptr;
                       if (want_qkv) {
                           gemm(true, false, N, d, N, 1, at, N, dot, D, g.beta, dq + 2 * D, ld);  // dv = A^T dO
                           gemm(true, false, N, d, N, s, ds, N, q, ld, g.beta, dq + D, ld);       // dk = s dS^T q
                       }
                       if (!want_scale) {
                           if (want_qkv) gemm(false, false, N, d, N, s, ds, N, k, ld, g.beta, dq, ld);  // dq = s dS k
                           continue;
                       }
                       gemm(false, false, N, d, N, 1, ds, N, k, ld, 0, dsk, d);
                       real part = 0;
                       for (int64_t i = 0; i < N; ++i)
                           for (int64_t c = 0; c < d; ++c) {
                               part += q[i * ld + c] * dsk[i * d + c];
                               if (want_qkv) {
                                   real& x = dq[i * ld + c];
                                   x = s * dsk[i * d + c] + (g.beta == 0 ? real(0) : x);  // beta 0: x may be garbage
                               }
                           }
                       scale_parts[t] = part;
                   }
               });
               if (want_scale) {  // each head's parts added in batch order: the same for any thread count
                   real* dscale = head_scale.grad_data();
                   for (int64_t h = 0; h < heads; ++h)
                       for (int64_t b = 0; b < B; ++b) dscale[h] += scale_parts[b * heads + h];
               }
           });
    // [/hide:attention-backward]
    return out;
}

}  // namespace patchgrad
