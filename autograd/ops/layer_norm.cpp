// layer_norm.cpp — layer normalisation over the last dimension.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/rows/fast_math.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/ops/fused.h"

namespace patchgrad {

namespace {
void check_affine(const Tensor& param, const char* name, const Tensor& x) {
    if (param.defined())  // param.shape() may only be asked for then
        check(param.dim() == 1 && param.size(0) == x.size(-1), "layer_norm: ", name, " of shape ", param.shape(),
              " does not match the normalised dimension [", x.size(-1), "] of input ", x.shape());
}

// Rows [r0, r1) of x [rows, D] -> y (row r0 at y, rows ldy apart), with each row's mean and
// 1 / sqrt(var + eps). The loops below are compiled for each instruction-set level (cpu_isa.h);
// the sums run in lane_sum's 16 lanes (fast_math.h) so that they vectorise.
PATCHGRAD_ALWAYS_INLINE void forward_rows_loop(const real* xd, const real* w, const real* b, real eps, int64_t D,
                                               int64_t r0, int64_t r1, real* y, int64_t ldy, real* mean, real* rstd) {
    for (int64_t r = r0; r < r1; ++r) {
        real* yr = y + (r - r0) * ldy;  // y's row r
        // [snippet:layernorm-forward-row]
        const real* xr = xd + r * D;
        const real mu = lane_sum(D, [&](int64_t j) { return xr[j]; }) / static_cast<real>(D);
        const real squares = lane_sum(D, [&](int64_t j) { return (xr[j] - mu) * (xr[j] - mu); });
        const real rs = 1 / std::sqrt(squares / static_cast<real>(D) + eps);
        for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mu) * rs * (w ? w[j] : 1) + (b ? b[j] : 0);
        mean[r] = mu;
        rstd[r] = rs;
        // [/snippet:layernorm-forward-row]
    }
}
PATCHGRAD_MULTIVERSION(forward_rows,
                       (const real* xd, const real* w, const real* b, real eps, int64_t D, int64_t r0, int64_t r1,
                        real* y, int64_t ldy, real* mean, real* rstd),
                       (xd, w, b, eps, D, r0, r1, y, ldy, mean, rstd))

// Columns [c0, c1) of rows [r0, r1) of y again, from the mean and rstd the forward kept: the
// forward's own formula, so the same bits (into out, rows ld apart).
PATCHGRAD_ALWAYS_INLINE void saved_rows_loop(const real* xd, const real* w, const real* b, int64_t D, int64_t r0,
                                             int64_t r1, int64_t c0, int64_t c1, const real* mean, const real* rstd,
                                             real* out, int64_t ld) {
    for (int64_t r = r0; r < r1; ++r) {
        const real* xr = xd + r * D;
        real* yr = out + (r - r0) * ld;
        const real mu = mean[r], rs = rstd[r];
        for (int64_t j = c0; j < c1; ++j) yr[j - c0] = (xr[j] - mu) * rs * (w ? w[j] : 1) + (b ? b[j] : 0);
    }
}
PATCHGRAD_MULTIVERSION(saved_rows,
                       (const real* xd, const real* w, const real* b, int64_t D, int64_t r0, int64_t r1, int64_t c0,
                        int64_t c1, const real* mean, const real* rstd, real* out, int64_t ld),
                       (xd, w, b, D, r0, r1, c0, c1, mean, rstd, out, ld))

// dx of rows [r0, r1), added into dx.
PATCHGRAD_ALWAYS_INLINE void backward_rows_loop(const real* xd, const real* dy, const real* w, const real* mu,
                                                const real* rs, int64_t D, int64_t r0, int64_t r1, real* dx) {
    for (int64_t r = r0; r < r1; ++r) {
        // [exercise:layernorm-backward]
        const real* xr = xd + r * D;
        const real* dyr = dy + r * D;
        const auto dxhat = [&](int64_t j) { return dyr[j] * (w ? w[j] : 1); };
        const auto xhat = [&](int64_t j) { return (xr[j] - mu[r]) * rs[r]; };
        const real mean_dxhat = lane_sum(D, dxhat) / static_cast<real>(D);
        const real mean_dxhat_xhat = lane_sum(D, [&](int64_t j) { return dxhat(j) * xhat(j); }) / static_cast<real>(D);
        real* dxr = dx + r * D;
        for (int64_t j = 0; j < D; ++j) dxr[j] += rs[r] * (dxhat(j) - mean_dxhat - xhat(j) * mean_dxhat_xhat);
        // [/exercise:layernorm-backward]
    }
}
PATCHGRAD_MULTIVERSION(backward_rows,
                       (const real* xd, const real* dy, const real* w, const real* mu, const real* rs, int64_t D,
                        int64_t r0, int64_t r1, real* dx),
                       (xd, dy, w, mu, rs, D, r0, r1, dx))

// Rows [r0, r1)'s terms of dweight and dbias, added into sw [D] and sb [D].
PATCHGRAD_ALWAYS_INLINE void backward_affine_loop(const real* xd, const real* dy, const real* mu, const real* rs,
                                                  int64_t D, int64_t r0, int64_t r1, real* sw, real* sb) {
    // [snippet:layernorm-backward-affine]
    for (int64_t r = r0; r < r1; ++r) {
        const real* xr = xd + r * D;
        const real* dyr = dy + r * D;
        for (int64_t j = 0; j < D; ++j) {
            const real xhat = (xr[j] - mu[r]) * rs[r];
            sw[j] += dyr[j] * xhat;
            sb[j] += dyr[j];
        }
    }
    // [/snippet:layernorm-backward-affine]
}
PATCHGRAD_MULTIVERSION(backward_affine,
                       (const real* xd, const real* dy, const real* mu, const real* rs, int64_t D, int64_t r0,
                        int64_t r1, real* sw, real* sb),
                       (xd, dy, mu, rs, D, r0, r1, sw, sb))

void check_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, real eps) {
    check(x.dim() > 0, "layer_norm: input must have at least one dimension, got shape ", x.shape());
    check_affine(weight, "weight", x);
    check_affine(bias, "bias", x);
    if (!(eps >= 0)) {
        std::ostringstream msg;
        msg << "layer_norm: eps must be >= 0, got " << eps << " (input " << shape_str(x.shape()) << ")";
        throw std::invalid_argument(msg.str());
    }
}

