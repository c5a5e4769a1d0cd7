#include "thread_choice.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "parallel.h"
#include "step_sample.h"

namespace patchgrad {

ThreadChoice choose_thread_count(int max_threads) {
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ThreadChoice choice;
    choice.candidates = std::max(1, std::min(max_threads, hardware));
    if (choice.candidates == 1) return choice;

    const int before = num_threads();
    const std::vector<double> best =  // best[t - 1]: t threads
        StepSample().best_seconds(choice.candidates, [](int i) { set_num_threads(i + 1); });
    set_num_threads(before);

    // The fewest threads within 5% of the fastest: one thread unless more are at least 5% faster.
    const double fastest = *std::min_element(best.begin(), best.end());
    for (int t = 1; t <= choice.candidates; ++t)
        if (best[t - 1] <= fastest * 1.05) {
            choice.threads = t;
            break;
        }
    choice.best_speedup = best[0] / fastest;
    choice.speedup = best[0] / best[choice.threads - 1];
    return choice;
}

}  // namespace patchgrad
