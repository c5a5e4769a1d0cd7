// elementwise.cpp — arithmetic with NumPy broadcasting, and the pointwise functions.
//
// Every binary op goes through one broadcasting helper, parametrised by the function
// f(x, y) and its partial derivatives df/dx(x, y, out) and df/dy(x, y, out) (add of two
// tensors of one shape, every residual connection, takes a shortcut: add_same_shape); every
// unary op through one loop parametrised by f(x) and df/dx(x, out). Adding an op is one line
// of maths, not another copy of the loops. How the helper walks the rows: broadcast.h.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "patchgrad/autograd/broadcast.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/ops.h"

namespace patchgrad {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    const size_t ndim = std::max(a.size(), b.size());
    Shape out(ndim);
    // [exercise:broadcast-shapes]
    for (size_t k = 0; k < ndim; ++k) {
        // Aligned at the right: axis k of the result is axis k - (ndim - size) of each input.
        const int64_t da = k + a.size() >= ndim ? a[k + a.size() - ndim] : 1;
        const int64_t db = k + b.size() >= ndim ? b[k + b.size() - ndim] : 1;
        if (da != db && da != 1 && db != 1)
            throw std::invalid_argument(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                                        " cannot be broadcast");
        out[k] = da == 1 ? db : da;
    }
    // [/exercise:broadcast-shapes]
    return out;
}

namespace {

// One row of the forward. SA, SB (0 or 1) are the operands' steps, fixed at compile time so
// that a stretched operand becomes a constant the loop can vectorise around.
template <int SA, int SB, class F>
void forward_row(int64_t n, const real* a, const real* b, real* out, F f) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[SA * i], b[SB * i]);
}

// One row of the backward into g, the gradient of the operand with step SG (0: stretched).
// [hide:broadcast-backward]
// g += dout * d. A stretched operand received the same value at every position of the row,
// so its gradient is the sum of the row's contributions.
// [/hide:broadcast-backward]
template <int SG, int SA, int SB, class D>
void backward_row(int64_t n, const real* a, const real* b, const real* out, const real* dout, real* g, D d) {
    // [exercise:broadcast-backward]
    if constexpr (SG == 1) {
        for (int64_t i = 0; i < n; ++i) g[i] += dout[i] * d(a[SA * i], b[SB * i], out[i]);
    } else {
        real s = 0;
        for (int64_t i = 0; i < n; ++i) s += dout[i] * d(a[SA * i], b[SB * i], out[i]);
        g[0] += s;
    }
    // [/exercise:broadcast-backward]
}

template <int SA, int SB, class Da, class Db>
void backward_rows(int64_t n, const real* a, const real* b, const real* out, const real* dout, real* ga, real* gb,
                   Da da, Db db) {
    if (ga) backward_row<SA, SA, SB>(n, a, b, out, dout, ga, da);
    if (gb) backward_row<SB, SA, SB>(n, a, b, out, dout, gb, db);
}

// out = f(a, b) with broadcasting; da and db are the partial derivatives of f
// [hide:broadcast-backward]
//   dA = sum over a's stretched axes of dOut * da(a, b, out)      (likewise dB with db)
// [/hide:broadcast-backward]
template <class F, class Da, class Db>
Tensor binary(const char* op, const Tensor& a, const Tensor& b, F f, Da da, Db db) {
    const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
    const Broadcast bc = plan_broadcast(a.shape(), b.shape(), shape);
    Tensor out = Tensor::empty(shape);
    {
        const real* pa = a.data();
        const real* pb = b.data();
        real* po = out.data();
        for_each_row(bc, RowSplit::Rows, [&](int64_t ia, int64_t ib, int64_t io, int64_t n) {
            if (bc.a_step && bc.b_step)
                forward_row<1, 1>(n, pa + ia, pb + ib, po + io, f);
            else if (bc.a_step)
                forward_row<1, 0>(n, pa + ia, pb + ib, po + io, f);
            else
                forward_row<0, 1>(n, pa + ia, pb + ib, po + io, f);
        });
    }
    // [snippet:binary-backward]
    record(out, op, {a, b}, [a, b, bc, da, db](Tensor& o) mutable {
        const real* pa = a.data();
        const real* pb = b.data();
        const real* po = o.data();
        const real* dout = o.grad_data();
        real* ga = a.requires_grad() ? a.grad_data() : nullptr;
        real* gb = b.requires_grad() ? b.grad_data() : nullptr;
        // Threads take rows when no gradient element sums several rows, columns when every
        // stretched gradient moves along the row (broadcast.h: RowSplit).
        const RowSplit split = gradient_split(bc, ga != nullptr, gb != nullptr);
        for_each_row(bc, split, [&](int64_t ia, int64_t ib, int64_t io, int64_t n) {
            real* ra = ga ? ga + ia : nullptr;
            real* rb = gb ? gb + ib : nullptr;
            if (bc.a_step && bc.b_step)
                backward_rows<1, 1>(n, pa + ia, pb + ib, po + io, dout + io, ra, rb, da, db);
            else if (bc.a_step)
                backward_rows<1, 0>(n, pa + ia, pb + ib, po + io, dout + io, ra, rb, da, db);
            else
                backward_rows<0, 1>(n, pa + ia, pb + ib, po + io, dout + io, ra, rb, da, db);
        });
    });
    // [/snippet:binary-backward]
    return out;
}

