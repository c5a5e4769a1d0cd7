#include "thread_choice.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "autograd/storage.h"
#include "parallel.h"
#include "step_sample.h"

namespace patchgrad {

ThreadChoice choose_thread_count(int max_threads) {
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ThreadChoice choice;
    choice.candidates = std::max(1, std::min(max_threads, hardware));
    if (choice.candidates == 1) return choice;

    const StepSample sample;
    const int before = num_threads();
    std::vector<double> best(static_cast<size_t>(choice.candidates) + 1, 1e30);
    sample.seconds();  // warm-up: the memory cache, the thread pool
    for (int round = 0; round < 3; ++round)
        for (int t = 1; t <= choice.candidates; ++t) {
            set_num_threads(t);
            best[t] = std::min(best[t], sample.seconds());
        }
    set_num_threads(before);
    release_cached_memory();  // the sample's blocks: not the caller's to keep (storage.h)

    // The fewest threads within 5% of the fastest: one thread unless more are at least 5% faster.
    const double fastest = *std::min_element(best.begin() + 1, best.end());
    for (int t = 1; t <= choice.candidates; ++t)
        if (best[t] <= fastest * 1.05) {
            choice.threads = t;
            break;
        }
    choice.best_speedup = best[1] / fastest;
    choice.speedup = best[1] / best[choice.threads];
    return choice;
}

}  // namespace patchgrad
