// softmax_rows.h — softmax.cpp's row kernels, for an op that fuses a softmax into a larger
// computation (attention.cpp: each head's scores are normalised while they are in cache).
#pragma once

#include <cstdint>

#include "autograd/real.h"

namespace patchgrad {

// y[r] = softmax(x[r]) for `rows` contiguous rows of n reals; y may be x (in place).
void softmax_rows(const real* x, real* y, int64_t rows, int64_t n);
// dx[r] += y[r] * (dy[r] - sum(dy[r] * y[r])), y being softmax_rows' output.
void softmax_rows_backward(const real* y, const real* dy, real* dx, int64_t rows, int64_t n);

}  // namespace patchgrad
