// step_sample.h — a sample of a training step's work, timed: how `train` and `bench` learn what
// pays on the machine they run on, instead of guessing from the CPU's name. The library offers
// the settings (set_num_threads, set_matmul_precision); choosing them is the program's job.
//
// The sample is a quarter of a cifar-tiny batch: 32 x 65 tokens of width 128 through LayerNorm,
// a linear layer to 256, GELU, a second linear layer, softmax rows of 65, and the backward of
// all of it. Two settings are chosen or checked with it:
//  - the thread count (choose_thread_count, thread_choice.h);
//  - bf16 products (measure_bf16_speedup, below). An instruction set says what a CPU can do,
//    not how fast: an Intel Xeon of CPU family 6 model 207 has AVX512_BF16 but issues
//    vdpbf16ps at a quarter of the FMA's rate, so bf16 trains *slower* there than float32,
//    while an AMD Zen 5 issues it at the FMA's rate (chapter 12.9). `train` and `bench` with
//    --precision bf16 measure it and say so in their headers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/precision.h"
#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

class StepSample {
public:
    StepSample();  // the inputs, from a fixed seed
    // Runs the sample once, forward and backward, with the current threads and matmul precision.
    double seconds() const;
    // The best of 3 runs under each of `settings` settings, apply(i) putting setting i in force:
    // one warm-up run under each first (the memory cache, the thread pool, a kernel's first
    // use), then rounds that run every setting in turn, so that a drift of the host's speed
    // falls on all of them alike. Leaves setting settings - 1 in force and the storage cache
    // emptied of the sample's blocks (storage.h: not the caller's to keep).
    std::vector<double> best_seconds(int settings, const std::function<void(int)>& apply) const;

private:
    std::vector<Tensor> inputs_;
};

// float32's time for the sample over bf16's (above 1: bf16 is faster), the two alternating,
// best of 3 each, on the current threads; leaves the matmul precision as it found it. Only a
// speed: results never depend on it. About a tenth of a second.
double measure_bf16_speedup();

// The line for a bf16 run whose speedup measured `speedup`: the figure, and below 1 a warning
// that float32 is faster.
std::string bf16_speed_note(double speedup);

// What the headers of `train` and `bench` print below their "precision:" line: for bf16 on a
// native kernel, bf16_speed_note of measure_bf16_speedup() and a newline; otherwise nothing (the
// float32 line needs none, and the emulation's says it is not faster).
std::string bf16_header_note(MatmulPrecision precision);

}  // namespace patchgrad
