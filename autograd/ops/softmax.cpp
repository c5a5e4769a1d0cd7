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

#include "autograd/cpu/cpu_isa.h"
#include "autograd/cpu/threads/parallel.h"
#include "autograd/ops.h"
#include "autograd/cpu/rows/fast_math.h"
#include "autograd/cpu/rows/softmax_rows.h"

namespace patchgrad {

namespace {

// y = softmax(x) or log_softmax(x) over each contiguous row of n elements. log_softmax is
// (x - max) - log(sum): x - max is exact for nearby logits, whereas x - (max + log(sum))
// would round the log-sum to the precision of the logits (6e-5 in float32 at 1000).
// Compiled for each instruction-set level (cpu_isa.h); the max and the sum run in lanes
// (fast_math.h) so that they vectorise.
//
// Each pass runs over a group of 8 rows, so a row's exponentials are read back a few rows' work
// after they were stored and 8 rows' reductions overlap (tutorials/12_speed/measurements.md#kernel-notes).
// Every row gets the same operations as row by row, so the results are the same bits.
PATCHGRAD_ALWAYS_INLINE void forward_rows_loop(const real* x, real* y, int64_t rows, int64_t n, bool log_output) {
    constexpr int64_t G = 8;
    for (int64_t r0 = 0; r0 < rows; r0 += G) {
        const int64_t count = std::min(G, rows - r0);
        const real* xg = x + r0 * n;  // row g of the group is xg + g * n
        real* yg = y + r0 * n;
        real max[G], sum[G];
        // [snippet:softmax-forward-row]
        for (int64_t g = 0; g < count; ++g) max[g] = lane_max(n, [&](int64_t i) { return xg[g * n + i]; });
        for (int64_t g = 0; g < count; ++g)
            for (int64_t i = 0; i < n; ++i) yg[g * n + i] = fast_exp(xg[g * n + i] - max[g]);
        for (int64_t g = 0; g < count; ++g) sum[g] = lane_sum(n, [&](int64_t i) { return yg[g * n + i]; });
        for (int64_t g = 0; g < count; ++g) {
            if (log_output) {
                const real log_sum = std::log(sum[g]);
                for (int64_t i = 0; i < n; ++i) yg[g * n + i] = (xg[g * n + i] - max[g]) - log_sum;
            } else {
                const real inv_sum = 1 / sum[g];
                for (int64_t i = 0; i < n; ++i) yg[g * n + i] *= inv_sum;
            }
        }
        // [/snippet:softmax-forward-row]
    }
}
PATCHGRAD_MULTIVERSION(forward_rows, (const real* x, real* y, int64_t rows, int64_t n, bool log_output),
                       (x, y, rows, n, log_output))

// The same over the middle axis of [outer, n, inner]; `max` and `sum` hold one value per
// inner position.
void forward_strided(const real* x, real* y, int64_t outer, int64_t n, int64_t inner, bool log_output) {
    std::vector<real> max(inner), sum(inner);
    for (int64_t o = 0; o < outer; ++o) {
        const real* xo = x + o * n * inner;
        real* yo = y + o * n * inner;
        std::fill(max.begin(), max.end(), -std::numeric_limits<real>::infinity());
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < inner; ++k) max[k] = std::max(max[k], xo[i * inner + k]);
        std::fill(sum.begin(), sum.end(), real(0));
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < inner; ++k) {
                yo[i * inner + k] = fast_exp(xo[i * inner + k] - max[k]);
                sum[k] += yo[i * inner + k];
            }
        if (log_output) {
            for (int64_t k = 0; k < inner; ++k) sum[k] = std::log(sum[k]);
            for (int64_t i = 0; i < n; ++i)
                for (int64_t k = 0; k < inner; ++k) yo[i * inner + k] = (xo[i * inner + k] - max[k]) - sum[k];
        } else {
            for (int64_t k = 0; k < inner; ++k) sum[k] = 1 / sum[k];
            for (int64_t i = 0; i < n; ++i)
                for (int64_t k = 0; k < inner; ++k) yo[i * inner + k] *= sum[k];
        }
    }
}

// Adds the gradient of forward_rows into dx (the formulas are above softmax_along).
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
// with the sums over the axis. Both save only their output: exp(y) is the softmax.
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
            forward_rows(xd + at, y + at, o1 - o0, n, log_output);
        else
            forward_strided(xd + at, y + at, o1 - o0, n, inner, log_output);
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

void softmax_rows(const real* x, real* y, int64_t rows, int64_t n) { forward_rows(x, y, rows, n, false); }

void softmax_rows_backward(const real* y, const real* dy, real* dx, int64_t rows, int64_t n) {
    backward_rows(y, dy, dx, rows, n, false);
}

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_along(x, axis, false); }

Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_along(x, axis, true); }

}  // namespace patchgrad
