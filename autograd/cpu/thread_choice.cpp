#include "thread_choice.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "autograd/ops.h"
#include "autograd/rng.h"
#include "autograd/storage.h"
#include "parallel.h"

namespace patchgrad {

namespace {

// A quarter of a batch of cifar-tiny activations: 32 x 65 tokens of width 128, an MLP of 256,
// softmax rows of 65.
constexpr int64_t kTokens = 32 * 65, kDim = 128, kHidden = 256, kRow = 65;

// One round of the mix: seconds taken.
double time_mix(const std::vector<Tensor>& inputs) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> xs;
    for (const Tensor& x : inputs) xs.push_back(x.detach().requires_grad_());
    Tensor h = gelu(linear(layer_norm(xs[0], xs[1], xs[2], real(1e-6)), xs[3], xs[4]), GeluApproximation::None);
    Tensor scores = reshape(linear(h, xs[5], xs[4]), {kTokens * kHidden / kRow, kRow});
    sum(softmax(scores, -1) * reshape(xs[6], scores.shape())).backward();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

ThreadChoice choose_thread_count(int max_threads) {
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ThreadChoice choice;
    choice.candidates = std::max(1, std::min(max_threads, hardware));
    if (choice.candidates == 1) return choice;

    Rng rng(0);
    const std::vector<Tensor> inputs = {Tensor::uniform({kTokens, kDim}, -1, 1, rng),
                                        Tensor::uniform({kDim}, -1, 1, rng),
                                        Tensor::uniform({kDim}, -1, 1, rng),
                                        Tensor::uniform({kHidden, kDim}, -0.1, 0.1, rng),
                                        Tensor::uniform({kHidden}, -0.1, 0.1, rng),
                                        Tensor::uniform({kHidden, kHidden}, -0.1, 0.1, rng),
                                        Tensor::uniform({kTokens, kHidden}, -1, 1, rng)};

    const int before = num_threads();
    std::vector<double> best(static_cast<size_t>(choice.candidates) + 1, 1e30);
    time_mix(inputs);  // warm-up: the memory cache, the thread pool
    for (int round = 0; round < 3; ++round)
        for (int t = 1; t <= choice.candidates; ++t) {
            set_num_threads(t);
            best[t] = std::min(best[t], time_mix(inputs));
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
