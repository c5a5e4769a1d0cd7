// thread_choice.h — how many threads pay on this machine, measured once.
//
// More threads are not always faster. On a machine whose two vCPUs are the two hyperthreads of
// one core, a second thread shares the core's floating-point units: it barely helps a matrix
// product and helps the memory-bound passes (LayerNorm, softmax, copies) only in part, while
// a machine with real cores gains nearly 2x. Rather than guess from the core count,
// choose_thread_count times a sample of the training step's work (step_sample.h: linear
// layers forward and backward, LayerNorm, GELU, softmax, on a quarter of a cifar-tiny batch)
// on 1, 2, ... threads, alternating, best of 3 each, and keeps the fewest threads within 5% of the fastest: more
// threads are chosen only when they measured at least 5% faster than one, so the choice is
// never slower than one thread. It never tries more threads than the sample's main loops offer
// tasks (task_limit). It takes about a quarter of a second. Results are identical for any
// thread count (parallel.h), so the choice changes speed only.
#pragma once

#include <cstdint>

#include "patchgrad/vit/train/step_sample.h"

namespace patchgrad {

struct ThreadChoice {
    int threads = 1;          // the count chosen
    double speedup = 1;       // its measured speed over one thread
    int candidates = 1;       // counts tried: 1 .. candidates
    double best_speedup = 1;  // the fastest count's speed over one thread
    int64_t task_limit = 0;   // the fewest tasks offered by a loop holding 5% of the sample's time
};

// The fewest tasks (loop_tasks, parallel.h) offered by the parallel loops that take at least 5%
// of the step sample's time: threads beyond it would wait through those loops.
int64_t step_sample_task_limit(const StepSample& sample);

// Tries 1 .. min(max_threads, hardware threads, the step sample's task limit) threads; leaves the
// thread setting as it found it.
ThreadChoice choose_thread_count(int max_threads);

}  // namespace patchgrad
