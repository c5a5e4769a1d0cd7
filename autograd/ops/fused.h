// fused.h — pieces of linear, GELU and LayerNorm that the fused ops (linear.cpp, mlp.cpp) run
// on their own buffers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/ops.h"

namespace patchgrad {

// linear's checks of its arguments (linear.cpp), each message starting with `op` ("linear",
// "mlp: fc1"): weight [out, in] (defined), an input of shape [..., in], bias [out] or undefined.
// Returns the input's rows, the product of its leading dimensions.
int64_t check_linear_arguments(const char* op, const Shape& input, const Tensor& weight, const Tensor& bias);

// linear's backward (linear.cpp) from dOut [rows, out], x's data [rows, in] and weight [out, in]:
// dx = dOut W into dx (written or added as its beta says; skipped when dx.data is null, with
// `dx_rows_done` passed to gemm), and W's and b's gradients when they want them.
// With x_source, dW's x is computed as gemm reads it (gemm.h's sources; x still points to a
// matrix of its shape).
void linear_backward(const real* x, GradOverwrite dx, const Tensor& weight, const Tensor& bias, const real* dy,
                     int64_t rows, const GemmRowsDone* dx_rows_done = nullptr,
                     const GemmOperandSource* x_source = nullptr);

// A skip connection added by the product that ends a block's branch (linear's and mlp's
// residual, linear.cpp). check_residual: residual is undefined or has the output's shape, else
// an error naming `op` and both. residual_rows: gemm's rows_done adding residual's rows to out's
// as gemm finishes them (out + residual, the same bits as add); an empty function where
// residual is undefined. The residual's gradient is dOut, given in the order that the add of
// `op(...) + residual` would give it: a residual that is also one of the op's inputs
// (residual_is_input) takes a copy before the op's own backward adds to its gradient
// (pass_to_residual with copy = true); any other takes dOut's own buffer after the op's last
// read of it (copy = false).
void check_residual(const char* op, const Tensor& residual, const Shape& out_shape);
GemmRowsDone residual_rows(const Tensor& residual, real* out);
bool residual_is_input(const Tensor& residual, std::initializer_list<const Tensor*> inputs);
void pass_to_residual(const Tensor& residual, const Tensor& out, bool copy);

// A LayerNorm in front of an op's first product (InputNorm, ops.h; layer_norm.cpp): its output
// y [rows, D] is never stored. The product computes the blocks of y it reads from x instead:
// forward_sources() are gemm's sources for the forward (gemm.h), which keep each row's mean and
// 1 / sqrt(var + eps) as they go; saved_source(), from those, the backward's weight gradient's
// (dW = dOut^T y). Both give layer_norm's bits. backward: layer_norm's backward, from dy [rows,
// D], y's gradient (undefined: none, as where !wants_dy()), into the gradients of x, the norm's
// weight and its bias. Errors name layer_norm, as layer_norm's own do. Not copied: its sources
// point into it.
class FusedLayerNorm {
public:
    FusedLayerNorm(const Tensor& x, const InputNorm& norm);
    FusedLayerNorm(const FusedLayerNorm&) = delete;
    FusedLayerNorm& operator=(const FusedLayerNorm&) = delete;
    const Tensor& input() const { return x_; }
    const GemmSources* forward_sources() const { return &forward_sources_; }
    GemmOperandSource saved_source() const;
    bool wants_dy() const;
    void backward(const Tensor& dy) const;

private:
    Tensor x_, weight_, bias_;
    real eps_;
    int64_t rows_ = 0, D_ = 0;
    std::vector<real> mean_, rstd_;
    GemmOperandSource forward_source_;
    GemmSources forward_sources_{&forward_source_, nullptr};
};

// linear's backward (above) for a product whose input is a norm's output: dW from the norm's
// rows computed again, and dy = dOut W into a buffer that it returns for the norm's backward
// (undefined where the norm wants no gradient).
Tensor linear_backward_through_norm(const FusedLayerNorm& norm, const Tensor& weight, const Tensor& bias,
                                    const real* dout, int64_t rows);

// y[i] = GELU(x[i]) for i in [0, n), gelu's own loop (gelu.cpp).
void gelu_values(const real* x, real* y, int64_t n, GeluApproximation approximation);
// y[i] = GELU(x[i]) and d[i] = GELU'(x[i]) for i in [0, n), the same bits as gelu's forward and
// backward; d may be x itself, overwritten.
void gelu_values_and_derivatives(const real* x, real* y, real* d, int64_t n, GeluApproximation approximation);
// g[i] *= d[i] for i in [0, n), d from gelu_values_and_derivatives: gelu's backward for a
// gradient that is written, not added.
void times_gelu_derivatives(const real* d, real* g, int64_t n);

}  // namespace patchgrad
