// strided.cpp — the shape arithmetic of strided.h.
#include "patchgrad/autograd/strided.h"

namespace patchgrad {

int64_t dims_product(const Shape& shape, int64_t begin, int64_t end) {
    int64_t n = 1;
    for (int64_t k = begin; k < end; ++k) n *= shape[k];
    return n;
}

// [snippet:view-axis]
AxisView view_axis(const Shape& shape, int64_t axis, bool keepdim, const char* op) {
    AxisView v;
    v.axis = normalize_axis(axis, shape, op);
    v.n = shape[v.axis];
    for (int64_t k = 0; k < v.axis; ++k) v.outer *= shape[k];
    for (size_t k = v.axis + 1; k < shape.size(); ++k) v.inner *= shape[k];
    v.out_shape = shape;
    if (keepdim)
        v.out_shape[v.axis] = 1;
    else
        v.out_shape.erase(v.out_shape.begin() + v.axis);
    return v;
}
// [/snippet:view-axis]

}  // namespace patchgrad
