// parallel.h — the thread settings and the one parallel loop the heavy ops use.
//
// Determinism. parallel_for splits [0, n) into contiguous chunks, one per thread, and each
// index is processed exactly as it would be on one thread: the ops only parallelise over
// independent outputs (rows of a matmul result, rows of a softmax, elements of GELU); a sum
// over rows goes to the threads only through sum_rows, whose blocks of rows are fixed. So the
// thread count changes speed, never a single bit of a result
// (tests/autograd/cpu/threads/test_parallel.cpp runs the ops with 1, 2 and 3 threads and compares
// bit for bit).
//
// The workers are started on first use. Between loops they spin for a moment, then sleep
// (parallel.cpp says why). A parallel_for called from inside another one runs serially on
// the calling thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "patchgrad/autograd/real.h"

namespace patchgrad {

// The most threads set_num_threads accepts: more than any CPU this runs on has cores, and
// far fewer than would exhaust the system (each is a real thread with its own stack).
constexpr int kMaxThreads = 1024;

// The number of threads parallel_for uses (default 1), 1 to kMaxThreads. Like
// torch.set_num_threads.
void set_num_threads(int threads);
int num_threads();

// Where a parallel loop is written. As a default argument, __builtin_FILE and __builtin_LINE
// (GCC, clang) give the caller's file and line: a LoopRecorder (below) names loops by them.
struct LoopSite {
    const char* file;
    int line;
};

// Calls body(begin, end) on disjoint chunks covering [0, n), in parallel when there are at
// least 2 * grain indices and more than one thread. Chunks hold at least `grain` indices
// (except the last), so a loop of little work per index does not pay to wake threads.
// An exception thrown by a body is rethrown on the calling thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body,
                  LoopSite site = {__builtin_FILE(), __builtin_LINE()});

// The most chunks parallel_for cuts [0, n) into with a given grain, however many threads there
// are: the independent tasks the loop offers.
inline int64_t loop_tasks(int64_t n, int64_t grain) {
    return n <= 0 ? 0 : std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
}

// One outermost parallel loop as it ran: where, what it was doing (the label of the innermost
// LoopLabel alive on the calling thread, e.g. a product's shape), its size and grain, and how
// long it took. Loops nested inside another run serially in its chunks and are not recorded.
struct LoopRecord {
    std::string file;
    int line = 0;
    std::string label;
    int64_t n = 0, grain = 1;
    double seconds = 0;
};

// While it lives, every outermost parallel_for, and the time spent in matrix products (gemm.h
// reports it through add_product_seconds), is recorded: what `patchgrad bench --explain`
// prints. One at a time, made and read on the thread that runs the loops: a diagnostic setting
// of the library, like the thread count, that never changes a result.
class LoopRecorder {
public:
    LoopRecorder();
    ~LoopRecorder();
    LoopRecorder(const LoopRecorder&) = delete;
    LoopRecorder& operator=(const LoopRecorder&) = delete;

    const std::vector<LoopRecord>& loops() const { return loops_; }
    // Wall time inside matrix products: outermost products' own time, plus products run inside
    // a parallel loop, their threads' time divided by the loop's chunks.
    double product_seconds() const;

private:
    friend class OuterLoop;
    friend void add_product_seconds(double seconds);
    std::vector<LoopRecord> loops_;
    double outer_product_seconds_ = 0;
    std::atomic<int64_t> nested_product_nanoseconds_{0};  // summed over threads, already divided
    std::atomic<int64_t> outer_chunks_{1};                // of the outermost loop running now
};

// While it lives, loops and products started on this thread carry `label` (no copy is made:
// the string must outlive the guard). Cheap when no LoopRecorder is alive.
class LoopLabel {
public:
    explicit LoopLabel(const std::string& label);
    ~LoopLabel();
    LoopLabel(const LoopLabel&) = delete;
    LoopLabel& operator=(const LoopLabel&) = delete;

private:
    const std::string* before_;
};

