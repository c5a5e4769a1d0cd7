// attention.cpp — scaled dot-product attention as one op, head by head, reading q, k and v
// where the qkv projection wrote them: what MultiHeadSelfAttention's step-by-step forward
// (layers/attention.cpp, chapter 7) computes, without its copies (like PyTorch's
// F.scaled_dot_product_attention, which timm's Attention calls when fused_attn is on).
//
// The step-by-step version permutes qkv [B, N, 3, heads, d] into [3, B, heads, N, d] (a copy),
// runs each product over all B * heads matrices before the next, so that the [B, heads, N, N]
// scores and their gradients (8.5 MB per layer for cifar-tiny at batch 128) go out to memory and
// come back between passes, and permutes the result back (another copy). Here each (batch,
// head) pair runs start to end on one thread (autograd/cpu/rows/attention_heads.h): gemm
// reads q, k and v in place through their leading dimension 3D, writes the head's output
// straight into its columns of [B, N, D], and its N x N block of scores stays in cache from
// the product to the softmax to the next product. The same in backward, where dA and dS never
// leave a per-thread scratch buffer. Where the heads run on AMX's tiles, A itself is not kept:
// the backward computes it again (attention_heads_recompute).
#include <cmath>
#include <limits>
#include <vector>

#include "patchgrad/autograd/cpu/rows/attention_heads.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/ops.h"

namespace patchgrad {

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
    const int64_t B = qkv.size(0), N = qkv.size(1), D = qkv.size(2) / 3, d = D / heads;
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
    const AttentionHeads x{qkv.data(),
                           heads,
                           N,
                           D,
                           learned ? head_scale.data() : nullptr,
                           fixed_scale,
                           key_bias.defined() ? key_bias.data() : nullptr};
    // A, kept for backward; not stored where the kernel computes it again in the backward
    // (attention_heads_recompute), unless the caller asks for it.
    const bool recompute = !attention && attention_heads_recompute(x);
    Tensor a = recompute ? Tensor() : Tensor::empty({B, heads, N, N});
    real* a_data = recompute ? nullptr : a.data();
    Tensor out = Tensor::empty({B, N, D});
    const int64_t grain = grain_for_multiply_adds(2 * N * N * d);  // two products per head
    parallel_for(B * heads, grain,
                 [&](int64_t t0, int64_t t1) { attention_heads_forward(x, t0, t1, a_data, out.data()); });
    if (attention) *attention = a.detach();  // a copy: backward's A stays as it is

    // [hide:attention-backward]
    record(out, op, {qkv, head_scale}, [qkv, head_scale, key_bias, a, x, B, heads, grain](Tensor& o) mutable {
        // (x points into qkv, head_scale and key_bias, which the closure keeps alive.)
        const bool want_scale = x.scales && head_scale.requires_grad();
        const GradOverwrite g = grad_for_overwrite_if_wanted(qkv);
        std::vector<real> scale_parts(want_scale ? B * heads : 0);  // <q, dS k> per (b, h)
        const real* dout = o.grad_data();
        parallel_for(B * heads, grain, [&](int64_t t0, int64_t t1) {
            attention_heads_backward(x, t0, t1, a.defined() ? a.data() : nullptr, dout, g.data, g.beta,
                                     want_scale ? scale_parts.data() : nullptr);
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
