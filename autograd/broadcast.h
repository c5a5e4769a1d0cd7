// broadcast.h — how elementwise.cpp walks a broadcasting op: the output seen as rows, and
// where each row starts in either operand. The shape rule itself is broadcast_shapes (ops.h);
// the formulas and their derivatives stay in the op file.
#pragma once

#include <algorithm>
#include <vector>

#include "patchgrad/autograd/check.h"  // Shape
#include "patchgrad/autograd/cpu/threads/parallel.h"

namespace patchgrad {

// The iteration plan of a broadcast op: the output seen as `rows` rows of `inner` elements,
// and where each row starts in a and in b. Axes of size 1 are dropped and neighbouring
// axes along which each operand either moves in both or is stretched in both are merged,
// so the cases that dominate a ViT need almost no bookkeeping:
//   same shape                  -> one row of numel elements
//   [B, N, D] + [D]  (bias)     -> B*N rows of D; b restarts at every row
//   [B, N, D] * []   (scalar)   -> one row of numel elements; b never moves
// Along the inner axis each operand either moves one element per step or stays put
// (a_step / b_step). Along the outer axes a_stride / b_stride are 0 where it is stretched.
struct Broadcast {
    std::vector<int64_t> outer;               // sizes of the merged outer axes
    std::vector<int64_t> a_stride, b_stride;  // per outer axis, in elements
    int64_t rows = 1, inner = 1;
    bool a_step = true, b_step = true;
    bool a_whole = true, b_whole = true;  // moves along every axis: one element per output
};

// The plan for out = f(a, b), out being broadcast_shapes(a, b).
Broadcast plan_broadcast(const Shape& a, const Shape& b, const Shape& out);

// Calls row(a_offset, b_offset, out_offset, n) on runs of n elements covering every row,
// walking the outer axes like an odometer: the offsets are updated incrementally, never
// recomputed from an index. With `parallel`, threads take disjoint blocks of rows (a single
// long row is cut into pieces): only safe when no two runs write the same element, which is
// always so for the output and for the gradient of an operand that is nowhere stretched.
template <class RowFn>
void for_each_row(const Broadcast& bc, bool parallel, RowFn&& row) {
    const int64_t grain = kElementGrain;
    if (bc.rows == 1) {
        parallel_for(bc.inner, parallel ? grain : bc.inner, [&](int64_t begin, int64_t end) {
            row(bc.a_step ? begin : 0, bc.b_step ? begin : 0, begin, end - begin);
        });
        return;
    }
    const int64_t row_grain = parallel ? std::max<int64_t>(1, grain / bc.inner) : bc.rows;
    parallel_for(bc.rows, row_grain, [&](int64_t row_begin, int64_t row_end) {
        // The odometer's position at row_begin, read off its digits from the last outer axis.
        std::vector<int64_t> index(bc.outer.size(), 0);
        int64_t ia = 0, ib = 0, rest = row_begin;
        for (size_t j = bc.outer.size(); j-- > 0;) {
            index[j] = rest % bc.outer[j];
            rest /= bc.outer[j];
            ia += index[j] * bc.a_stride[j];
            ib += index[j] * bc.b_stride[j];
        }
        for (int64_t r = row_begin; r < row_end; ++r) {
            row(ia, ib, r * bc.inner, bc.inner);
            for (size_t j = bc.outer.size(); j-- > 0;) {
                ia += bc.a_stride[j];
                ib += bc.b_stride[j];
                if (++index[j] < bc.outer[j]) break;
                ia -= bc.a_stride[j] * bc.outer[j];
                ib -= bc.b_stride[j] * bc.outer[j];
                index[j] = 0;
            }
        }
    });
}

}  // namespace patchgrad
