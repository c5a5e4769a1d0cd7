#include "patchgrad/autograd/cpu/threads/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "patchgrad/autograd/check.h"

namespace patchgrad {

namespace {

// Waiting politely. Waking a sleeping thread costs a system call on one side and a context
// switch on the other, several microseconds each, and a ViT training step runs a few hundred
// loops: sleeping between them costs several % of a step (perf: the kernel's wake-up and
// task-switch functions). So a thread that waits, a worker for the next loop or the caller for
// its workers, first spins on an atomic for up to kSpin, pausing between looks (the pause
// instruction leaves the core's other hyper-thread its units), and only then sleeps on a
// condition variable. OpenMP runtimes do the same (OMP_WAIT_POLICY, KMP_BLOCKTIME).
constexpr std::chrono::microseconds kSpin{200};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Spins until ready() holds or kSpin has passed; returns whether it holds.
template <class Ready>
bool spin_until(const Ready& ready) {
    const auto deadline = std::chrono::steady_clock::now() + kSpin;
    for (int look = 1;; ++look) {
        if (ready()) return true;
        cpu_relax();
        if (look % 64 == 0 && std::chrono::steady_clock::now() > deadline) return false;
    }
}

// A fixed set of worker threads. A loop is published as a "generation": the body, the
// chunking, and a count of workers still busy with it; worker w runs chunk w + 1 and the
// calling thread runs chunk 0. The loop's fields are written only while every worker is idle
// (the previous loop waited for all of them), and published by the release store of
// generation_ that a worker's acquire load sees.
class ThreadPool {
public:
    ~ThreadPool() { resize(0); }

    void resize(int workers) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        for (std::thread& t : threads_) t.join();
        threads_.clear();
        stop_ = false;
        // A new worker waits for the generation after this one, so it cannot miss the next loop.
        const uint64_t start = generation_.load();
        for (int w = 0; w < workers; ++w) threads_.emplace_back([this, w, start] { work(w, start); });
    }

    int workers() const { return static_cast<int>(threads_.size()); }

    void run(int64_t chunks, int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& body) {
        body_ = &body;
        n_ = n;
        chunk_ = chunk;
        chunks_ = chunks;
        error_ = nullptr;
        busy_.store(workers(), std::memory_order_relaxed);  // every worker reports, chunk or not
        {
            std::lock_guard<std::mutex> lock(mutex_);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        run_chunk(0);
        const auto all_done = [this] { return busy_.load(std::memory_order_acquire) == 0; };
        if (!spin_until(all_done)) {
            std::unique_lock<std::mutex> lock(mutex_);
            done_.wait(lock, all_done);
        }
        body_ = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

private:
    void run_chunk(int64_t c) {
        const int64_t begin = c * chunk_, end = std::min(n_, begin + chunk_);
        try {
            if (begin < end) (*body_)(begin, end);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
        }
    }

    void work(int w, uint64_t seen);

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> threads_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> busy_{0};
    bool stop_ = false;
    const std::function<void(int64_t, int64_t)>* body_ = nullptr;
    int64_t n_ = 0, chunk_ = 0, chunks_ = 0;
    std::exception_ptr error_;
};

thread_local bool inside_parallel_for = false;
// On the thread that called an outermost loop while a LoopRecorder records: set while it runs,
// so that the loops and products inside it count as nested even when it runs serially.
thread_local bool in_outer_loop = false;
// The label of the innermost LoopLabel alive on this thread, or null.
thread_local const std::string* current_label = nullptr;

void ThreadPool::work(int w, uint64_t seen) {
    inside_parallel_for = true;
    const auto published = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    for (;;) {
        if (!spin_until(published)) {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, published);
        }
        seen = generation_.load(std::memory_order_acquire);
        if (stop_) return;
        if (w + 1 < chunks_) run_chunk(w + 1);  // a loop may have fewer chunks than workers
        // The last worker to finish wakes the caller if it went to sleep. Taking the mutex
        // first means the caller is either not yet waiting (and will see busy_ == 0) or
        // already asleep (and gets the notification).
        if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lock(mutex_);
            done_.notify_one();
        }
    }
}

// The thread settings: how many threads to use, and the pool that provides them.
struct ThreadSettings {
    std::mutex mutex;  // held by the running parallel loop and by set_num_threads
    std::atomic<int> threads{1};
    ThreadPool pool;
    std::atomic<LoopRecorder*> recorder{nullptr};  // the LoopRecorder alive, if any
};

ThreadSettings& settings() {
    static ThreadSettings s;
    return s;
}

}  // namespace

