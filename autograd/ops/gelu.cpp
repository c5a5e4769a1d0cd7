// gelu.cpp — the Gaussian error linear unit, exact and tanh-approximated.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/rows/fast_math.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/ops/fused.h"

namespace patchgrad {

namespace {
constexpr real kSqrtHalf = static_cast<real>(0.70710678118654752440);     // 1 / sqrt(2)
constexpr real kInvSqrt2Pi = static_cast<real>(0.39894228040143267794);   // 1 / sqrt(2 pi)
constexpr real kSqrt2OverPi = static_cast<real>(0.79788456080286535588);  // sqrt(2 / pi)
constexpr real kCubic = static_cast<real>(0.044715);
constexpr int64_t kGrain = 1 << 15;  // elements per thread at least

// y[i] = GELU(x[i]) for i in [0, n), compiled for each instruction-set level (cpu_isa.h).
PATCHGRAD_ALWAYS_INLINE void gelu_forward_loop(const real* xd, real* y, int64_t n, bool exact) {
    // [snippet:gelu-forward]
    if (exact) {
        for (int64_t i = 0; i < n; ++i) y[i] = real(0.5) * xd[i] * (1 + fast_erf(xd[i] * kSqrtHalf));
    } else {
        for (int64_t i = 0; i < n; ++i) {
            const real v = xd[i];
            y[i] = real(0.5) * v * (1 + std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v)));
        }
    }
    // [/snippet:gelu-forward]
}
PATCHGRAD_MULTIVERSION(gelu_forward, (const real* x, real* y, int64_t n, bool exact), (x, y, n, exact))

// dx[i] += dy[i] * GELU'(x[i]) for i in [0, n), likewise.
PATCHGRAD_ALWAYS_INLINE void gelu_backward_loop(const real* xd, const real* dy, real* dx, int64_t n, bool exact) {
    if (exact) {
        // [exercise:gelu-backward]
        // [snippet:gelu-backward-exact]
        for (int64_t i = 0; i < n; ++i) {
            const real v = xd[i];
            real gaussian;  // exp(-v^2 / 2), which erf computes on the way
            const real cdf = real(0.5) * (1 + fast_erf(v * kSqrtHalf, &gaussian));
            const real pdf = kInvSqrt2Pi * gaussian;
            dx[i] += dy[i] * (cdf + v * pdf);
        }
        // [/snippet:gelu-backward-exact]
        // [/exercise:gelu-backward]
    } else {
        // [snippet:gelu-backward-tanh]
        for (int64_t i = 0; i < n; ++i) {
            const real v = xd[i];
            const real t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
            const real du = kSqrt2OverPi * (1 + 3 * kCubic * v * v);
            dx[i] += dy[i] * (real(0.5) * (1 + t) + real(0.5) * v * (1 - t * t) * du);
        }
        // [/snippet:gelu-backward-tanh]
    }
}
PATCHGRAD_MULTIVERSION(gelu_backward, (const real* x, const real* dy, real* dx, int64_t n, bool exact),
                       (x, dy, dx, n, exact))

}  // namespace

void gelu_values(const real* x, real* y, int64_t n, GeluApproximation approximation) {
    gelu_forward(x, y, n, approximation == GeluApproximation::None);
}

namespace {
// y[i] = GELU(x[i]) and d[i] = GELU'(x[i]) for i in [0, n), in one pass: the derivative takes
// erf (or tanh) from the value, which computes it anyway. d may be x itself (x[i] is read before
// d[i] is written). The same expressions as the two loops above: the same bits.
PATCHGRAD_ALWAYS_INLINE void gelu_with_derivative_loop(const real* xd, real* y, real* d, int64_t n, bool exact) {
    // [hide:gelu-backward]
    if (exact) {
        for (int64_t i = 0; i < n; ++i) {
            const real v = xd[i];
            real gaussian;
            const real erf = fast_erf(v * kSqrtHalf, &gaussian);
            y[i] = real(0.5) * v * (1 + erf);
            const real cdf = real(0.5) * (1 + erf);
            const real pdf = kInvSqrt2Pi * gaussian;
            d[i] = cdf + v * pdf;
        }
    } else {
        for (int64_t i = 0; i < n; ++i) {
            const real v = xd[i];
            const real t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
            const real du = kSqrt2OverPi * (1 + 3 * kCubic * v * v);
            y[i] = real(0.5) * v * (1 + t);
            d[i] = real(0.5) * (1 + t) + real(0.5) * v * (1 - t * t) * du;
        }
    }
    // [/hide:gelu-backward]
    // [handout:gelu-backward] (void)xd, (void)y, (void)d, (void)n, (void)exact;
}
PATCHGRAD_MULTIVERSION(gelu_with_derivative, (const real* x, real* y, real* d, int64_t n, bool exact),
                       (x, y, d, n, exact))

// g[i] = 0 + g[i] d[i]: what gelu's backward adds into a zero gradient (0 + -0 is +0).
PATCHGRAD_ALWAYS_INLINE void times_loop(const real* d, real* g, int64_t n) {
    for (int64_t i = 0; i < n; ++i) g[i] = real(0) + g[i] * d[i];
}
PATCHGRAD_MULTIVERSION(times, (const real* d, real* g, int64_t n), (d, g, n))
}  // namespace

void gelu_values_and_derivatives(const real* x, real* y, real* d, int64_t n, GeluApproximation approximation) {
    gelu_with_derivative(x, y, d, n, approximation == GeluApproximation::None);
}

void times_gelu_derivatives(const real* d, real* g, int64_t n) { times(d, g, n); }

// x [...] -> y [...], elementwise. None, with Phi / phi the standard normal cdf / pdf:
//   y = x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
// [hide:gelu-backward]
//   dy/dx = Phi(x) + x phi(x)
// [/hide:gelu-backward]
// Tanh, with u = sqrt(2/pi) (x + 0.044715 x^3) and t = tanh(u):
//   y = 0.5 x (1 + t)      dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
// The backward recomputes the derivative from x; nothing is saved. erf and exp are
// fast_math.h's vectorisable forms in float32 (libm's in float64).
// [hide:gelu-backward]
// The exact backward takes phi's exponential from erf, which computes it anyway.
// [/hide:gelu-backward]
Tensor gelu(const Tensor& x, GeluApproximation approximation) {
    const bool exact = approximation == GeluApproximation::None;
    check(exact || approximation == GeluApproximation::Tanh, "gelu: unknown approximation ",
          static_cast<int>(approximation), " for input ", x.shape());
    const int64_t n = x.numel();
    Tensor out = Tensor::empty(x.shape());
    const real* xd = x.data();
    real* y = out.data();
    parallel_for(n, kGrain,
                 [=](int64_t begin, int64_t end) { gelu_forward(xd + begin, y + begin, end - begin, exact); });

    record(out, "gelu", {x}, [x, exact](Tensor& o) mutable {
        const real* dy = o.grad_data();
        const real* xd = x.data();
        add_into_grad(x, kGrain, [=](int64_t begin, int64_t end, real* dx) {
            gelu_backward(xd + begin, dy + begin, dx + begin, end - begin, exact);
        });
    });
    return out;
}

}  // namespace patchgrad
