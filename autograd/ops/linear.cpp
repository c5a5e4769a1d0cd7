// linear.cpp — the op under the Linear layer (layers/linear.cpp): y = x @ W^T + b in one gemm
// call, the bias added as the product is written, and its backward as two more gemm calls
// and a column sum. (A transformer block may pass its skip connection as `residual`, added to
// y's rows as gemm finishes them: chapter 12.)
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/ops/fused.h"

namespace patchgrad {

// linear: x [..., in] @ weight [out, in]^T + bias [out] -> y [..., out]
// [hide:matmul-backward]
//   with the leading dimensions flattened into R rows, x [R, in], dOut [R, out]:
//   dx = dOut @ W      dW = dOut^T @ x      db = sum over the R rows of dOut
// [/hide:matmul-backward]
int64_t check_linear_arguments(const char* op, const Shape& input, const Tensor& weight, const Tensor& bias) {
    check(weight.dim() == 2, op, ": weight must be [out, in], got ", weight.shape());
    const int64_t in = weight.size(1), out = weight.size(0);
    check(!input.empty() && input.back() == in, op, ": input ", input, " does not end in the ", in,
          " in-features of weight ", weight.shape());
    if (bias.defined())  // bias.shape() may only be asked for then
        check(bias.dim() == 1 && bias.size(0) == out, op, ": bias ", bias.shape(), " does not match weight ",
              weight.shape(), "; expected [", out, "]");
    return shape_numel(Shape(input.begin(), input.end() - 1));
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
              const InputNorm& norm) {
    if (!x.defined() || !weight.defined())
        throw std::invalid_argument(
            "linear: the input and the weight must be defined (only the bias may be undefined)");
    const int64_t rows = check_linear_arguments("linear", x.shape(), weight, bias);
    const int64_t in = weight.size(1), out = weight.size(0);
    Shape y_shape = x.shape();
    y_shape.back() = out;
    check_residual("linear", residual, y_shape);

    // [handout:matmul-backward] return linear_through_matmul(x, weight, bias, residual, norm);  // backward: your matmul's
    // [hide:matmul-backward]
    Tensor y = Tensor::empty(y_shape);

    // As in torch.addmm, gemm adds the bias to every row while it writes y (and the residual
    // to each block of rows once written, while they are in cache). A norm's rows are computed
    // as gemm reads them (FusedLayerNorm, fused.h).
    const GemmRowsDone add_residual = residual_rows(residual, y.data());
    const auto ln = norm.on ? std::make_shared<FusedLayerNorm>(x, norm) : nullptr;
    gemm(false, true, rows, out, in, 1, x.data(), in, weight.data(), in, 0, y.data(), out,
         bias.defined() ? bias.data() : nullptr, add_residual ? &add_residual : nullptr,
         ln ? ln->forward_sources() : nullptr);

    // (With a norm, x's gradient comes from the norm's backward, after the residual's.)
    const bool residual_first =
        ln ? residual_is_input(residual, {&weight, &bias}) : residual_is_input(residual, {&x, &weight, &bias});
    record(y, "linear", {x, weight, bias, residual, norm.weight, norm.bias},
           [x, weight, bias, residual, rows, residual_first, ln](Tensor& o) mutable {
               if (residual_first) pass_to_residual(residual, o, true);
               if (!ln) {
                   linear_backward(x.data(), grad_for_overwrite_if_wanted(x), weight, bias, o.grad_data(), rows);
                   if (!residual_first) pass_to_residual(residual, o, false);
                   return;
               }
               const Tensor dy = linear_backward_through_norm(*ln, weight, bias, o.grad_data(), rows);
               if (!residual_first) pass_to_residual(residual, o, false);
               ln->backward(dy);
           });
    return y;
    // [/hide:matmul-backward]
}

void check_residual(const char* op, const Tensor& residual, const Shape& out_shape) {
    if (residual.defined())
        check(residual.shape() == out_shape, op, ": residual ", residual.shape(), " must have the output's shape ",
              out_shape);
}

// [hide:matmul-backward]
// A skip connection: out's rows [i0, i1) += residual's.
GemmRowsDone residual_rows(const Tensor& residual, real* out) {
    if (!residual.defined()) return {};
    const real* r = residual.data();
    const int64_t cols = residual.size(-1);
    return [=](int64_t i0, int64_t i1) {
        for (int64_t i = i0 * cols; i < i1 * cols; ++i) out[i] = out[i] + r[i];
    };
}

bool residual_is_input(const Tensor& residual, std::initializer_list<const Tensor*> inputs) {
    for (const Tensor* t : inputs)
        if (residual.defined() && t->defined() && residual.impl_ptr() == t->impl_ptr()) return true;
    return false;
}

void pass_to_residual(const Tensor& residual, const Tensor& out, bool copy) {
    if (!residual.defined() || !residual.requires_grad()) return;
    if (copy)
        add_to_grad(residual, out.grad_data());
    else
        add_grad_from(residual, out);
}
// [/hide:matmul-backward]

// [hide:matmul-backward]
namespace {
// acc[j] += rows [r0, r1) of dy [rows, out] in column j, row after row: a strip of 64 columns at a
// time, whose sums stay close (registers, L1) down the rows. Compiled for each instruction-set
// level (cpu_isa.h), as layer_norm's loops are.
PATCHGRAD_ALWAYS_INLINE void add_rows_loop(const real* dy, int64_t out, int64_t r0, int64_t r1, real* acc) {
    constexpr int64_t kColumns = 64;
    for (int64_t j0 = 0; j0 < out; j0 += kColumns) {
        const int64_t n = std::min(kColumns, out - j0);
        real sums[kColumns];
        for (int64_t j = 0; j < n; ++j) sums[j] = acc[j0 + j];
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t j = 0; j < n; ++j) sums[j] += dy[r * out + j0 + j];
        for (int64_t j = 0; j < n; ++j) acc[j0 + j] = sums[j];
    }
}
PATCHGRAD_MULTIVERSION(add_rows, (const real* dy, int64_t out, int64_t r0, int64_t r1, real* acc),
                       (dy, out, r0, r1, acc))
}  // namespace

