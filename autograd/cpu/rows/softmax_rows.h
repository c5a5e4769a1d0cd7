// softmax_rows.h — softmax's row kernels, for autograd/ops/softmax.cpp and for an op that fuses
// a softmax into a larger computation (the attention heads: each head's scores are normalised
// while they are in cache).
#pragma once

#include <cstdint>

#include "patchgrad/autograd/real.h"

namespace patchgrad {

// y[r] = softmax(x[r]), or log_softmax(x[r]), for `rows` contiguous rows of n reals; y may be x
// (in place). Every row gets the operations it would get alone: the same bits in any group.
void softmax_rows_forward(const real* x, real* y, int64_t rows, int64_t n, bool log_output);
// The same along the middle axis of x [outer, n, inner].
void softmax_strided_forward(const real* x, real* y, int64_t outer, int64_t n, int64_t inner, bool log_output);
// dx[r] += y[r] * (dy[r] - sum(dy[r] * y[r])), y being softmax_rows_forward's output: the
// backward of chapter 4's exercise, in autograd/ops/softmax.cpp.
void softmax_rows_backward(const real* y, const real* dy, real* dx, int64_t rows, int64_t n);

}  // namespace patchgrad
