#include "patchgrad/vit/train/thread_choice.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/vit/train/step_sample.h"

namespace patchgrad {

int64_t step_sample_task_limit(const StepSample& sample) {
    sample.seconds();  // a warm-up: the first run's allocations are not the step's loops
    // Each loop's fastest of 3 runs (the same loops in the same order each time), so that a
    // pause of the host in a short loop does not make it look like one that matters.
    std::vector<LoopRecord> loops;
    for (int run = 0; run < 3; ++run) {
        const LoopRecorder recorder;
        sample.seconds();
        if (run == 0) loops = recorder.loops();
        for (size_t i = 0; i < loops.size() && i < recorder.loops().size(); ++i)
            loops[i].seconds = std::min(loops[i].seconds, recorder.loops()[i].seconds);
    }
    double total = 0;
    for (const LoopRecord& loop : loops) total += loop.seconds;
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (const LoopRecord& loop : loops)
        if (loop.seconds >= 0.05 * total) fewest = std::min(fewest, loop_tasks(loop.n, loop.grain));
    return fewest == std::numeric_limits<int64_t>::max() ? 1 : fewest;
}

ThreadChoice choose_thread_count(int max_threads) {
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ThreadChoice choice;
    choice.candidates = std::max(1, std::min(max_threads, hardware));
    if (choice.candidates == 1) return choice;
    const StepSample sample;  // its inputs made once, for the task limit and the timing
    choice.task_limit = step_sample_task_limit(sample);
    choice.candidates = static_cast<int>(std::min<int64_t>(choice.candidates, std::max<int64_t>(1, choice.task_limit)));
    if (choice.candidates == 1) return choice;

    const int before = num_threads();
    const std::vector<double> best =  // best[t - 1]: t threads
        sample.best_seconds(choice.candidates, [](int i) { set_num_threads(i + 1); });
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
