#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace patchgrad {

namespace {

// A fixed set of worker threads. A loop is published as a "generation": the body, the
// chunking, and a count of chunks still running; worker w runs chunk w + 1 and the calling
// thread runs chunk 0.
class ThreadPool {
public:
    ~ThreadPool() { resize(0); }

    void resize(int workers) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
            ++generation_;
        }
        wake_.notify_all();
        for (std::thread& t : threads_) t.join();
        threads_.clear();
        stop_ = false;
        // A new worker waits for the generation after this one, so it cannot miss the next loop.
        for (int w = 0; w < workers; ++w) threads_.emplace_back([this, w, start = generation_] { work(w, start); });
    }

    int workers() const { return static_cast<int>(threads_.size()); }

    void run(int64_t chunks, int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& body) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            body_ = &body;
            n_ = n;
            chunk_ = chunk;
            chunks_ = chunks;
            pending_ = chunks - 1;
            error_ = nullptr;
            ++generation_;
        }
        wake_.notify_all();
        run_chunk(0);
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return pending_ == 0; });
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
    uint64_t generation_ = 0;
    bool stop_ = false;
    const std::function<void(int64_t, int64_t)>* body_ = nullptr;
    int64_t n_ = 0, chunk_ = 0, chunks_ = 0, pending_ = 0;
    std::exception_ptr error_;
};

thread_local bool inside_parallel_for = false;

void ThreadPool::work(int w, uint64_t seen) {
    inside_parallel_for = true;
    for (;;) {
        int64_t chunks;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return generation_ != seen; });
            seen = generation_;
            if (stop_) return;
            chunks = chunks_;
        }
        if (w + 1 >= chunks) continue;  // this loop has fewer chunks than workers
        run_chunk(w + 1);
        std::lock_guard<std::mutex> lock(mutex_);
        if (--pending_ == 0) done_.notify_one();
    }
}

// The thread settings: how many threads to use, and the pool that provides them.
struct ThreadSettings {
    std::mutex mutex;  // held by the running parallel loop and by set_num_threads
    std::atomic<int> threads{1};
    ThreadPool pool;
};

ThreadSettings& settings() {
    static ThreadSettings s;
    return s;
}

}  // namespace

void set_num_threads(int threads) {
    if (threads < 1 || threads > kMaxThreads)
        throw std::invalid_argument("set_num_threads: need at least 1 and at most " + std::to_string(kMaxThreads) +
                                    " threads, got " + std::to_string(threads));
    std::lock_guard<std::mutex> lock(settings().mutex);
    settings().threads = threads;
}

int num_threads() { return settings().threads; }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    if (n <= 0) return;
    // [snippet:parallel-for-serial]
    grain = std::max<int64_t>(grain, 1);
    const int64_t threads = std::min<int64_t>(num_threads(), n / grain);
    if (threads <= 1 || inside_parallel_for) {
        body(0, n);
        return;
    }
    // [/snippet:parallel-for-serial]
    // [exercise:parallel-chunks]
    // [snippet:parallel-chunks]
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
    // [/snippet:parallel-chunks]
    // [/exercise:parallel-chunks]
}

}  // namespace patchgrad
