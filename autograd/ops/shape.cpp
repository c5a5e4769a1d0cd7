// shape.cpp — ops that move elements around without changing them: reshape, permute,
// transpose, concat, slice, select, gather_rows. Tensors are always contiguous (see tensor.h):
// reshape, and a slice or select whose axes before it all have size 1 (slicing the first axis,
// say: one contiguous run, see take_along), share the input's storage; every other op here
// copies into a new tensor. Each backward routes every gradient element back to the single
// input element it came from.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/strided.h"

namespace patchgrad {

namespace {

// permute and transpose share this; `op` is the name in errors and in the graph.
//   out[i_0, ..., i_k] = a[j] with j_{dims[m]} = i_m      dA[j] += dOut[i]
Tensor permute_as(const Tensor& a, const std::vector<int64_t>& dims, const char* op) {
    const Shape& in_shape = a.shape();
    const int64_t ndim = a.dim();
    std::vector<int64_t> axes(dims.size());
    std::vector<bool> seen(ndim, false);
    bool valid = static_cast<int64_t>(dims.size()) == ndim;
    for (size_t m = 0; valid && m < dims.size(); ++m) {
        axes[m] = dims[m] < 0 ? dims[m] + ndim : dims[m];
        valid = axes[m] >= 0 && axes[m] < ndim && !seen[axes[m]];
        if (valid) seen[axes[m]] = true;
    }
    check(valid, op, ": dims ", dims, " are not a permutation of the ", ndim, " axes of shape ", in_shape);

    Shape out_shape(ndim), in_strides(ndim);
    for (int64_t m = 0; m < ndim; ++m) {
        out_shape[m] = in_shape[axes[m]];
        in_strides[m] = dims_product(in_shape, axes[m] + 1, ndim);
    }
    // When the last axis stays last (attention's head split and merge), the copy moves whole
    // rows of it: visit the permutation of the other axes, each element a block of `run`.
    // (Visiting it as an axis of length 1 instead ran the odometer once per block.)
    int64_t run = 1;
    Shape visit_shape = out_shape, visit_strides = in_strides;
    if (ndim > 0 && axes[ndim - 1] == ndim - 1) {
        run = out_shape[ndim - 1];
        visit_shape.pop_back();
        visit_strides.pop_back();
    }
    Tensor out = Tensor::empty(out_shape);
    const real* x = a.data();
    real* y = out.data();
    for_each_permuted(visit_shape, visit_strides, run,
                      [x, y, run](int64_t o, int64_t i) { std::copy(x + i, x + i + run, y + o * run); });

    record(out, op, {a}, [a, visit_shape, visit_strides, run](Tensor& o) mutable {
        const real* dy = o.grad_data();
        // Every element of dA is reached exactly once: a first gradient is written, not added
        // to a zero-filled buffer (beta == 0 never reads the uninitialised memory).
        const GradOverwrite dx = grad_for_overwrite(a);
        for_each_permuted(visit_shape, visit_strides, run, [dx, dy, run](int64_t oi, int64_t i) {
            const real* src = dy + oi * run;
            if (dx.beta == 0)
                std::copy(src, src + run, dx.data + i);
            else
                for (int64_t k = 0; k < run; ++k) dx.data[i + k] += src[k];
        });
    });
    return out;
}

}  // namespace

// reshape: a [any] -> out [shape], the same elements in the same row-major order, sharing a's memory.
//   dA = dOut (viewed in a's shape)
Tensor reshape(const Tensor& a, Shape shape) {
    int64_t inferred = -1;
    int64_t known = 1;
    for (size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] == -1) {
            check(inferred < 0, "reshape: only one dimension can be -1, got shape ", shape);
            inferred = static_cast<int64_t>(k);
        } else if (shape[k] < 0) {
            fail("reshape: invalid dimension ", shape[k], " in shape ", shape);
        } else {
            check(product_fits(known, shape[k]), "reshape: shape ", shape,
                  " has more elements than a 64-bit integer holds");
            known *= shape[k];
        }
    }
    const Shape requested = shape;
    if (inferred >= 0) {
        check(known != 0 && a.numel() % known == 0, "reshape: cannot reshape a tensor of shape ", a.shape(), " (",
              a.numel(), " elements) into shape ", requested);
        shape[inferred] = a.numel() / known;
    }
    const int64_t n = shape_numel(shape);
    check(n == a.numel(), "reshape: cannot reshape a tensor of shape ", a.shape(), " (", a.numel(),
          " elements) into shape ", shape, " (", n, " elements)");

    // [snippet:reshape-view]
    Tensor out = Tensor::view(a, shape, 0);
    record(out, "reshape", {a}, [a](Tensor& o) { add_grad_from(a, o); });
    // [/snippet:reshape-view]
    return out;
}

// permute: out axis m is input axis dims[m] (negative dims count from the end), e.g.
// [B, N, heads, Dh] with dims {0, 2, 1, 3} -> [B, heads, N, Dh].
//   dA = dOut permuted back
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims) { return permute_as(a, dims, "permute"); }

