#include "patchgrad/layers/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

MultiHeadSelfAttention::MultiHeadSelfAttention(int64_t dim, int64_t heads, Rng& init, std::shared_ptr<Rng> dropout_rng,
                                               bool qkv_bias, real attn_dropout, real proj_dropout, bool locality)
    : dim(dim), heads(heads), head_dim(heads > 0 ? dim / heads : 0) {
    check(dim > 0 && heads > 0, "MultiHeadSelfAttention: dim and heads must be positive, got dim ", dim, " and heads ",
          heads);
    check(dim % heads == 0, "MultiHeadSelfAttention: dim ", dim, " is not divisible by heads ", heads);
    if (locality) scale = register_parameter("scale", Tensor::full({heads}, real(1 / std::sqrt(double(head_dim)))));
    qkv = register_module("qkv", std::make_shared<Linear>(dim, 3 * dim, init, qkv_bias));
    attn_drop = register_module("attn_drop", std::make_shared<Dropout>(attn_dropout, dropout_rng));
    proj = register_module("proj", std::make_shared<Linear>(dim, dim, init));
    proj_drop = register_module("proj_drop", std::make_shared<Dropout>(proj_dropout, dropout_rng));
}

void MultiHeadSelfAttention::record_attention(bool on) {
    record_ = on;
    attention_ = Tensor();
}

namespace {
// [N] added to every row of the scores: 0 for a visible key, -inf for a hidden patch, so
// exp(-inf - max) = 0 and a hidden patch gets exactly zero weight. The class token (key 0)
// is always visible, which keeps every row's maximum finite. Only keys are masked: a hidden
// patch's own row is only its own output, which no visible token reads (chapter 7 compares
// this with the ViT notebook's OptionalMask).
// [snippet:key-mask-bias]
Tensor key_mask_bias(const std::vector<bool>& patch_mask, int64_t N) {
    std::vector<real> bias(N, 0);
    for (int64_t j = 1; j < N; ++j)
        if (!patch_mask[j - 1]) bias[j] = -std::numeric_limits<real>::infinity();
    return Tensor::from_vector({N}, std::move(bias));
}
// [/snippet:key-mask-bias]

// LSA's M [N, N]: -inf on the diagonal, so no token attends to itself.
Tensor self_mask_bias(int64_t N) {
    std::vector<real> bias(N * N, 0);
    for (int64_t i = 0; i < N; ++i) bias[i * N + i] = -std::numeric_limits<real>::infinity();
    return Tensor::from_vector({N, N}, std::move(bias));
}
}  // namespace

// x [B, N, D] and patch_mask as forward takes them, or an error naming both.
void MultiHeadSelfAttention::check_input(const Tensor& x, const std::vector<bool>& patch_mask) const {
    check(x.dim() == 3 && x.size(2) == dim, "MultiHeadSelfAttention: expected x of shape [B, N, ", dim, "], got ",
          x.shape());
    const int64_t N = x.size(1);
    check(patch_mask.empty() || static_cast<int64_t>(patch_mask.size()) == N - 1,
          "MultiHeadSelfAttention: patch_mask has ", patch_mask.size(), " entries but x ", x.shape(), " has ", N - 1,
          " patches (N = ", N, " tokens, the first is the class token)");
    if (scale.defined())
        check(
            N >= 2 && (patch_mask.empty() || std::find(patch_mask.begin(), patch_mask.end(), true) != patch_mask.end()),
            "MultiHeadSelfAttention: with LSA every token must see another, but x ", x.shape(),
            N >= 2 ? " has every patch hidden" : " has one token");
}

Tensor MultiHeadSelfAttention::forward(const Tensor& x, const std::vector<bool>& patch_mask) {
    // [hide:attention-backward]
    // [hide:attention-forward]
    // The fused op computes what the steps compute; attention dropout needs A itself, so it
    // takes the steps. (A handout of either attention exercise always takes the steps.)
    if (fused && !attn_drop->active()) return forward_fused(x, patch_mask);
    // [/hide:attention-forward]
    // [/hide:attention-backward]
    return forward_step_by_step(x, patch_mask);
}

