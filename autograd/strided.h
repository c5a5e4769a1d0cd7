// strided.h — row-major tensors seen through their strides, for the op files: how many
// elements one step along an axis spans, an axis seen as [outer, n, inner], and the walk over
// the elements of a permuted copy. The ops' formulas stay in autograd/ops/.
#pragma once

#include <vector>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

// Product of shape[begin..end): the number of elements in one step along axis begin-1.
int64_t dims_product(const Shape& shape, int64_t begin, int64_t end);

// A tensor seen as [outer, n, inner] around `axis` (outer, inner: the products of the axes
// before and after it), and the shape of a reduction along it (the axis removed or kept as 1).
// [snippet:axis-view]
struct AxisView {
    int64_t axis = 0;  // normalised
    int64_t outer = 1, n = 1, inner = 1;
    Shape out_shape;
};

AxisView view_axis(const Shape& shape, int64_t axis, bool keepdim, const char* op);
// [/snippet:axis-view]

// Visits the elements of a permuted copy in its row-major order and calls
// f(out_offset, in_offset), where in_strides[k] is how far the input moves for one step
// along output axis k. The last axis is a plain strided loop; the outer axes advance like
// an odometer once per row. Rows are split over threads: each output element is written
// by exactly one of them, so the result does not depend on the thread count. `block` is
// the number of elements each call of f moves, to size the chunks.
template <class F>
void for_each_permuted(const Shape& out_shape, const Shape& in_strides, int64_t block, F f) {
    const int64_t ndim = static_cast<int64_t>(out_shape.size());
    const int64_t n = shape_numel(out_shape);
    if (n == 0) return;
    if (ndim == 0) {
        f(0, 0);
        return;
    }
    const int64_t row = out_shape[ndim - 1], step = in_strides[ndim - 1];
    // A small copy stays on one thread.
    parallel_for(n / row, grain_for_elements(row * block), [&](int64_t row_begin, int64_t row_end) {
        // The odometer's position at row_begin, read off its digits from the last outer axis.
        std::vector<int64_t> index(ndim, 0);
        int64_t in_row = 0;
        for (int64_t axis = ndim - 2, rest = row_begin; axis >= 0; --axis) {
            index[axis] = rest % out_shape[axis];
            rest /= out_shape[axis];
            in_row += index[axis] * in_strides[axis];
        }
        for (int64_t r = row_begin; r < row_end; ++r) {
            const int64_t o = r * row;
            for (int64_t k = 0; k < row; ++k) f(o + k, in_row + k * step);
            for (int64_t axis = ndim - 2; axis >= 0; --axis) {
                in_row += in_strides[axis];
                if (++index[axis] < out_shape[axis]) break;
                in_row -= in_strides[axis] * out_shape[axis];
                index[axis] = 0;
            }
        }
    });
}

}  // namespace patchgrad
