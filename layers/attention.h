// attention.h — multi-head self-attention (MSA), the "MSA" of the ViT paper's eq. (2).
//
//   qkv = x W_qkv + b_qkv                      one fused projection D -> 3D (ViT from scratch §2-5-1)
//   q, k, v = split into `heads` heads of head_dim = D / heads
//   A = softmax(q k^T / sqrt(head_dim))        [B, heads, N, N], each row sums to 1
//   out = concat_heads(A v) W_proj + b_proj
//
// Children are named like timm's Attention ("qkv", "attn_drop", "proj", "proj_drop"), so
// the parameters are blocks.N.attn.qkv.weight [3D, D] etc.
//
// Locality Self-Attention (LSA; Lee, Lee and Song 2021, "Vision Transformer for Small-Size
// Datasets"), when constructed with locality = true, changes the scores in two ways:
//   A = softmax(q k^T * scale_h + M)    scale [heads], learned, head_dim^-1/2 at the start
//                                       M: -inf on the diagonal, 0 elsewhere
// A learned temperature per head lets a head sharpen its softmax beyond what 1/sqrt(head_dim)
// allows, and masking the diagonal stops a token from spending its attention on itself (its
// own q k is usually its largest score), so every head looks at other tokens. It adds `heads`
// parameters, named "scale" (blocks.N.attn.scale), like the paper's code.
#pragma once

#include <memory>
#include <vector>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/dropout.h"
#include "patchgrad/layers/layer_norm.h"
#include "patchgrad/layers/linear.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

class MultiHeadSelfAttention : public Module {
public:
    // Throws if dim is not divisible by heads.
    MultiHeadSelfAttention(int64_t dim, int64_t heads, Rng& init, std::shared_ptr<Rng> dropout_rng,
                           bool qkv_bias = true, real attn_dropout = 0, real proj_dropout = 0, bool locality = false);
    std::string type_name() const override { return "MultiHeadSelfAttention"; }

    // [snippet:msa-forward-declaration]
    // x [B, N, D] -> [B, N, D]. Token 0 is the class token. `patch_mask` is empty (attend
    // everywhere) or holds one entry per patch (N - 1 entries, true = visible), like the ViT
    // notebook's OptionalMask: no token attends to a hidden patch. The class token is always
    // visible, so every row of A keeps at least one position and the softmax is defined. With
    // LSA the class token's row also needs one visible patch (its own score is masked).
    Tensor forward(const Tensor& x, const std::vector<bool>& patch_mask = {});
    // [/snippet:msa-forward-declaration]

    // While on, forward keeps a detached copy of A (before attention dropout).
    void record_attention(bool on);
    // A [B, heads, N, N] of the last forward while recording; undefined before that.
    Tensor attention() const { return attention_; }

    std::shared_ptr<Linear> qkv;  // D -> 3D
    std::shared_ptr<Dropout> attn_drop;
    std::shared_ptr<Linear> proj;  // D -> D
    std::shared_ptr<Dropout> proj_drop;
    Tensor scale;  // LSA's temperature per head [heads]; undefined without LSA
    int64_t dim, heads, head_dim;
    // forward runs scaled_dot_product_attention (autograd/ops.h), the same values computed
    // without the step-by-step version's copies, unless this is false or attention dropout is
    // active (like timm's Attention.fused_attn). Chapter 7's tests run both ways.
    bool fused = true;

    // The two ways forward computes the same y: the paper's steps, one op at a time (the
    // lesson, chapter 7's exercise), and one fused op (the speed, chapter 12).
    Tensor forward_step_by_step(const Tensor& x, const std::vector<bool>& patch_mask = {});
    Tensor forward_fused(const Tensor& x, const std::vector<bool>& patch_mask = {});
    // residual + forward(x), or forward(norm(x)) with a norm: where forward takes the fused op
    // and proj_drop is inactive, proj adds the residual as it writes its rows (linear's
    // residual) and qkv computes the norm's rows as it reads them (linear's norm), the same bits
    // with no passes of their own; otherwise one op after another. A block's skip connection
    // and its LayerNorm (vit_block.h).
    Tensor forward_plus(const Tensor& x, const Tensor& residual, const std::vector<bool>& patch_mask = {},
                        LayerNorm* norm = nullptr);

private:
    void check_input(const Tensor& x, const std::vector<bool>& patch_mask) const;
    // forward_fused up to the heads' concatenated output [B, N, D], before proj (of norm(x)
    // with a norm).
    Tensor heads_fused(const Tensor& x, const std::vector<bool>& patch_mask, LayerNorm* norm = nullptr);
    bool record_ = false;
    Tensor attention_;
};

}  // namespace patchgrad