// The lesson: eqs. (5)-(6) of the paper one op at a time, each intermediate a tensor.
// Scaled dot-product attention, scaled by 1/sqrt(head_dim) BEFORE the softmax (paper eq. 6,
// A = softmax(q k^T / sqrt(D_h))). The entries of q k^T are sums of head_dim products, so
// with unit-variance q and k their variance is head_dim; dividing by sqrt(head_dim) brings
// it back to ~1 and keeps the softmax out of saturation, where it is nearly one-hot and
// its gradient vanishes. The scale is the per-head size D_h, not the model size D. (Visual
// Transformer in CV scales after the softmax, by sqrt(D): chapter 7 says why that is wrong,
// and tests/layers/test_attention.cpp, "[documents]", shows it numerically.)
Tensor MultiHeadSelfAttention::forward_step_by_step(const Tensor& x, const std::vector<bool>& patch_mask) {
    check_input(x, patch_mask);
    const int64_t B = x.size(0), N = x.size(1);
    // [exercise:attention-forward]
    // [B, N, 3D] -> [B, N, 3, heads, head_dim] -> [3, B, heads, N, head_dim], as in timm
    Tensor qkv_heads = permute(reshape(qkv->forward(x), {B, N, 3, heads, head_dim}), {2, 0, 3, 1, 4});
    Tensor q = select(qkv_heads, 0, 0), k = select(qkv_heads, 0, 1), v = select(qkv_heads, 0, 2);

    // [B, heads, N, N]: row i holds token i's scores against every key j. matmul_transposed
    // is matmul(q, transpose(k, 2, 3)) * scale without copying k^T or the scores.
    Tensor scores = scale.defined()  // LSA: each head's learned scale, and no token scores itself
                        ? matmul_transposed(q, k) * reshape(scale, {1, heads, 1, 1}) + self_mask_bias(N)
                        : matmul_transposed(q, k, static_cast<real>(1 / std::sqrt(double(head_dim))));
    if (!patch_mask.empty()) scores = scores + key_mask_bias(patch_mask, N);
    Tensor attn = softmax(scores, -1);
    if (record_) attention_ = attn.detach();

    // [B, heads, N, head_dim] -> [B, N, heads, head_dim] -> [B, N, D]: the heads concatenated
    Tensor out = reshape(permute(matmul(attn_drop->forward(attn), v), {0, 2, 1, 3}), {B, N, dim});
    return proj_drop->forward(proj->forward(out));
    // [/exercise:attention-forward]
}

// The speed: one op reads q, k and v where the qkv projection wrote them, so no permute
// copies anything and each head's scores stay in cache (chapter 12).
Tensor MultiHeadSelfAttention::forward_fused(const Tensor& x, const std::vector<bool>& patch_mask) {
    return proj_drop->forward(proj->forward(heads_fused(x, patch_mask)));
}

Tensor MultiHeadSelfAttention::heads_fused(const Tensor& x, const std::vector<bool>& patch_mask, LayerNorm* norm) {
    check_input(x, patch_mask);
    const Tensor mask = patch_mask.empty() ? Tensor() : key_mask_bias(patch_mask, x.size(1));
    const Tensor q_k_v = norm ? linear(x, qkv->weight, qkv->bias, Tensor(), norm->in_front()) : qkv->forward(x);
    return scaled_dot_product_attention(q_k_v, heads, mask, scale, record_ ? &attention_ : nullptr);
}

Tensor MultiHeadSelfAttention::forward_plus(const Tensor& x, const Tensor& residual,
                                            const std::vector<bool>& patch_mask, LayerNorm* norm) {
    // [hide:attention-backward]
    // [hide:attention-forward]
    if (fused && !attn_drop->active() && !proj_drop->active())
        return linear(heads_fused(x, patch_mask, norm), proj->weight, proj->bias, residual);
    // [/hide:attention-forward]
    // [/hide:attention-backward]
    return forward(norm ? norm->forward(x) : x, patch_mask) + residual;
}

}  // namespace patchgrad