// out = f(a) elementwise
//   dA = dOut * d(a, out)
template <class F, class D>
Tensor unary(const char* op, const Tensor& a, F f, D d) {
    Tensor out = Tensor::empty(a.shape());
    const int64_t n = a.numel();
    {
        const real* x = a.data();
        real* y = out.data();
        for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
    }
    // [snippet:unary-backward]
    record(out, op, {a}, [a, n, d](Tensor& o) mutable {
        const real* x = a.data();
        const real* y = o.data();
        const real* dout = o.grad_data();
        real* ga = a.grad_data();
        for (int64_t i = 0; i < n; ++i) ga[i] += dout[i] * d(x[i], y[i]);
    });
    // [/snippet:unary-backward]
    return out;
}

// add for operands of one shape (every residual connection), the result binary would give:
// dOut passes to both inputs unchanged, so it is handed over instead of added into zero-filled
// gradients as binary's backward would (a fill per residual connection): b's gradient gets a
// copy (add_to_grad), a's takes dOut's own buffer when backward() is done with it
// (add_grad_from), saving a copy too.
Tensor add_same_shape(const Tensor& a, const Tensor& b) {
    Tensor out = Tensor::empty(a.shape());
    const real *x = a.data(), *y = b.data();
    real* z = out.data();
    parallel_for(out.numel(), kElementGrain, [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) z[i] = x[i] + y[i];
    });
    record(out, "add", {a, b}, [a, b](Tensor& o) {
        if (b.requires_grad()) add_to_grad(b, o.grad_data());
        if (a.requires_grad()) add_grad_from(a, o);  // last: it may take o's gradient
    });
    return out;
}

}  // namespace

// ---- binary ops ----------------------------------------------------------------------------

// [snippet:add-sub-mul]
// a + b:  dA = dOut, dB = dOut
Tensor add(const Tensor& a, const Tensor& b) {
    if (a.shape() == b.shape()) return add_same_shape(a, b);  // what the residual connections add
    return binary(
        "add", a, b, [](real x, real y) { return x + y; }, [](real, real, real) { return real(1); },
        [](real, real, real) { return real(1); });
}

// a - b:  dA = dOut, dB = -dOut
Tensor sub(const Tensor& a, const Tensor& b) {
    return binary(
        "sub", a, b, [](real x, real y) { return x - y; }, [](real, real, real) { return real(1); },
        [](real, real, real) { return real(-1); });
}

// a * b:  dA = dOut * b, dB = dOut * a
Tensor mul(const Tensor& a, const Tensor& b) {
    return binary(
        "mul", a, b, [](real x, real y) { return x * y; }, [](real, real y, real) { return y; },
        [](real x, real, real) { return x; });
}
// [/snippet:add-sub-mul]

// a / b:  dA = dOut / b, dB = -dOut * a / b^2 = -dOut * out / b
Tensor div(const Tensor& a, const Tensor& b) {
    return binary(
        "div", a, b, [](real x, real y) { return x / y; }, [](real, real y, real) { return 1 / y; },
        [](real, real y, real o) { return -o / y; });
}

// ---- unary ops -----------------------------------------------------------------------------

// -a:  dA = -dOut
Tensor neg(const Tensor& a) {
    return unary(
        "neg", a, [](real x) { return -x; }, [](real, real) { return real(-1); });
}

// a + s:  dA = dOut
Tensor add(const Tensor& a, real s) {
    return unary(
        "add", a, [s](real x) { return x + s; }, [](real, real) { return real(1); });
}

// a * s:  dA = dOut * s
Tensor mul(const Tensor& a, real s) {
    return unary(
        "mul", a, [s](real x) { return x * s; }, [s](real, real) { return s; });
}

