// parallel.h — the thread settings and the one parallel loop the heavy ops use.
//
// Determinism. parallel_for splits [0, n) into contiguous chunks, one per thread, and each
// index is processed exactly as it would be on one thread: the ops only parallelise over
// independent outputs (rows of a matmul result, rows of a softmax, elements of GELU); a sum
// over rows goes to the threads only through sum_rows, whose blocks of rows are fixed. So the
// thread count changes speed, never a single bit of a result
// (tests/autograd/cpu/test_parallel.cpp runs the ops with 1, 2 and 3 threads and compares
// bit for bit).
//
// The workers are started on first use. Between loops they spin for a moment, then sleep
// (parallel.cpp says why). A parallel_for called from inside another one runs serially on
// the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/real.h"

namespace patchgrad {

// The most threads set_num_threads accepts: more than any CPU this runs on has cores, and
// far fewer than would exhaust the system (each is a real thread with its own stack).
constexpr int kMaxThreads = 1024;

// The number of threads parallel_for uses (default 1), 1 to kMaxThreads. Like
// torch.set_num_threads.
void set_num_threads(int threads);
int num_threads();

// Calls body(begin, end) on disjoint chunks covering [0, n), in parallel when there are at
// least 2 * grain indices and more than one thread. Chunks hold at least `grain` indices
// (except the last), so a loop of little work per index does not pay to wake threads.
// An exception thrown by a body is rethrown on the calling thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body);

// The grain for a loop whose every index costs `work_per_index` units of work: chunks of at
// least `chunk_work` units, below which waking a second thread costs more than it saves.
inline int64_t grain_for(int64_t work_per_index, int64_t chunk_work) { return chunk_work / (work_per_index + 1) + 1; }

// Multiply-adds: chunks of at least ~2^19 (some ten microseconds of arithmetic). matmul's
// batches, attention's heads and gemm's row slivers use it.
inline int64_t grain_for_multiply_adds(int64_t multiply_adds) { return grain_for(multiply_adds, int64_t(1) << 19); }

// Elements of a pass over memory with a few operations on each (softmax and LayerNorm rows,
// permuting copies): chunks of at least ~2^14 elements.
inline int64_t grain_for_elements(int64_t elements_per_index) {
    return grain_for(elements_per_index, int64_t(1) << 14);
}

// The sum over rows [0, rows) of a vector of `width` reals per row (a bias gradient: the
// column sums of dOut), on the threads, in an order that no thread count changes. The rows are
// cut into fixed blocks of kSumRowBlock; add_rows(r0, r1, acc) adds rows [r0, r1) into a
// block's acc[0, width), which starts at zero, in row order; the blocks' sums are then added
// in block order. Splitting the columns over the threads instead keeps the order too, but each
// thread then streams through every row for a part of it, far slower on two threads than on one
// (tutorials/12_speed/measurements.md#kernel-notes).
constexpr int64_t kSumRowBlock = 256;
std::vector<real> sum_rows(int64_t rows, int64_t width,
                           const std::function<void(int64_t r0, int64_t r1, real* acc)>& add_rows);

}  // namespace patchgrad
