// attention's AVX-512 per-head kernel (autograd/cpu/rows/attention_heads_avx512.cpp) against
// the gemm-based loop of attention_heads.cpp, which the other levels run and the float64 tests
// check against chapter 7's steps and finite differences. Only float32 has the kernel.
#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/cpu/rows/attention_heads_avx512.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

struct Heads {
    int64_t B, N, heads, d;
    bool bias, learned, grad_already_there;
};

// A forward and a backward: the output, the A handed out, and the gradients of qkv and of the
// learned scales. With grad_already_there qkv's gradient has arrived from a second use first,
// so the kernel adds into it (beta 1) instead of writing it.
std::vector<Tensor> run(const Heads& c) {
    Rng rng(c.N * 100 + c.d);
    Tensor qkv = rand_tensor({c.B, c.N, 3 * c.heads * c.d}, rng, -2, 2);
    Tensor scale = c.learned ? rand_tensor({c.heads}, rng, real(0.2), real(0.8)) : Tensor();
    Tensor key_bias;
    if (c.bias) {
        std::vector<real> bias(c.N);
        for (int64_t j = 0; j < c.N; ++j) bias[j] = j % 5 == 3 ? -std::numeric_limits<real>::infinity() : real(0.1 * j);
        key_bias = Tensor::from_vector({c.N}, bias);
    }
    Tensor attention;
    const Tensor out = scaled_dot_product_attention(qkv, c.heads, key_bias, scale, &attention);
    Tensor loss = weighted_sum(out, Tensor::uniform(out.shape(), -1, 1, rng));
    if (c.grad_already_there) loss = loss + weighted_sum(qkv, Tensor::uniform(qkv.shape(), -1, 1, rng));
    loss.backward();
    return {out, attention, qkv.grad(), c.learned ? scale.grad() : Tensor()};
}

}  // namespace

TEST_CASE("attention: the AVX-512 head kernel agrees with the gemm-based loop", "[.][attention-avx512]") {
    // Hidden from the default run: CTest runs it as "attention: the AVX-512 head kernel ...",
    // skipped where the CPU has no AVX-512.
#if PATCHGRAD_ATTENTION_AVX512
    const std::vector<Isa> levels = supported_isas();
    if (levels.back() != Isa::Avx512) {
        std::cout << "skipped: no AVX-512\n";
        return;
    }
    // Every row width from one vector to six, a last vector of 1 to 16 lanes, the three head
    // sizes, row blocks that end inside the 4-row block, and what the heads may carry.
    const Heads cases[] = {
        {2, 65, 4, 32, false, false, false}, {2, 65, 4, 32, true, true, true},   {1, 1, 1, 16, false, false, false},
        {3, 17, 2, 16, true, false, false},  {2, 16, 3, 64, false, true, false}, {1, 33, 2, 32, false, false, true},
        {2, 96, 1, 64, true, true, false},   {1, 50, 2, 16, false, true, true},  {2, 80, 2, 32, true, false, true},
    };
    for (const Heads& c : cases) {
        INFO("B " << c.B << " N " << c.N << " heads " << c.heads << " d " << c.d << " key bias " << c.bias
                  << " learned scale " << c.learned << " gradient already there " << c.grad_already_there);
        const AttentionHeads shape{nullptr, c.heads, c.N, c.heads * c.d, nullptr, 1, nullptr};
        REQUIRE(attention_heads_avx512_fits(shape));
        std::vector<Tensor> generic;
        {
            const IsaLevel level(levels.front());
            generic = run(c);
        }
        const std::vector<Tensor> avx512 = run(c);
        const char* names[] = {"output", "A", "qkv's gradient", "head_scale's gradient"};
        for (size_t i = 0; i < generic.size(); ++i) {
            if (!generic[i].defined()) continue;
            // Both are float32 with other orders of summation and exp's steps fused differently.
            require_close(avx512[i], generic[i], 2e-5, names[i]);
        }
    }
    // What the kernel does not take goes to the gemm-based loop.
    CHECK_FALSE(attention_heads_avx512_fits({nullptr, 2, 97, 64, nullptr, 1, nullptr}));   // N above 96
    CHECK_FALSE(attention_heads_avx512_fits({nullptr, 2, 65, 48, nullptr, 1, nullptr}));   // d = 24
    CHECK_FALSE(attention_heads_avx512_fits({nullptr, 1, 65, 128, nullptr, 1, nullptr}));  // d = 128
#else
    std::cout << "skipped: no AVX-512 (not an x86-64 float32 build)\n";
#endif
}

}  // namespace patchgrad
