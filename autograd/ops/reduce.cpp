// reduce.cpp — sum, mean and max, over the whole tensor or along one axis.
//
// A reduction along an axis sees the input as [outer, n, inner] (n is the reduced axis,
// outer and inner the products of the axes before and after it: view_axis, strided.h) and the
// output as [outer, inner], so whatever the axis the loops run over contiguous rows of inner elements.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/strided.h"

namespace patchgrad {

namespace {

Tensor sum_axis(const char* op, const Tensor& a, int64_t axis, bool keepdim, bool mean);

// scale * (sum of all elements) -> []
// [hide:sum-axis-backward]
//   dA = dOut * scale, everywhere
// [/hide:sum-axis-backward]
// The running sum is a double: in float32 a sum of a million elements would keep only
// about three correct digits.
// [snippet:sum-all]
Tensor sum_all(const char* op, const Tensor& a, real scale) {
    // [handout:sum-axis-backward] return sum_axis(op, reshape(a, {a.numel()}), 0, false, scale != 1);  // your backward
    // [hide:sum-axis-backward]
    const int64_t n = a.numel();
    const real* x = a.data();
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i];
    Tensor out = Tensor::scalar(static_cast<real>(s * scale));
    record(out, op, {a}, [a, n, scale](Tensor& o) mutable {
        const real g = o.grad_data()[0] * scale;
        real* ga = a.grad_data();
        for (int64_t i = 0; i < n; ++i) ga[i] += g;
    });
    return out;
    // [/hide:sum-axis-backward]
}
// [/snippet:sum-all]

// [outer, n, inner] -> scale * (sum over n) [outer, inner]
// [hide:sum-axis-backward]
//   dA[o, k, i] = dOut[o, i] * scale
// [/hide:sum-axis-backward]
Tensor sum_axis(const char* op, const Tensor& a, int64_t axis, bool keepdim, bool mean) {
    const AxisView v = view_axis(a.shape(), axis, keepdim, op);
    const real scale = mean ? real(1) / static_cast<real>(v.n) : real(1);
    Tensor out = Tensor::zeros(v.out_shape);
    const real* x = a.data();
    real* y = out.data();
    // [exercise:sum-axis-forward]
    for (int64_t o = 0; o < v.outer; ++o) {
        const real* src = x + o * v.n * v.inner;
        real* dst = y + o * v.inner;
        if (v.inner == 1) {
            real s = 0;
            for (int64_t k = 0; k < v.n; ++k) s += src[k];
            dst[0] = s * scale;
        } else {
            for (int64_t k = 0; k < v.n; ++k)
                for (int64_t i = 0; i < v.inner; ++i) dst[i] += src[k * v.inner + i];
            for (int64_t i = 0; i < v.inner; ++i) dst[i] *= scale;
        }
    }
    // [/exercise:sum-axis-forward]
    record(out, op, {a}, [a, v, scale](Tensor& o) mutable {
        // [exercise:sum-axis-backward]
        const real* dout = o.grad_data();
        real* ga = a.grad_data();
        for (int64_t r = 0; r < v.outer; ++r)
            for (int64_t k = 0; k < v.n; ++k) {
                real* dst = ga + (r * v.n + k) * v.inner;
                const real* g = dout + r * v.inner;
                for (int64_t i = 0; i < v.inner; ++i) dst[i] += g[i] * scale;
            }
        // [/exercise:sum-axis-backward]
    });
    return out;
}

// Whether x replaces the running maximum `best`: when it is larger, or is the first nan, so
// that like torch.max a nan anywhere makes the result nan. Ties keep the earlier position.
bool beats(real x, real best) { return x > best || (std::isnan(x) && !std::isnan(best)); }

}  // namespace

Tensor sum(const Tensor& a) { return sum_all("sum", a, 1); }

Tensor sum(const Tensor& a, int64_t axis, bool keepdim) { return sum_axis("sum", a, axis, keepdim, false); }

// The mean of an empty tensor is 0/0 = nan, as in PyTorch.
Tensor mean(const Tensor& a) { return sum_all("mean", a, real(1) / static_cast<real>(a.numel())); }

Tensor mean(const Tensor& a, int64_t axis, bool keepdim) { return sum_axis("mean", a, axis, keepdim, true); }

// max of all elements -> []
//   dA[argmax] = dOut, 0 elsewhere; argmax is the first position holding the maximum
Tensor max(const Tensor& a) {
    const int64_t n = a.numel();
    check(n > 0, "max: cannot take the max of an empty tensor of shape ", a.shape());
    const real* x = a.data();
    int64_t argmax = 0;
    for (int64_t i = 1; i < n; ++i)
        if (beats(x[i], x[argmax])) argmax = i;
    Tensor out = Tensor::scalar(x[argmax]);
    record(out, "max", {a}, [a, argmax](Tensor& o) mutable { a.grad_data()[argmax] += o.grad_data()[0]; });
    return out;
}

// a [..., n, ...] -> max along `axis`: the axis moved last (permute's copy, whose backward takes
// the gradient back), so that every maximum is one over a contiguous row of n elements.
//   dRow[argmax] = dOut, 0 elsewhere; argmax is the first position holding the row's maximum
Tensor max(const Tensor& a, int64_t axis, bool keepdim) {
    const int64_t ax = normalize_axis(axis, a.shape(), "max");
    const int64_t n = a.size(ax);
    check(n > 0, "max: cannot reduce axis ", axis, " of size 0 of a tensor of shape ", a.shape());
    std::vector<int64_t> order;
    for (int64_t k = 0; k < a.dim(); ++k)
        if (k != ax) order.push_back(k);
    order.push_back(ax);
    const Tensor rows = ax + 1 == a.dim() ? a : permute(a, order);  // [..., n]
    Shape out_shape = a.shape();
    if (keepdim)
        out_shape[ax] = 1;
    else
        out_shape.erase(out_shape.begin() + ax);
    Tensor out = Tensor::empty(out_shape);
    const int64_t count = out.numel();
    std::vector<int64_t> argmax(count, 0);
    const real* x = rows.data();
    real* y = out.data();
    for (int64_t r = 0; r < count; ++r) {
        const real* row = x + r * n;
        for (int64_t k = 1; k < n; ++k)
            if (beats(row[k], row[argmax[r]])) argmax[r] = k;
        y[r] = row[argmax[r]];
    }
    record(out, "max", {rows}, [rows, n, argmax = std::move(argmax)](Tensor& o) mutable {
        const real* dout = o.grad_data();
        real* grow = rows.grad_data();
        for (size_t r = 0; r < argmax.size(); ++r) grow[r * n + argmax[r]] += dout[r];
    });
    return out;
}

}  // namespace patchgrad
