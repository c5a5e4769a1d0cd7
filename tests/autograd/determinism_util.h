// determinism_util.h — the promise that threads and instruction-set levels change speed, not
// results: running one op with settings changed for a scope, and the ops that use threads.
// Shared by test_parallel.cpp (float64: same bits for 1, 2, 3, 8 and 16 threads) and test_isa_f32.cpp
// (float32: the same at every instruction-set level, and the levels agree within rounding).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad::test {

// The thread counts whose results must equal one thread's, bit for bit: 8 and 16 as a laptop
// has cores (oversubscribed on a smaller machine: the chunks still cut the work the same way).
constexpr int kThreadCounts[] = {2, 3, 8, 16};

// Sets the thread count for one scope and restores 1 afterwards, even when a check fails.
struct ThreadCount {
    explicit ThreadCount(int n) { set_num_threads(n); }
    ~ThreadCount() { set_num_threads(1); }
};

// Sets the instruction-set level for one scope and restores the one before.
struct IsaLevel {
    explicit IsaLevel(Isa isa) : saved(active_isa()) { set_isa(isa); }
    ~IsaLevel() { set_isa(saved); }
    Isa saved;
};

// Calls body() once at every instruction-set level this CPU supports, lowest first.
template <class Body>
void for_each_isa(Body&& body) {
    for (Isa isa : supported_isas()) {
        INFO("instruction set " << isa_name(isa));
        IsaLevel level(isa);
        body(isa);
    }
}

using LossFn = std::function<Tensor(const std::vector<Tensor>&)>;

// The values of f(inputs) and the gradients of a fixed random weighting of them with respect to
// every input, with `threads` threads: output 0 is the value, output k > 0 the gradient of
// input k - 1.
inline std::vector<std::vector<real>> values_and_gradients(int threads, const LossFn& f,
                                                           const std::vector<Tensor>& inputs) {
    ThreadCount guard(threads);
    std::vector<Tensor> xs;
    for (const Tensor& x : inputs) xs.push_back(x.detach().requires_grad_());
    Tensor y = f(xs);
    std::vector<std::vector<real>> result{y.to_vector()};
    Rng rng(7);
    weighted_sum(y, Tensor::uniform(y.shape(), -1, 1, rng)).backward();
    for (const Tensor& x : xs) result.push_back(x.grad().to_vector());
    return result;
}

inline void require_same_bits_for_any_thread_count(const LossFn& f, const std::vector<Tensor>& inputs) {
    const auto one = values_and_gradients(1, f, inputs);
    for (int threads : kThreadCounts) {
        INFO(threads << " threads");
        const auto many = values_and_gradients(threads, f, inputs);
        REQUIRE(many.size() == one.size());
        for (size_t k = 0; k < one.size(); ++k) {
            INFO("output 0 is the value, output k > 0 the gradient of input k - 1; k = " << k);
            REQUIRE(many[k] == one[k]);  // bit for bit
        }
    }
}

struct OpCase {
    std::string name;
    LossFn f;
    std::vector<Tensor> inputs;
};