// transpose: swaps axis0 and axis1 (negative axes count from the end).
//   dA = dOut with the same two axes swapped back
Tensor transpose(const Tensor& a, int64_t axis0, int64_t axis1) {
    const int64_t a0 = normalize_axis(axis0, a.shape(), "transpose");
    const int64_t a1 = normalize_axis(axis1, a.shape(), "transpose");
    std::vector<int64_t> dims(a.dim());
    for (int64_t k = 0; k < a.dim(); ++k) dims[k] = k;
    std::swap(dims[a0], dims[a1]);
    return permute_as(a, dims, "transpose");
}

// concat: tensors t_0 [..., n_0, ...], t_1 [..., n_1, ...], ... -> out [..., n_0 + n_1 + ..., ...]
// along `axis`. Seen as [outer, n_t * inner] blocks, each output row is the inputs' rows
// one after another. The ViT prepends the class token this way: concat({cls [B, 1, D],
// patches [B, N, D]}, 1) -> [B, 1 + N, D].
//   dT_t = the block of dOut that t_t was copied to
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis) {
    check(!tensors.empty(), "concat: needs at least one tensor, got none");
    for (size_t t = 0; t < tensors.size(); ++t) check(tensors[t].defined(), "concat: tensor ", t, " is undefined");
    const Shape& first = tensors[0].shape();
    const int64_t ax = normalize_axis(axis, first, "concat");
    Shape out_shape = first;
    out_shape[ax] = 0;
    for (size_t t = 0; t < tensors.size(); ++t) {
        const Shape& s = tensors[t].shape();
        bool fits = s.size() == first.size();
        for (size_t k = 0; fits && k < s.size(); ++k) fits = static_cast<int64_t>(k) == ax || s[k] == first[k];
        check(fits, "concat: along axis ", axis, " all tensors must agree on every other axis, but tensor 0 has shape ",
              first, " and tensor ", t, " has shape ", s);
        out_shape[ax] += s[ax];
    }

    const int64_t outer = dims_product(first, 0, ax);
    const int64_t inner = dims_product(first, ax + 1, static_cast<int64_t>(first.size()));
    const int64_t out_row = out_shape[ax] * inner;
    Tensor out = Tensor::empty(out_shape);
    real* y = out.data();
    // Output rows are independent: split over threads (the class token's concat copies a whole
    // activation, 4.3 MB for cifar-tiny at batch 128).
    parallel_for(outer, grain_for_elements(out_row), [&](int64_t o0, int64_t o1) {
        int64_t offset = 0;
        for (const Tensor& t : tensors) {
            const int64_t row = t.shape()[ax] * inner;
            const real* x = t.data();
            for (int64_t o = o0; o < o1; ++o) std::copy(x + o * row, x + (o + 1) * row, y + o * out_row + offset);
            offset += row;
        }
    });

    record(out, "concat", tensors, [inputs = tensors, ax, outer, inner, out_row](Tensor& o) mutable {
        const real* dy = o.grad_data();
        std::vector<real*> dx(inputs.size(), nullptr);  // taken here: grad_data() may allocate
        for (size_t t = 0; t < inputs.size(); ++t)
            if (inputs[t].requires_grad()) dx[t] = inputs[t].grad_data();
        parallel_for(outer, grain_for_elements(out_row), [&](int64_t r0, int64_t r1) {
            int64_t offset = 0;
            for (size_t t = 0; t < inputs.size(); ++t) {
                const int64_t row = inputs[t].shape()[ax] * inner;
                for (int64_t r = r0; dx[t] && r < r1; ++r) {
                    const real* src = dy + r * out_row + offset;
                    real* dst = dx[t] + r * row;
                    for (int64_t k = 0; k < row; ++k) dst[k] += src[k];
                }
                offset += row;
            }
        });
    });
    return out;
}

namespace {
// The elements s..s+len-1 along axis `ax` of a, as a tensor of shape `out_shape` (the same
// elements in the same order, with or without the axis). Seen as [outer, n, inner], each
// outer row contributes one contiguous run of len*inner elements; with a single outer row
// (slicing the first axis) that run is the whole result, and it shares a's memory.
//   dA[..., s + k, ...] += dOut[..., k, ...], zero elsewhere
Tensor take_along(const Tensor& a, int64_t ax, int64_t s, int64_t len, const Shape& out_shape, const char* op) {
    const Shape& in_shape = a.shape();
    const int64_t outer = dims_product(in_shape, 0, ax);
    const int64_t inner = dims_product(in_shape, ax + 1, a.dim());
    const int64_t in_row = in_shape[ax] * inner, out_row = len * inner, skip = s * inner;
    // [snippet:take-along-view]
    Tensor out;
    if (outer == 1) {
        out = Tensor::view(a, out_shape, skip);  // one contiguous run: share it
    } else {
        out = Tensor::empty(out_shape);
        const real* x = a.data();
        real* y = out.data();
        for (int64_t o = 0; o < outer; ++o)
            std::copy(x + o * in_row + skip, x + o * in_row + skip + out_row, y + o * out_row);
    }
    // [/snippet:take-along-view]

    record(out, op, {a}, [a, outer, in_row, out_row, skip](Tensor& o) mutable {
        const real* dy = o.grad_data();
        real* dx = a.grad_data();
        // Element i of dOut is row i / out_row, position i % out_row: each lands in its own
        // element of dA, so the elements can be split over threads.
        parallel_for(outer * out_row, kElementGrain, [=](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end;) {
                const int64_t r = i / out_row, k = i % out_row, stop = std::min(end - i, out_row - k);
                const real* src = dy + r * out_row + k;
                real* dst = dx + r * in_row + skip + k;
                for (int64_t j = 0; j < stop; ++j) dst[j] += src[j];
                i += stop;
            }
        });
    });
    return out;
}
}  // namespace

