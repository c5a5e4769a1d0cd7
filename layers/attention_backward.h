// attention_backward.h — one attention head's gradients, derived by hand.
#pragma once

#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

// The gradients of single-head scaled dot-product attention, derived by hand (chapter 7's
// exercise attention-backward). Forward, for q [..., N, d], k [..., M, d], v [..., M, e]:
//   S = q k^T / sqrt(d) [..., N, M],  A = softmax(S) along M,  O = A v [..., N, e]
// Given dO = dL/dO [..., N, e], returns dL/dq, dL/dk, dL/dv (shapes of q, k, v), computed
// without autograd: nothing is recorded, and the inputs' .grad are left alone.
struct AttentionGradients {
    Tensor dq, dk, dv;
};
AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& d_out);

}  // namespace patchgrad