// exp(a):  dA = dOut * exp(a) = dOut * out
Tensor exp(const Tensor& a) {
    return unary(
        "exp", a, [](real x) { return std::exp(x); }, [](real, real o) { return o; });
}

// log(a):  dA = dOut / a.  log(0) = -inf, log(a < 0) = nan, as in IEEE and PyTorch.
Tensor log(const Tensor& a) {
    return unary(
        "log", a, [](real x) { return std::log(x); }, [](real x, real) { return 1 / x; });
}

// sqrt(a):  dA = dOut / (2 sqrt(a)) = dOut * 0.5 / out.  sqrt(a < 0) = nan.
Tensor sqrt(const Tensor& a) {
    return unary(
        "sqrt", a, [](real x) { return std::sqrt(x); }, [](real, real o) { return real(0.5) / o; });
}

// a^p:  dA = dOut * p * a^(p-1). For p = 0 the gradient is 0 everywhere, also at a = 0
// where p * a^(p-1) would be 0 * inf = nan (PyTorch makes the same exception).
Tensor pow(const Tensor& a, real exponent) {
    const real p = exponent;
    return unary(
        "pow", a, [p](real x) { return std::pow(x, p); },
        [p](real x, real) { return p == 0 ? real(0) : p * std::pow(x, p - 1); });
}

// tanh(a):  dA = dOut * (1 - tanh(a)^2) = dOut * (1 - out^2)
Tensor tanh(const Tensor& a) {
    return unary(
        "tanh", a, [](real x) { return std::tanh(x); }, [](real, real o) { return 1 - o * o; });
}

// ---- broadcast_to --------------------------------------------------------------------------

// a -> shape, a stretched copy
// [hide:broadcast-backward]
//   dA = dOut summed over the stretched axes
// [/hide:broadcast-backward]
Tensor broadcast_to(const Tensor& a, const Shape& shape) {
    const Shape& in = a.shape();
    bool fits = in.size() <= shape.size();
    for (size_t k = 0; fits && k < in.size(); ++k) {
        const int64_t d = in[in.size() - 1 - k];
        fits = d == 1 || d == shape[shape.size() - 1 - k];
    }
    check(fits, "broadcast_to: a tensor of shape ", in, " cannot be broadcast to ", shape);
    // [handout:broadcast-backward] return a + Tensor::zeros(shape);  // the backward: yours, of add
    // [hide:broadcast-backward]
    // The target plays operand b of the plan: it moves along every axis, like the output.
    const Broadcast bc = plan_broadcast(in, shape, shape);
    Tensor out = Tensor::empty(shape);
    {
        const real* pa = a.data();
        real* po = out.data();
        for_each_row(bc, RowSplit::Rows, [&](int64_t ia, int64_t, int64_t io, int64_t n) {
            if (bc.a_step)
                std::copy(pa + ia, pa + ia + n, po + io);
            else
                std::fill(po + io, po + io + n, pa[ia]);
        });
    }
    // [snippet:broadcast-to-backward]
    record(out, "broadcast_to", {a}, [a, bc](Tensor& o) mutable {
        const real* dout = o.grad_data();
        real* ga = a.grad_data();
        for_each_row(bc, gradient_split(bc, true, false), [&](int64_t ia, int64_t, int64_t io, int64_t n) {
            if (bc.a_step) {
                for (int64_t i = 0; i < n; ++i) ga[ia + i] += dout[io + i];
            } else {
                real s = 0;
                for (int64_t i = 0; i < n; ++i) s += dout[io + i];
                ga[ia] += s;
            }
        });
    });
    // [/snippet:broadcast-to-backward]
    return out;
    // [/hide:broadcast-backward]
}

// ---- operators -------------------------------------------------------------------------------
// With a scalar on the left, or dividing by a scalar, the scalar becomes a [] tensor and the
// broadcasting op does the work: a / s is then a true division (not a * (1/s), which rounds
// differently) and s / a gets the derivative -s / a^2 of the div op.

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, real s) { return add(a, s); }
Tensor operator+(real s, const Tensor& a) { return add(a, s); }
Tensor operator-(const Tensor& a, real s) { return add(a, -s); }
Tensor operator-(real s, const Tensor& a) { return sub(Tensor::scalar(s), a); }
Tensor operator*(const Tensor& a, real s) { return mul(a, s); }
Tensor operator*(real s, const Tensor& a) { return mul(a, s); }
Tensor operator/(const Tensor& a, real s) { return div(a, Tensor::scalar(s)); }
Tensor operator/(real s, const Tensor& a) { return div(Tensor::scalar(s), a); }

}  // namespace patchgrad