// The backward from dy [rows, D], the output's gradient: dx added into x's gradient, dweight and
// dbias into weight's and bias's, where they want one. Rows go to threads in sum_rows's fixed
// blocks, so that the sums of dweight and dbias over the rows run in one order whatever the
// thread count. One pass gives both gradients: a few rows' dx, then their dweight and dbias
// terms while x and dy are still in cache.
void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& bias, const real* mu, const real* rs,
                         const real* dy, int64_t rows, int64_t D) {
    const real* xd = x.data();
    const real* w = weight.defined() ? weight.data() : nullptr;
    real* dx = x.requires_grad() ? x.grad_data() : nullptr;
    real* dw = weight.defined() && weight.requires_grad() ? weight.grad_data() : nullptr;
    real* db = bias.defined() && bias.requires_grad() ? bias.grad_data() : nullptr;
    if (!dw && !db) {
        if (dx)
            parallel_for(rows, grain_for_elements(D),
                         [=](int64_t r0, int64_t r1) { backward_rows(xd, dy, w, mu, rs, D, r0, r1, dx); });
        return;
    }
    const int64_t cached_rows = std::max<int64_t>(1, 4096 / D);  // 16 KiB of each of x, dy, dx
    // [dweight terms | dbias terms] summed over the rows
    const std::vector<real> sum = sum_rows(rows, 2 * D, [=](int64_t r0, int64_t r1, real* acc) {
        for (int64_t s = r0; s < r1; s += cached_rows) {
            const int64_t e = std::min(r1, s + cached_rows);
            if (dx) backward_rows(xd, dy, w, mu, rs, D, s, e, dx);
            backward_affine(xd, dy, mu, rs, D, s, e, acc, acc + D);
        }
    });
    for (int64_t j = 0; j < D; ++j) {
        if (dw) dw[j] += sum[j];
        if (db) db[j] += sum[D + j];
    }
}
}  // namespace