void set_num_threads(int threads) {
    check(threads >= 1 && threads <= kMaxThreads, "set_num_threads: need at least 1 and at most ", kMaxThreads,
          " threads, got ", threads);
    std::lock_guard<std::mutex> lock(settings().mutex);
    settings().threads = threads;
}

int num_threads() { return settings().threads; }

// While it lives, an outermost parallel loop run under a LoopRecorder: marks the calling thread
// as inside it, and at the end records the loop with its time. (Not in the unnamed namespace:
// LoopRecorder names it a friend.)
class OuterLoop {
public:
    OuterLoop(int64_t n, int64_t grain, LoopSite site)
        : recorder_(inside_parallel_for || in_outer_loop ? nullptr : settings().recorder.load()),
          n_(n),
          grain_(grain),
          site_(site) {
        if (!recorder_) return;
        const int64_t threads = std::min<int64_t>(num_threads(), loop_tasks(n, grain));
        const int64_t chunk = (n + threads - 1) / threads;
        recorder_->outer_chunks_ = threads <= 1 ? 1 : (n + chunk - 1) / chunk;  // as parallel_for cuts it
        in_outer_loop = true;
        start_ = std::chrono::steady_clock::now();
    }
    ~OuterLoop() {
        if (!recorder_) return;
        in_outer_loop = false;
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
        try {
            recorder_->loops_.push_back(
                {site_.file, site_.line, current_label ? *current_label : std::string(), n_, grain_, took.count()});
        } catch (...) {  // a diagnostic: a record lost to a full memory must not end the program
        }
    }
    OuterLoop(const OuterLoop&) = delete;
    OuterLoop& operator=(const OuterLoop&) = delete;

private:
    LoopRecorder* recorder_;
    int64_t n_, grain_;
    LoopSite site_;
    std::chrono::steady_clock::time_point start_;
};

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body, LoopSite site) {
    if (n <= 0) return;
    const OuterLoop recorded(n, grain, site);
    // [snippet:parallel-for-serial]
    grain = std::max<int64_t>(grain, 1);
    const int64_t threads = std::min<int64_t>(num_threads(), n / grain);
    if (threads <= 1 || inside_parallel_for) {
        body(0, n);
        return;
    }
    // [/snippet:parallel-for-serial]
    // [exercise:parallel-chunks]
    const int64_t chunk = (n + threads - 1) / threads;
    const int64_t chunks = (n + chunk - 1) / chunk;
    ThreadSettings& s = settings();
    std::lock_guard<std::mutex> lock(s.mutex);  // one parallel loop at a time
    if (s.pool.workers() < num_threads() - 1) s.pool.resize(num_threads() - 1);
    inside_parallel_for = true;
    try {
        s.pool.run(chunks, n, chunk, body);
    } catch (...) {
        inside_parallel_for = false;
        throw;
    }
    inside_parallel_for = false;
    // [/exercise:parallel-chunks]
}

LoopRecorder::LoopRecorder() {
    LoopRecorder* none = nullptr;
    check(settings().recorder.compare_exchange_strong(none, this), "LoopRecorder: one is recording already");
}

LoopRecorder::~LoopRecorder() { settings().recorder = nullptr; }

double LoopRecorder::product_seconds() const { return outer_product_seconds_ + nested_product_nanoseconds_ * 1e-9; }

LoopLabel::LoopLabel(const std::string& label) : before_(current_label) { current_label = &label; }

LoopLabel::~LoopLabel() { current_label = before_; }

bool recording_loops() { return settings().recorder.load(std::memory_order_relaxed) != nullptr; }

