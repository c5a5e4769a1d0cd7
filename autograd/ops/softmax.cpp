// softmax.cpp — softmax and log_softmax along any axis.
//
// Around `axis` a tensor is seen as [outer, n, inner]: element (o, i, k) lives at
// (o * n + i) * inner + k, and the reductions run over i. The last axis (inner == 1, every
// attention row) gets its own loop over contiguous rows; any other axis reduces over n for
// all inner positions at once, so every inner loop still walks contiguous memory.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/rows/fast_math.h"
#include "patchgrad/autograd/cpu/rows/softmax_rows.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/ops.h"

namespace patchgrad {

namespace {

// Adds the gradient of softmax_rows_forward into dx (the formulas are above softmax_along).
PATCHGRAD_ALWAYS_INLINE void backward_rows_loop(const real* y, const real* dy, real* dx, int64_t rows, int64_t n,
                                                bool log_output) {
    for (int64_t r = 0; r < rows; ++r) {
        const real* yr = y + r * n;
        const real* dyr = dy + r * n;
        real* dxr = dx + r * n;
        if (log_output) {
            // [snippet:log-softmax-backward-row]
            const real dot = lane_sum(n, [&](int64_t i) { return dyr[i]; });
            for (int64_t i = 0; i < n; ++i) dxr[i] += dyr[i] - fast_exp(yr[i]) * dot;
            // [/snippet:log-softmax-backward-row]
        } else {
            // [exercise:softmax-backward]
            const real dot = lane_sum(n, [&](int64_t i) { return dyr[i] * yr[i]; });
            for (int64_t i = 0; i < n; ++i) dxr[i] += yr[i] * (dyr[i] - dot);
            // [/exercise:softmax-backward]
        }
    }
}
PATCHGRAD_MULTIVERSION(backward_rows,
                       (const real* y, const real* dy, real* dx, int64_t rows, int64_t n, bool log_output),
                       (y, dy, dx, rows, n, log_output))

// The same over the middle axis of [outer, n, inner]: each inner position's n values are
// gathered into a row of their own, backward_rows adds their gradient, and it is scattered back.
void backward_strided(const real* y, const real* dy, real* dx, int64_t outer, int64_t n, int64_t inner,
                      bool log_output) {
    std::vector<real> rows(static_cast<size_t>(3 * n * inner));  // [inner, n] each: y, dy, dx
    real* yr = rows.data();
    real* dyr = yr + n * inner;
    real* dxr = dyr + n * inner;
    for (int64_t o = 0; o < outer; ++o) {
        const int64_t at = o * n * inner;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < inner; ++k) {
                yr[k * n + i] = y[at + i * inner + k];
                dyr[k * n + i] = dy[at + i * inner + k];
            }
        std::fill(dxr, dxr + n * inner, real(0));
        backward_rows(yr, dyr, dxr, inner, n, log_output);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < inner; ++k) dx[at + i * inner + k] += dxr[k * n + i];
    }
}

// x [..., n, ...] -> y of the same shape, normalised along `axis` (n = x.shape[axis]):
//   softmax:      y = exp(x - max) / sum exp(x - max)
// [hide:softmax-backward]
//                 dx = y * (dy - sum(dy * y))
// [/hide:softmax-backward]
//   log_softmax:  y = (x - max) - log sum exp(x - max)     dx = dy - exp(y) * sum(dy)
// with the sums over the axis. Both save only their output: exp(y) is the softmax. log_softmax
// is (x - max) - log(sum): x - max is exact for nearby logits, whereas x - (max + log(sum))
// would round the log-sum to the precision of the logits (6e-5 in float32 at 1000).
Tensor softmax_along(const Tensor& x, int64_t axis, bool log_output) {
    const char* op = log_output ? "log_softmax" : "softmax";
    const Shape& shape = x.shape();
    const int64_t a = normalize_axis(axis, shape, op);
    const int64_t n = shape[a];
    int64_t outer = 1, inner = 1;
    for (int64_t j = 0; j < a; ++j) outer *= shape[j];
    for (int64_t j = a + 1; j < x.dim(); ++j) inner *= shape[j];

    // Threads take whole blocks of `outer` rows, each normalised exactly as on one thread.
    Tensor out = Tensor::empty(shape);
    const int64_t grain = grain_for_elements(n * inner);
    const real* xd = x.data();
    real* y = out.data();
    parallel_for(outer, grain, [=](int64_t o0, int64_t o1) {
        const int64_t at = o0 * n * inner;
        if (inner == 1)
            softmax_rows_forward(xd + at, y + at, o1 - o0, n, log_output);
        else
            softmax_strided_forward(xd + at, y + at, o1 - o0, n, inner, log_output);
    });

    record(out, op, {x}, [x, outer, n, inner, grain, log_output](Tensor& o) mutable {
        const real* y = o.data();
        const real* dy = o.grad_data();
        real* dx = x.grad_data();
        parallel_for(outer, grain, [=](int64_t o0, int64_t o1) {
            const int64_t at = o0 * n * inner;
            if (inner == 1)
                backward_rows(y + at, dy + at, dx + at, o1 - o0, n, log_output);
            else
                backward_strided(y + at, dy + at, dx + at, o1 - o0, n, inner, log_output);
        });
    });
    return out;
}

}  // namespace

void softmax_rows_backward(const real* y, const real* dy, real* dx, int64_t rows, int64_t n) {
    backward_rows(y, dy, dx, rows, n, false);
}

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_along(x, axis, false); }

Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_along(x, axis, true); }

}  // namespace patchgrad