// slice: a [..., n, ...] -> out [..., end - start, ...], elements start..end-1 along `axis`.
// Unlike Python, a range that is empty or reaches outside 0..n is an error, not clamped:
// in a model it is always a bug.
Tensor slice(const Tensor& a, int64_t axis, int64_t start, int64_t end) {
    const Shape& in_shape = a.shape();
    const int64_t ax = normalize_axis(axis, in_shape, "slice");
    const int64_t n = in_shape[ax];
    const int64_t s = start < 0 ? start + n : start;
    const int64_t e = end < 0 ? end + n : end;
    check(s >= 0 && e <= n && s < e, "slice: range ", start, ":", end, " is empty or out of range for axis ", axis,
          " of shape ", in_shape);
    Shape out_shape = in_shape;
    out_shape[ax] = e - s;
    return take_along(a, ax, s, e - s, out_shape, "slice");
}

// select: a [..., n, ...] -> out [..., ...], element `index` along `axis`, which is removed
// (the ViT head reads the class token as select(x, 1, 0): [B, 1 + N, D] -> [B, D]).
Tensor select(const Tensor& a, int64_t axis, int64_t index) {
    const Shape& in_shape = a.shape();
    const int64_t ax = normalize_axis(axis, in_shape, "select");
    const int64_t n = in_shape[ax];
    const int64_t i = index < 0 ? index + n : index;
    check(i >= 0 && i < n, "select: index ", index, " is out of range for axis ", axis, " of shape ", in_shape);
    Shape out_shape = in_shape;
    out_shape.erase(out_shape.begin() + ax);
    return take_along(a, ax, i, 1, out_shape, "select");
}

// gather_rows: a [B, T, ...] -> out [B, K, ...], out[b, k] = a[b, index[b*K + k]], one row
// being the R elements after the first two axes. K = index.size() / B.
//   dA[b, index[b*K + k]] += dOut[b, k]   (a row gathered twice gets both), zero elsewhere
Tensor gather_rows(const Tensor& a, const std::vector<int64_t>& index) {
    const Shape& in_shape = a.shape();
    check(a.dim() >= 2, "gather_rows: expected a tensor [B, T, ...], got shape ", in_shape);
    const int64_t B = in_shape[0], T = in_shape[1], R = dims_product(in_shape, 2, a.dim());
    const int64_t n = static_cast<int64_t>(index.size());
    check(B > 0 && n > 0 && n % B == 0, "gather_rows: ", n, " indices for ", B, " batch entries of shape ", in_shape,
          ": expected K > 0 per entry, B * K in all");
    const int64_t K = n / B;
    for (int64_t i = 0; i < n; ++i)
        check(index[i] >= 0 && index[i] < T, "gather_rows: index ", index[i], " (entry ", i / K, ", position ", i % K,
              ") is out of range for axis 1 of shape ", in_shape);
    Shape out_shape = in_shape;
    out_shape[1] = K;
    Tensor out = Tensor::empty(out_shape);
    const real* x = a.data();
    real* y = out.data();
    for (int64_t i = 0; i < n; ++i) {
        const real* row = x + ((i / K) * T + index[i]) * R;
        std::copy(row, row + R, y + i * R);
    }

    record(out, "gather_rows", {a}, [a, index, K, T, R](Tensor& o) mutable {
        const real* dy = o.grad_data();
        real* dx = a.grad_data();
        // Entry b writes only its own T rows of dA, so the entries can be split over threads;
        // within one, repeated indices add up in a fixed order.
        const int64_t B = static_cast<int64_t>(index.size()) / K;
        parallel_for(B, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, K * R)),
                     [&](int64_t begin, int64_t end) {
                         for (int64_t b = begin; b < end; ++b)
                             for (int64_t k = 0; k < K; ++k) {
                                 const real* src = dy + (b * K + k) * R;
                                 real* dst = dx + (b * T + index[b * K + k]) * R;
                                 for (int64_t j = 0; j < R; ++j) dst[j] += src[j];
                             }
                     });
    });
    return out;
}

}  // namespace patchgrad
