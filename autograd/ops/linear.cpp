// linear.cpp — the op under the Linear layer (layers/linear.cpp): y = x @ W^T + b in one gemm
// call, the bias added as the product is written, and its backward as two more gemm calls
// and a column sum.
#include <stdexcept>
#include <string>

#include "autograd/cpu/gemm.h"
#include "autograd/cpu/parallel.h"
#include "autograd/ops.h"

namespace patchgrad {

// linear: x [..., in] @ weight [out, in]^T + bias [out] -> y [..., out]
//   with the leading dimensions flattened into R rows, x [R, in], dOut [R, out]:
//   dx = dOut @ W      dW = dOut^T @ x      db = sum over the R rows of dOut
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    if (!x.defined() || !weight.defined())
        throw std::invalid_argument(
            "linear: the input and the weight must be defined (only the bias may be undefined)");
    if (weight.dim() != 2)
        throw std::invalid_argument("linear: weight must be [out, in], got " + shape_str(weight.shape()));
    const int64_t in = weight.size(1), out = weight.size(0);
    if (x.dim() < 1 || x.size(-1) != in)
        throw std::invalid_argument("linear: input " + shape_str(x.shape()) + " does not end in the " +
                                    std::to_string(in) + " in-features of weight " + shape_str(weight.shape()));
    if (bias.defined() && (bias.dim() != 1 || bias.size(0) != out))
        throw std::invalid_argument("linear: bias " + shape_str(bias.shape()) + " does not match weight " +
                                    shape_str(weight.shape()) + "; expected [" + std::to_string(out) + "]");

    const int64_t rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
    Shape y_shape = x.shape();
    y_shape.back() = out;
    Tensor y = Tensor::empty(y_shape);

    // As in torch.addmm, gemm adds the bias to every row while it writes y.
    gemm(false, true, rows, out, in, 1, x.data(), in, weight.data(), in, 0, y.data(), out,
         bias.defined() ? bias.data() : nullptr);

    // The first gradient to reach x or W is written, later ones are added (grad_target's beta).
    record(y, "linear", {x, weight, bias}, [x, weight, bias, rows, in, out](Tensor& o) mutable {
        const real* dy = o.grad_data();
        if (x.requires_grad()) {
            const Tensor::GradTarget dx = x.grad_target();
            gemm(false, false, rows, in, out, 1, dy, out, weight.data(), in, dx.beta, dx.data, in);
        }
        if (weight.requires_grad()) {
            const Tensor::GradTarget dw = weight.grad_target();
            gemm(true, false, out, in, rows, 1, dy, out, x.data(), in, dw.beta, dw.data, in);
        }
        if (bias.defined() && bias.requires_grad()) {
            // Threads take columns, each summed over the rows in row order as on one thread.
            real* db = bias.grad_data();
            parallel_for(out, 16, [=](int64_t j0, int64_t j1) {
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t j = j0; j < j1; ++j) db[j] += dy[r * out + j];
            });
        }
    });
    return y;
}

}  // namespace patchgrad