// Every op that splits work across threads or has a kernel per instruction-set level, at sizes
// big enough that gemm splits its rows, the batched products split their matrices, the copies
// and elementwise ops split their rows, and the vector loops run whole vectors and a tail.
inline std::vector<OpCase> threaded_op_cases(Rng& rng) {
    return {
        {"matmul",
         [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); },
         {rand_tensor({300, 200}, rng), rand_tensor({200, 150}, rng)}},
        {"matmul_transposed",
         [](const std::vector<Tensor>& x) { return matmul_transposed(x[0], x[1], real(0.25)); },
         {rand_tensor({64, 65, 32}, rng), rand_tensor({64, 65, 32}, rng)}},
        // [hide:attention-backward]
        {"scaled_dot_product_attention",  // cifar-tiny's 65 tokens, 4 heads of 32
         [](const std::vector<Tensor>& x) { return scaled_dot_product_attention(x[0], 4); },
         {rand_tensor({6, 65, 3 * 128}, rng)}},
        {"scaled_dot_product_attention with a learned scale per head",  // 3 heads of 16, 17 tokens
         [](const std::vector<Tensor>& x) { return scaled_dot_product_attention(x[0], 3, Tensor(), x[1]); },
         {rand_tensor({5, 17, 3 * 48}, rng), rand_tensor({3}, rng, real(0.2), real(0.6))}},
        // [/hide:attention-backward]
        {"linear",
         [](const std::vector<Tensor>& x) { return linear(x[0], x[1], x[2]); },
         {rand_tensor({700, 96}, rng), rand_tensor({128, 96}, rng), rand_tensor({128}, rng)}},
        {"linear with few output features: its weight gradient split across K (gemm_k_groups)",
         [](const std::vector<Tensor>& x) { return linear(x[0], x[1], x[2]); },
         {rand_tensor({2000, 40}, rng), rand_tensor({24, 40}, rng), rand_tensor({24}, rng)}},
        {"mlp: GELU and its derivative on rows of the products as gemm finishes them",
         [](const std::vector<Tensor>& x) { return mlp(x[0], x[1], x[2], x[3], x[4]); },
         {rand_tensor({700, 40}, rng), rand_tensor({96, 40}, rng), rand_tensor({96}, rng), rand_tensor({40, 96}, rng),
          rand_tensor({40}, rng)}},
        {"linear and mlp with a residual added to rows as gemm finishes them",
         [](const std::vector<Tensor>& x) {
             const Tensor h = linear(x[0], x[1], x[2], x[0]);
             return mlp(h, x[3], x[4], x[5], x[6], GeluApproximation::None, h);
         },
         {rand_tensor({700, 40}, rng), rand_tensor({40, 40}, rng), rand_tensor({40}, rng), rand_tensor({96, 40}, rng),
          rand_tensor({96}, rng), rand_tensor({40, 96}, rng), rand_tensor({40}, rng)}},
        {"gelu",
         [](const std::vector<Tensor>& x) { return gelu(x[0], GeluApproximation::None); },
         {rand_tensor({300, 400}, rng, -4, 4)}},
        {"gelu tanh",
         [](const std::vector<Tensor>& x) { return gelu(x[0], GeluApproximation::Tanh); },
         {rand_tensor({30, 401}, rng, -4, 4)}},
        {"layer_norm",
         [](const std::vector<Tensor>& x) { return layer_norm(x[0], x[1], x[2], real(1e-6)); },
         {rand_tensor({3000, 48}, rng), rand_tensor({48}, rng), rand_tensor({48}, rng)}},
        {"softmax",
         [](const std::vector<Tensor>& x) { return softmax(x[0], -1); },
         {rand_tensor({2000, 65}, rng, -4, 4)}},
        {"log_softmax, last axis",
         [](const std::vector<Tensor>& x) { return log_softmax(x[0], -1); },
         {rand_tensor({200, 37}, rng, -4, 4)}},
        {"log_softmax, axis 0",
         [](const std::vector<Tensor>& x) { return log_softmax(x[0], 0); },
         {rand_tensor({65, 900}, rng, -4, 4)}},
        // Elementwise ops split their output's rows. A gradient summed over rows splits its
        // columns (the [1, 65, 32] operand below); one summed along a row keeps one thread
        // (the [300, 1] column).
        {"add, same shapes",
         [](const std::vector<Tensor>& x) { return x[0] + x[1]; },
         {rand_tensor({300, 400}, rng), rand_tensor({300, 400}, rng)}},
        {"mul, a [300, 1] column",
         [](const std::vector<Tensor>& x) { return x[0] * x[1]; },
         {rand_tensor({300, 400}, rng), rand_tensor({300, 1}, rng)}},
        {"add, [64, 65, 32] + [1, 65, 32]",
         [](const std::vector<Tensor>& x) { return x[0] + x[1]; },
         {rand_tensor({64, 65, 32}, rng), rand_tensor({1, 65, 32}, rng)}},
        {"broadcast_to",
         [](const std::vector<Tensor>& x) {
             return broadcast_to(x[0], {64, 65, 32});
         },
         {rand_tensor({65, 32}, rng)}},
        // Copies split their rows.
        {"permute, whole rows",
         [](const std::vector<Tensor>& x) {
             return permute(x[0], {0, 2, 1, 3});
         },
         {rand_tensor({16, 65, 4, 32}, rng)}},
        {"transpose, single elements",
         [](const std::vector<Tensor>& x) { return transpose(x[0], 1, 2); },
         {rand_tensor({64, 65, 33}, rng)}},
        {"slice, middle axis",
         [](const std::vector<Tensor>& x) { return slice(x[0], 1, 1, 3); },
         {rand_tensor({300, 5, 400}, rng)}},
        {"concat, a class token before the patches",
         [](const std::vector<Tensor>& x) {
             return concat({x[0], x[1]}, 1);
         },
         {rand_tensor({64, 1, 32}, rng), rand_tensor({64, 64, 32}, rng)}},
        {"concat, one tensor twice and a constant between",
         [](const std::vector<Tensor>& x) {
             return concat({x[0], Tensor::full({64, 3, 32}, 0.5), x[0]}, 1);
         },
         {rand_tensor({64, 40, 32}, rng)}},
        {"gather_rows, repeated rows",
         [](const std::vector<Tensor>& x) {
             std::vector<int64_t> index;
             for (int64_t b = 0; b < 64; ++b)
                 for (int64_t k = 0; k < 50; ++k) index.push_back((b * 7 + k * 3) % 65);
             return gather_rows(x[0], index);
         },
         {rand_tensor({64, 65, 32}, rng)}},
    };
}

}  // namespace patchgrad::test
