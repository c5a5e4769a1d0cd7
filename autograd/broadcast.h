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

// How for_each_row shares its runs out to threads. Each way is only safe when no two threads
// write the same element:
//   Rows     disjoint blocks of rows (a single long row cut into pieces): always so for the
//            output, and for the gradient of an operand that is nowhere stretched.
//   Columns  disjoint blocks of columns, each walking every row in order: also so for the
//            gradient of a stretched operand that moves along the row (a bias [D], a position
//            embedding [1, N, D] added to [B, N, D]); each of its elements is still the sum of
//            its rows in row order, on one thread, so the bits do not depend on the threads.
//   One      one thread: a gradient summed along the row itself ([B, N, 1] times [B, N, D]).
enum class RowSplit { Rows, Columns, One };

// The split safe for the gradients of a (when grad_a) and of b (when grad_b), as above.
inline RowSplit gradient_split(const Broadcast& bc, bool grad_a, bool grad_b) {
    if ((!grad_a || bc.a_whole) && (!grad_b || bc.b_whole)) return RowSplit::Rows;
    if ((!grad_a || bc.a_step) && (!grad_b || bc.b_step)) return RowSplit::Columns;
    return RowSplit::One;
}

// Calls row(a_offset, b_offset, out_offset, n) on runs of n elements covering every row,
// walking the outer axes like an odometer: the offsets are updated incrementally, never
// recomputed from an index.
template <class RowFn>
void for_each_row(const Broadcast& bc, RowSplit split, RowFn&& row) {
    // Rows [r0, r1), columns [c0, c1) of each.
    const auto walk = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
        // The odometer's position at r0, read off its digits from the last outer axis.
        std::vector<int64_t> index(bc.outer.size(), 0);
        int64_t ia = bc.a_step ? c0 : 0, ib = bc.b_step ? c0 : 0, rest = r0;
        for (size_t j = bc.outer.size(); j-- > 0;) {
            index[j] = rest % bc.outer[j];
            rest /= bc.outer[j];
            ia += index[j] * bc.a_stride[j];
            ib += index[j] * bc.b_stride[j];
        }
        for (int64_t r = r0; r < r1; ++r) {
            row(ia, ib, r * bc.inner + c0, c1 - c0);
            for (size_t j = bc.outer.size(); j-- > 0;) {
                ia += bc.a_stride[j];
                ib += bc.b_stride[j];
                if (++index[j] < bc.outer[j]) break;
                ia -= bc.a_stride[j] * bc.outer[j];
                ib -= bc.b_stride[j] * bc.outer[j];
                index[j] = 0;
            }
        }
    };
    const int64_t grain = kElementGrain;
    if (split == RowSplit::Columns || (split == RowSplit::Rows && bc.rows == 1)) {
        // Whole blocks of 16 columns (a cache line of floats), so that no two threads write one
        // line where the rows start on line boundaries.
        constexpr int64_t kColumns = 16;
        const int64_t blocks = (bc.inner + kColumns - 1) / kColumns;
        parallel_for(blocks, std::max<int64_t>(1, grain / (kColumns * bc.rows)), [&](int64_t b0, int64_t b1) {
            walk(0, bc.rows, b0 * kColumns, std::min(bc.inner, b1 * kColumns));
        });
        return;
    }
    const int64_t row_grain = split == RowSplit::Rows ? std::max<int64_t>(1, grain / bc.inner) : bc.rows;
    parallel_for(bc.rows, row_grain, [&](int64_t r0, int64_t r1) { walk(r0, r1, 0, bc.inner); });
}

}  // namespace patchgrad
