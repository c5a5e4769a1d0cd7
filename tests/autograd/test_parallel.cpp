// parallel_for, and the promise that the thread count changes speed, never results: every
// op that uses threads gives the same bits with 1, 2 and 3 threads (a whole ViT is checked in
// tests/vit/test_vision_transformer.cpp).
#include <atomic>
#include <stdexcept>
#include <vector>

#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {
// Sets the thread count for one scope and restores 1 afterwards, even when a check fails.
struct Threads {
    explicit Threads(int n) { set_num_threads(n); }
    ~Threads() { set_num_threads(1); }
};

// The values and the input gradients of f(inputs) -> scalar loss, with `threads` threads.
std::vector<std::vector<real>> run(int threads, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                   const std::vector<Tensor>& inputs) {
    Threads guard(threads);
    std::vector<Tensor> xs;
    for (const Tensor& x : inputs) xs.push_back(x.detach().requires_grad_());
    Tensor y = f(xs);
    std::vector<std::vector<real>> result{y.to_vector()};
    Rng rng(7);
    weighted_sum(y, Tensor::uniform(y.shape(), -1, 1, rng)).backward();
    for (const Tensor& x : xs) result.push_back(x.grad().to_vector());
    return result;
}

void require_same_bits_for_any_thread_count(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                            const std::vector<Tensor>& inputs) {
    const auto one = run(1, f, inputs);
    for (int threads : {2, 3}) {
        INFO(threads << " threads");
        const auto many = run(threads, f, inputs);
        REQUIRE(many.size() == one.size());
        for (size_t k = 0; k < one.size(); ++k) {
            INFO("output 0 is the value, output k > 0 the gradient of input k - 1; k = " << k);
            REQUIRE(many[k] == one[k]);  // bit for bit
        }
    }
}
}  // namespace

TEST_CASE("parallel: parallel_for covers every index exactly once, in chunks of at least grain",
          "[parallel][ex:parallel-chunks]") {
    for (int threads : {1, 2, 3, 5}) {
        Threads guard(threads);
        for (int64_t n : {0, 1, 7, 100, 1001}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            std::atomic<int> chunks{0};
            parallel_for(n, 10, [&](int64_t begin, int64_t end) {
                ++chunks;
                REQUIRE(begin < end);
                for (int64_t i = begin; i < end; ++i) ++hits[i];
            });
            for (int64_t i = 0; i < n; ++i) REQUIRE(hits[i] == 1);
            REQUIRE(chunks <= std::max<int64_t>(1, std::min<int64_t>(threads, n / 10)));
        }
    }
}

TEST_CASE("parallel: a nested parallel_for runs inside its chunk; exceptions reach the caller",
          "[parallel][errors][ex:parallel-chunks]") {
    Threads guard(2);
    std::vector<std::atomic<int>> hits(400);
    parallel_for(4, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
            parallel_for(100, 1, [&](int64_t b2, int64_t e2) {
                for (int64_t j = b2; j < e2; ++j) ++hits[i * 100 + j];
            });
    });
    for (auto& h : hits) REQUIRE(h == 1);
    REQUIRE_THROWS_WITH(parallel_for(100, 1,
                                     [](int64_t b, int64_t) {
                                         if (b > 0) throw std::runtime_error("chunk failed");
                                     }),
                        "chunk failed");
    // The pool still works afterwards.
    std::atomic<int64_t> sum{0};
    parallel_for(100, 1, [&](int64_t b, int64_t e) { sum += e - b; });
    REQUIRE(sum == 100);
}

TEST_CASE("parallel: set_num_threads rejects fewer than one thread", "[parallel][errors]") {
    require_error([] { set_num_threads(0); }, {"set_num_threads", "at least 1", "0"});
    REQUIRE(num_threads() == 1);
}

TEST_CASE("parallel: matmul, matmul_transposed, linear, gelu, layer_norm and softmax give the same bits for 1, 2, 3 threads",
          "[parallel][op:matmul][op:linear][op:gelu][op:layer_norm][op:softmax]") {
    Rng rng(3);
    // Big enough that gemm splits its rows and the batched products split their matrices.
    require_same_bits_for_any_thread_count([](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); },
                                           {rand_tensor({300, 200}, rng), rand_tensor({200, 150}, rng)});
    require_same_bits_for_any_thread_count(
        [](const std::vector<Tensor>& x) { return matmul_transposed(x[0], x[1], real(0.25)); },
        {rand_tensor({64, 65, 32}, rng), rand_tensor({64, 65, 32}, rng)});
    require_same_bits_for_any_thread_count(
        [](const std::vector<Tensor>& x) { return linear(x[0], x[1], x[2]); },
        {rand_tensor({700, 96}, rng), rand_tensor({128, 96}, rng), rand_tensor({128}, rng)});
    require_same_bits_for_any_thread_count(
        [](const std::vector<Tensor>& x) { return gelu(x[0], GeluApproximation::None); },
        {rand_tensor({300, 400}, rng, -4, 4)});
    require_same_bits_for_any_thread_count(
        [](const std::vector<Tensor>& x) { return layer_norm(x[0], x[1], x[2], real(1e-6)); },
        {rand_tensor({3000, 48}, rng), rand_tensor({48}, rng), rand_tensor({48}, rng)});
    require_same_bits_for_any_thread_count([](const std::vector<Tensor>& x) { return softmax(x[0], -1); },
                                           {rand_tensor({2000, 65}, rng, -4, 4)});
    require_same_bits_for_any_thread_count([](const std::vector<Tensor>& x) { return log_softmax(x[0], 0); },
                                           {rand_tensor({65, 900}, rng, -4, 4)});
}