void add_product_seconds(double seconds) {
    LoopRecorder* recorder = settings().recorder.load();
    if (!recorder) return;
    if (inside_parallel_for || in_outer_loop)  // one chunk's share of a loop's wall time
        recorder->nested_product_nanoseconds_ += static_cast<int64_t>(seconds * 1e9 / recorder->outer_chunks_);
    else
        recorder->outer_product_seconds_ += seconds;
}

std::vector<std::vector<int64_t>> balanced_bins(const std::vector<int64_t>& sizes, int64_t max_bins) {
    check(max_bins >= 1, "balanced_bins: needs at least one bin, got max_bins = ", max_bins);
    const int64_t count = std::min(static_cast<int64_t>(sizes.size()), max_bins);
    const auto largest_first = [](const std::vector<int64_t>& size) {
        std::vector<int64_t> order(size.size());
        std::iota(order.begin(), order.end(), int64_t(0));
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return size[a] > size[b]; });
        return order;
    };
    std::vector<std::vector<int64_t>> bins(count);
    std::vector<int64_t> sums(count, 0);
    for (const int64_t i : largest_first(sizes)) {
        const int64_t b = std::min_element(sums.begin(), sums.end()) - sums.begin();
        bins[b].push_back(i);
        sums[b] += sizes[i];
    }
    const std::vector<int64_t> down = largest_first(sums);
    std::vector<std::vector<int64_t>> folded;
    folded.reserve(count);
    for (int64_t j = 0; j < count; ++j) folded.push_back(std::move(bins[down[j % 2 == 0 ? j / 2 : count - 1 - j / 2]]));
    return folded;
}

std::vector<real> sum_rows(int64_t rows, int64_t width,
                           const std::function<void(int64_t r0, int64_t r1, real* acc)>& add_rows, LoopSite site) {
    return RowSums(rows, width, add_rows).total(site);  // no rows taken: total() sums every block
}

RowSums::RowSums(int64_t rows, int64_t width, std::function<void(int64_t, int64_t, real*)> add_rows)
    : rows_(std::max<int64_t>(rows, 0)),
      width_(std::max<int64_t>(width, 0)),
      block_(sum_row_block(rows_)),
      add_rows_(std::move(add_rows)),
      partial_(static_cast<size_t>((rows_ + block_ - 1) / block_ * width_), real(0)),
      reached_(static_cast<size_t>((rows_ + block_ - 1) / block_)) {
    for (size_t b = 0; b < reached_.size(); ++b) reached_[b].store(static_cast<int64_t>(b) * block_);
}

void RowSums::take(int64_t r0, int64_t r1) {
    if (width_ == 0) return;
    for (int64_t b = std::max<int64_t>(r0, 0) / block_; b * block_ < std::min(r1, rows_); ++b) {
        const int64_t lo = std::max(r0, b * block_), hi = std::min({r1, (b + 1) * block_, rows_});
        // Only the range that starts where the block's sum has reached goes on with it; the
        // release below makes its partial visible to the thread that takes the next range.
        if (reached_[b].load(std::memory_order_acquire) != lo) continue;
        add_rows_(lo, hi, partial_.data() + b * width_);
        reached_[b].store(hi, std::memory_order_release);
    }
}

std::vector<real> RowSums::total(LoopSite site) {
    std::vector<real> total(static_cast<size_t>(width_), real(0));
    if (width_ == 0) return total;
    const int64_t blocks = static_cast<int64_t>(reached_.size());
    parallel_for(
        blocks, 1,
        [&](int64_t b0, int64_t b1) {
            for (int64_t b = b0; b < b1; ++b) {
                const int64_t r0 = b * block_, r1 = std::min(rows_, r0 + block_);
                if (reached_[b].load() == r1) continue;
                real* acc = partial_.data() + b * width_;  // begun out of order, or rows never taken: again
                std::fill(acc, acc + width_, real(0));
                add_rows_(r0, r1, acc);
            }
        },
        site);
    for (int64_t b = 0; b < blocks; ++b)
        for (int64_t j = 0; j < width_; ++j) total[j] += partial_[b * width_ + j];
    return total;
}

}  // namespace patchgrad
