// softmax_rows.cpp — softmax's forward kernels (softmax_rows.h), vectorised: the formula of
// autograd/ops/softmax.cpp, run over groups of rows for the cache.
#include "patchgrad/autograd/cpu/rows/softmax_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/rows/fast_math.h"

namespace patchgrad {

namespace {

// Compiled for each instruction-set level (cpu_isa.h); the max and the sum run in lanes
// (fast_math.h) so that they vectorise. Each pass runs over a group of 8 rows, so a row's
// exponentials are read back a few rows' work after they were stored and 8 rows' reductions
// overlap (tutorials/12_speed/measurements.md#kernel-notes); each row gets the same operations.
PATCHGRAD_ALWAYS_INLINE void softmax_rows_forward_loop(const real* x, real* y, int64_t rows, int64_t n,
                                                       bool log_output) {
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
}  // namespace

PATCHGRAD_MULTIVERSION(softmax_rows_forward, (const real* x, real* y, int64_t rows, int64_t n, bool log_output),
                       (x, y, rows, n, log_output))

void softmax_strided_forward(const real* x, real* y, int64_t outer, int64_t n, int64_t inner, bool log_output) {
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

}  // namespace patchgrad