// x [..., D], weight [D] or undefined (= 1), bias [D] or undefined (= 0) -> y [..., D]
//   xhat = (x - mean) * rstd,  rstd = 1 / sqrt(var + eps),  y = xhat * weight + bias
// Per row:
// [hide:layernorm-backward]
//   with dxhat = dy * weight,  dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
// [/hide:layernorm-backward]
//   dweight = sum over rows of dy * xhat      dbias = sum over rows of dy
// The forward saves mean and rstd per row; xhat is recomputed from x in the backward.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, real eps) {
    check_layer_norm(x, weight, bias, eps);
    const int64_t D = x.size(-1);
    const int64_t rows = D > 0 ? shape_numel(x.shape()) / D : 0;  // D == 0: nothing to normalise
    Tensor out = Tensor::empty(x.shape());
    std::vector<real> mean(rows), rstd(rows);
    const real* w = weight.defined() ? weight.data() : nullptr;
    const real* b = bias.defined() ? bias.data() : nullptr;
    const real* xd = x.data();
    real* yd = out.data();
    real* mean_d = mean.data();
    real* rstd_d = rstd.data();
    parallel_for(rows, grain_for_elements(D), [=](int64_t r0, int64_t r1) {
        forward_rows(xd, w, b, eps, D, r0, r1, yd + r0 * D, D, mean_d, rstd_d);
    });
    record(out, "layer_norm", {x, weight, bias},
           [x, weight, bias, rows, D, mean = std::move(mean), rstd = std::move(rstd)](Tensor& o) {
               layer_norm_backward(x, weight, bias, mean.data(), rstd.data(), o.grad_data(), rows, D);
           });
    return out;
}

FusedLayerNorm::FusedLayerNorm(const Tensor& x, const InputNorm& norm)
    : x_(x), weight_(norm.weight), bias_(norm.bias), eps_(norm.eps) {
    check_layer_norm(x, weight_, bias_, eps_);
    D_ = x.size(-1);
    rows_ = D_ > 0 ? shape_numel(x.shape()) / D_ : 0;
    mean_.resize(static_cast<size_t>(rows_));
    rstd_.resize(static_cast<size_t>(rows_));
    const real* xd = x_.data();
    const real* w = weight_.defined() ? weight_.data() : nullptr;
    const real* b = bias_.defined() ? bias_.data() : nullptr;
    real *mean = mean_.data(), *rstd = rstd_.data();
    const real eps = eps_;
    const int64_t D = D_;
    forward_source_ = [=](int64_t r0, int64_t r1, int64_t c0, int64_t c1, real* out, int64_t ld) {
        if (c0 == 0 && c1 == D) return forward_rows(xd, w, b, eps, D, r0, r1, out, ld, mean, rstd);
        thread_local std::vector<real> row;  // a part of each row: the whole row, then the part
        row.resize(static_cast<size_t>(D));
        for (int64_t r = r0; r < r1; ++r) {
            forward_rows(xd, w, b, eps, D, r, r + 1, row.data(), D, mean, rstd);
            std::copy(row.begin() + c0, row.begin() + c1, out + (r - r0) * ld);
        }
    };
}

GemmOperandSource FusedLayerNorm::saved_source() const {
    const real* xd = x_.data();
    const real* w = weight_.defined() ? weight_.data() : nullptr;
    const real* b = bias_.defined() ? bias_.data() : nullptr;
    const real *mean = mean_.data(), *rstd = rstd_.data();
    const int64_t D = D_;
    return [=](int64_t r0, int64_t r1, int64_t c0, int64_t c1, real* out, int64_t ld) {
        saved_rows(xd, w, b, D, r0, r1, c0, c1, mean, rstd, out, ld);
    };
}

bool FusedLayerNorm::wants_dy() const {
    for (const Tensor* t : {&x_, &weight_, &bias_})
        if (t->defined() && t->requires_grad()) return true;
    return false;
}

void FusedLayerNorm::backward(const Tensor& dy) const {
    if (dy.defined()) layer_norm_backward(x_, weight_, bias_, mean_.data(), rstd_.data(), dy.data(), rows_, D_);
}

}  // namespace patchgrad
