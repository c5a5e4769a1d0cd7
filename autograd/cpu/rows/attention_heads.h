// attention_heads.h — scaled dot-product attention one (image, head) pair at a time, for
// autograd/ops/attention.cpp: the kernel that keeps a head's N x N scores in cache from the
// first product through the softmax to the second, and in backward its dA and dS.
#pragma once

#include <cstdint>

#include "patchgrad/autograd/real.h"

namespace patchgrad {

// One call's inputs: qkv [B, N, 3 * D] (q, k, v of head h are columns h*d .. h*d+d-1 of its
// three thirds, rows 3D apart), the head's scale (scales[h], or fixed_scale when scales is
// null, which also leaves the diagonal unmasked) and the key bias [N] or null.
struct AttentionHeads {
    const real* qkv;
    int64_t heads, N, D;
    const real* scales;
    real fixed_scale;
    const real* bias;
};

// Pairs t in [t0, t1) (t = b * heads + h): A [t] = softmax(S) into a [B * heads, N, N], and
// O = A v into the head's columns of out [B, N, D]. Where attention_heads_recompute(x), a may
// be null: A is then not stored, and the backward, given a null A too, computes it again.
void attention_heads_forward(const AttentionHeads& x, int64_t t0, int64_t t1, real* a, real* out);

// Whether the heads run where computing A again in the backward is cheaper than storing it and
// reading it back: on AMX's tiles (attention_heads_amx.h) under the bf16 precision, whose q k^T
// is a few tile instructions while A is 17 KB a head of cifar-tiny to write and read again.
bool attention_heads_recompute(const AttentionHeads& x);

// [hide:attention-backward]
// Their backward, given A (or null, as the forward was given) and dOut [B, N, D]: dq, dk, dv
// into dqkv (gemm's beta: 0 writes, 1 adds; dqkv null when qkv takes no gradient) and, with
// learned scales, <q, dS k> per pair into scale_parts[t].
void attention_heads_backward(const AttentionHeads& x, int64_t t0, int64_t t1, const real* a, const real* dout,
                              real* dqkv, real beta, real* scale_parts);
// [/hide:attention-backward]

}  // namespace patchgrad