// Whether a LoopRecorder is alive (so that a product need not read the clock otherwise), and the
// report of one product's time on the calling thread: `seconds` of wall time (an outermost
// product) or of one thread inside a parallel loop's chunk (divided by the loop's chunks).
bool recording_loops();
void add_product_seconds(double seconds);

// Runs work(), and while a LoopRecorder lives reports its time as a product's: gemm's, and a
// kernel that does products with what lies between them (attention's heads).
template <class Work>
void as_products(Work&& work) {
    if (!recording_loops()) return work();
    const auto start = std::chrono::steady_clock::now();
    work();
    add_product_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

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

// Elements of a pass that does next to nothing per element (a fill, a copy, an addition): chunks
// of at least 2^15, which still gives a cifar-tiny step's passes 16 tasks or more.
constexpr int64_t kElementGrain = int64_t(1) << 15;

// Tasks of unequal sizes (an optimizer's parameters) in at most max_bins bins (max_bins >= 1),
// for parallel_for to share out whole bins: the largest task first, each into the bin with the
// smallest sum so far (the greedy rule for balancing loads), then the bins from the largest sum
// down, folded (the largest, the smallest, the second largest, the second smallest, ...), so that
// runs of consecutive bins, parallel_for's chunks, are as even as whole tasks allow for any
// thread count. Each bin lists task indices; the bins depend on the sizes only.
std::vector<std::vector<int64_t>> balanced_bins(const std::vector<int64_t>& sizes, int64_t max_bins);

// The sum over rows [0, rows) of a vector of `width` reals per row (a bias gradient: the
// column sums of dOut), on the threads, in an order that no thread count changes. The rows are
// cut into fixed blocks of sum_row_block(rows); add_rows(r0, r1, acc) adds rows [r0, r1) into a
// block's acc[0, width), which starts at zero, in row order; the blocks' sums are then added
// in block order. Splitting the columns over the threads instead keeps the order too, but each
// thread then streams through every row for a part of it, far slower on two threads than on one
// (tutorials/12_speed/measurements.md#kernel-notes).
//
// The blocks: at most kSumRowBlocks, of at least kSumRowMin rows (the last may be shorter), so
// that a sum of 128 rows or more offers 16 to 64 tasks; they depend on `rows` only.
constexpr int64_t kSumRowBlocks = 64, kSumRowMin = 8;
inline int64_t sum_row_block(int64_t rows) { return std::max(kSumRowMin, (rows + kSumRowBlocks - 1) / kSumRowBlocks); }
std::vector<real> sum_rows(int64_t rows, int64_t width,
                           const std::function<void(int64_t r0, int64_t r1, real* acc)>& add_rows,
                           LoopSite site = {__builtin_FILE(), __builtin_LINE()});

// sum_rows's sums, bit for bit, taken while another loop visits the rows: a matrix product's
// rows_done (gemm.h) says which rows of dOut it has just read, and a bias gradient sums them then,
// from cache, instead of reading dOut again. take(r0, r1), from any thread, for disjoint ranges:
// the rows go into their blocks if they continue a block in row order (one thread's blocks of
// rows arrive in order; a block split between two threads may not), and total() sums again every
// block left unfinished, then adds the blocks in order, as sum_rows does.
class RowSums {
public:
    RowSums(int64_t rows, int64_t width, std::function<void(int64_t r0, int64_t r1, real* acc)> add_rows);
    void take(int64_t r0, int64_t r1);
    std::vector<real> total(LoopSite site = {__builtin_FILE(), __builtin_LINE()});

private:
    int64_t rows_, width_, block_;
    std::function<void(int64_t, int64_t, real*)> add_rows_;
    std::vector<real> partial_;                  // [blocks, width]
    std::vector<std::atomic<int64_t>> reached_;  // [blocks]: the row each block's sum has reached
};

}  // namespace patchgrad
