// mlp.cpp — a transformer block's MLP in one op: linear, GELU, linear. The same bits as
// linear(gelu(linear(x, W1, b1)), W2, b2), the three ops FeedForward's forward otherwise
// records (layers/feed_forward.cpp); what differs is the passes over memory.
#include <algorithm>
#include <memory>
#include <string>

#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/prefetch.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/ops/fused.h"

namespace patchgrad {

// x [..., D] -> [..., E], with the leading dimensions flattened into R rows:
//   h = x W1^T + b1 [R, F]      y = GELU(h) [R, F]      out = y W2^T + b2 (+ residual) [R, E]
// GELU runs on rows of h as gemm finishes them (gemm.h's rows_done), while they are in cache,
// instead of in a pass of its own over all of h. Where a backward may follow, the same pass
// writes GELU'(h) over h: the derivative takes erf (or tanh) from GELU's value, which computes
// it anyway, and h itself is needed for nothing else. The backward is linear's twice with
// GELU's between, fused the same way: the rows of dOut W2 are multiplied by GELU'(h) as soon
// as gemm has written them. A residual is added to out's rows the same way (linear.cpp), and
// takes dOut as its gradient.
// [hide:matmul-backward]
// [hide:gelu-backward]
//   dW2 = dOut^T y    db2 = sum of dOut's rows    dh = (dOut W2) * GELU'(h)
//   dW1 = dh^T x      db1 = sum of dh's rows      dx = dh W1
// [/hide:gelu-backward]
// [/hide:matmul-backward]
// GELU'(h) and y are kept for the backward (the three ops keep h and y).
Tensor mlp(const Tensor& x, const Tensor& fc1_weight, const Tensor& fc1_bias, const Tensor& fc2_weight,
           const Tensor& fc2_bias, GeluApproximation approximation, const Tensor& residual, const InputNorm& norm) {
    // [handout:matmul-backward] return mlp_through_ops(x, fc1_weight, fc1_bias, fc2_weight, fc2_bias, approximation, residual, norm);
    // [handout:gelu-backward] return mlp_through_ops(x, fc1_weight, fc1_bias, fc2_weight, fc2_bias, approximation, residual, norm);
    // [hide:matmul-backward]
    // [hide:gelu-backward]
    check(x.defined() && fc1_weight.defined() && fc2_weight.defined(),
          "mlp: the input and both weights must be defined (only the biases may be undefined)");
    const int64_t rows = check_linear_arguments("mlp: fc1", x.shape(), fc1_weight, fc1_bias);
    const int64_t in = fc1_weight.size(1), F = fc1_weight.size(0);
    Shape hidden_shape = x.shape();
    hidden_shape.back() = F;
    check_linear_arguments("mlp: fc2", hidden_shape, fc2_weight, fc2_bias);
    const int64_t E = fc2_weight.size(0);
    Tensor h = Tensor::empty({rows, F}), y = Tensor::empty({rows, F});
    real *hd = h.data(), *yd = y.data();
    bool backward_may_follow = false;  // (as record() below decides)
    for (const Tensor* t : {&x, &fc1_weight, &fc1_bias, &fc2_weight, &fc2_bias, &residual, &norm.weight, &norm.bias})
        backward_may_follow = backward_may_follow || (grad_enabled() && t->defined() && t->requires_grad());
    const GemmRowsDone gelu_rows = [=](int64_t i0, int64_t i1) {
        if (backward_may_follow)  // h's rows become GELU'(h)
            gelu_values_and_derivatives(hd + i0 * F, yd + i0 * F, hd + i0 * F, (i1 - i0) * F, approximation);
        else
            gelu_values(hd + i0 * F, yd + i0 * F, (i1 - i0) * F, approximation);
    };
    // A norm's rows are computed as the first product reads them (FusedLayerNorm, fused.h).
    const auto ln = norm.on ? std::make_shared<FusedLayerNorm>(x, norm) : nullptr;
    gemm(false, true, rows, F, in, 1, x.data(), in, fc1_weight.data(), in, 0, hd, F,
         fc1_bias.defined() ? fc1_bias.data() : nullptr, &gelu_rows, ln ? ln->forward_sources() : nullptr);
    Shape out_shape = x.shape();
    out_shape.back() = E;
    check_residual("mlp", residual, out_shape);
    Tensor out = Tensor::empty(out_shape);
    const GemmRowsDone add_residual = residual_rows(residual, out.data());
    gemm(false, true, rows, E, F, 1, yd, F, fc2_weight.data(), F, 0, out.data(), E,
         fc2_bias.defined() ? fc2_bias.data() : nullptr, add_residual ? &add_residual : nullptr);

    // (With a norm, x's gradient comes from the norm's backward, after the residual's.)
    const bool residual_first = ln ? residual_is_input(residual, {&fc1_weight, &fc1_bias, &fc2_weight, &fc2_bias})
                                   : residual_is_input(residual, {&x, &fc1_weight, &fc1_bias, &fc2_weight, &fc2_bias});
    record(out, "mlp", {x, fc1_weight, fc1_bias, fc2_weight, fc2_bias, residual, norm.weight, norm.bias},
           [x, fc1_weight, fc1_bias, fc2_weight, fc2_bias, residual, residual_first, h, y, rows, F,
            ln](Tensor& o) mutable {
               if (residual_first) pass_to_residual(residual, o, true);
               const bool wants_dx = ln ? ln->wants_dy() : x.requires_grad();
               const bool wants_dh =
                   wants_dx || fc1_weight.requires_grad() || (fc1_bias.defined() && fc1_bias.requires_grad());
               Tensor dh = wants_dh ? Tensor::empty({rows, F}) : Tensor();
               real* dhd = wants_dh ? dh.data() : nullptr;
               const real* derivative = h.data();  // GELU'(h), written over h by the forward
               const GemmRowsDone times_derivative = [=](int64_t i0, int64_t i1) {
                   // The next block of rows, which gemm's next call will want multiplied: from memory.
                   prefetch_lines(derivative + i1 * F, derivative + std::min(rows, 2 * i1 - i0) * F);
                   times_gelu_derivatives(derivative + i0 * F, dhd + i0 * F, (i1 - i0) * F);
               };
               linear_backward(y.data(), GradOverwrite{dhd, 0}, fc2_weight, fc2_bias, o.grad_data(), rows,
                               &times_derivative);
               if (!residual_first) pass_to_residual(residual, o, false);
               if (!wants_dh) return;
               if (!ln)
                   return linear_backward(x.data(), grad_for_overwrite_if_wanted(x), fc1_weight, fc1_bias, dhd, rows);
               ln->backward(linear_backward_through_norm(*ln, fc1_weight, fc1_bias, dhd, rows));
           });
    return out;
    // [/hide:gelu-backward]
    // [/hide:matmul-backward]
}

// The reference of mlp's tests, and mlp itself in a handout of exercise matmul-backward or
// gelu-backward: three ops, each recording its own backward.
Tensor mlp_through_ops(const Tensor& x, const Tensor& fc1_weight, const Tensor& fc1_bias, const Tensor& fc2_weight,
                       const Tensor& fc2_bias, GeluApproximation approximation, const Tensor& residual,
                       const InputNorm& norm) {
    const Tensor input = norm.on ? layer_norm(x, norm.weight, norm.bias, norm.eps) : x;
    const Tensor out = linear(gelu(linear(input, fc1_weight, fc1_bias), approximation), fc2_weight, fc2_bias);
    check_residual("mlp", residual, out.shape());
    return residual.defined() ? out + residual : out;
}

}  // namespace patchgrad