// The first gradient to reach x or W is written, later ones are added (grad_for_overwrite's beta).
void linear_backward(const real* x, GradOverwrite dx, const Tensor& weight, const Tensor& bias, const real* dy,
                     int64_t rows, const GemmRowsDone* dx_rows_done, const GemmOperandSource* x_source) {
    const int64_t in = weight.size(1), out = weight.size(0);
    // db's column sums of dOut, in sum_rows's blocks; taken as the product dx = dOut W finishes
    // each block of rows, while those rows of dOut are still in cache (RowSums, parallel.h).
    const bool wants_db = bias.defined() && bias.requires_grad();
    RowSums db_sums(rows, wants_db ? out : 0,
                    [=](int64_t r0, int64_t r1, real* acc) { add_rows(dy, out, r0, r1, acc); });
    if (dx.data) {
        const GemmRowsDone rows_done = [&](int64_t r0, int64_t r1) {
            db_sums.take(r0, r1);
            if (dx_rows_done) (*dx_rows_done)(r0, r1);
        };
        // (Only if something wants the rows: after BLAS, gemm visits them all in a pass of their own.)
        gemm(false, false, rows, in, out, 1, dy, out, weight.data(), in, dx.beta, dx.data, in, nullptr,
             wants_db || dx_rows_done ? &rows_done : nullptr);
    }
    if (weight.requires_grad()) {
        const GradOverwrite dw = grad_for_overwrite(weight);
        const GemmSources sources{nullptr, x_source};
        gemm(true, false, out, in, rows, 1, dy, out, x, in, dw.beta, dw.data, in, nullptr, nullptr,
             x_source ? &sources : nullptr);
    }
    if (wants_db) {
        const std::vector<real> sum = db_sums.total();
        real* db = bias.grad_data();
        for (int64_t j = 0; j < out; ++j) db[j] += sum[j];
    }
}

Tensor linear_backward_through_norm(const FusedLayerNorm& norm, const Tensor& weight, const Tensor& bias,
                                    const real* dout, int64_t rows) {
    Tensor dy = norm.wants_dy() ? Tensor::empty({rows, weight.size(1)}) : Tensor();
    const GemmOperandSource normalized = norm.saved_source();
    linear_backward(norm.input().data(), GradOverwrite{dy.defined() ? dy.data() : nullptr, 0}, weight, bias, dout, rows,
                    nullptr, &normalized);
    return dy;
}
// [/hide:matmul-backward]

// The same y as matmul_transposed and a broadcast add, each recording its own backward: the
// reference of linear's tests, and linear itself in a handout of exercise matmul-backward.
Tensor linear_through_matmul(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                             const InputNorm& norm) {
    const Tensor input = norm.on ? layer_norm(x, norm.weight, norm.bias, norm.eps) : x;
    const Tensor x2 = reshape(input, {shape_numel(input.shape()) / input.size(-1), input.size(-1)});  // [R, in]
    Tensor y = matmul_transposed(x2, weight);                                                         // [R, out]
    if (bias.defined()) y = y + bias;
    Shape y_shape = input.shape();
    y_shape.back() = weight.size(0);
    check_residual("linear", residual, y_shape);
    return residual.defined() ? reshape(y, y_shape) + residual : reshape(y, y_shape);
}

}  // namespace patchgrad
