// attention_backward.cpp — the gradients of one attention head, written by hand (chapter 7's
// exercise attention-backward); the layer itself never calls this: autograd chains its ops.
#include "patchgrad/layers/attention_backward.h"

#include <cmath>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

// Backward through O = A v, A = softmax(S), S = q k^T / sqrt(d), one step at a time.
// [hide:attention-backward]
//   dv = A^T dO                          (O = A v: the matmul rule)
//   dA = dO v^T
//   dS = A * (dA - rowsum(dA * A))       (softmax's vector-Jacobian product, per row)
//   dq = dS k / sqrt(d),  dk = dS^T q / sqrt(d)
// [/hide:attention-backward]
AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& d_out) {
    check(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim() && d_out.dim() == q.dim(),
          "attention_backward: expected q [..., N, d], k [..., M, d], v [..., M, e] and dO [..., N, e], got ",
          q.shape(), ", ", k.shape(), ", ", v.shape(), ", ", d_out.shape());
    NoGradGuard no_grad;  // plain arithmetic on values: the gradients are written by hand
    AttentionGradients g;
    // [exercise:attention-backward]
    const real scale = real(1) / std::sqrt(static_cast<real>(q.shape().back()));
    const Tensor a = softmax(matmul(q, transpose(k, -2, -1)) * scale, -1);  // A [..., N, M], recomputed
    g.dv = matmul(transpose(a, -2, -1), d_out);                             // [..., M, e]
    const Tensor da = matmul(d_out, transpose(v, -2, -1));                  // [..., N, M]
    const Tensor ds = a * (da - sum(da * a, -1, true));                     // [..., N, M]
    g.dq = matmul(ds, k) * scale;                                           // [..., N, d]
    g.dk = matmul(transpose(ds, -2, -1), q) * scale;                        // [..., M, d]
    // [/exercise:attention-backward]
    return g;
}

}  // namespace patchgrad
