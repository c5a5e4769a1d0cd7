// attention's per-head kernel for AVX-512 and AVX2 (autograd/cpu/rows/attention_heads_simd.h)
// against the gemm-based loop of attention_heads.cpp, which the lowest level runs and the float64
// tests check against chapter 7's steps and finite differences. Only float32 has the kernel.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <iterator>
#include <limits>
#include <vector>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/cpu/rows/attention_heads_simd.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

// [hide:attention-backward]
#if PATCHGRAD_ATTENTION_SIMD
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
#endif

TEST_CASE("attention: the AVX-512 and AVX2 head kernels agree with the gemm-based loop", "[.][attention-simd]") {
    // Hidden from the default run: CTest runs it as "attention: the AVX-512 and AVX2 head
    // kernels ...", skipped where the CPU has neither.
#if PATCHGRAD_ATTENTION_SIMD
    const std::vector<Isa> levels = supported_isas();
    if (levels.back() == Isa::Baseline) {
        std::cout << "skipped: no AVX2\n";
        return;
    }
    // Every row width from one vector to twelve, a last vector of 1 to 16 lanes, the head sizes,
    // row blocks that end inside a block, and what the heads may carry.
    const Heads cases[] = {
        {2, 65, 4, 32, false, false, false}, {2, 65, 4, 32, true, true, true},   {1, 1, 1, 16, false, false, false},
        {3, 17, 2, 16, true, false, false},  {2, 16, 3, 64, false, true, false}, {1, 33, 2, 32, false, false, true},
        {2, 96, 1, 64, true, true, false},   {1, 50, 2, 16, false, true, true},  {2, 80, 2, 32, true, false, true},
        {1, 96, 2, 32, false, true, false},  {2, 9, 2, 16, true, true, true},
    };
    std::vector<std::vector<Tensor>> generic;
    {
        const IsaLevel level(Isa::Baseline);
        for (const Heads& c : cases) generic.push_back(run(c));
    }
    for (Isa isa : {Isa::Avx512, Isa::Avx2}) {
        if (std::find(levels.begin(), levels.end(), isa) == levels.end()) {
            std::cout << isa_name(isa) << ": not on this CPU\n";
            continue;
        }
        const IsaLevel level(isa);
        int compared = 0;
        for (size_t n = 0; n < std::size(cases); ++n) {
            const Heads& c = cases[n];
            INFO(isa_name(isa) << ": B " << c.B << " N " << c.N << " heads " << c.heads << " d " << c.d << " key bias "
                               << c.bias << " learned scale " << c.learned << " gradient already there "
                               << c.grad_already_there);
            const AttentionHeads shape{nullptr, c.heads, c.N, c.heads * c.d, nullptr, 1, nullptr};
            const bool fits =
                isa == Isa::Avx512 ? attention_heads_avx512_fits(shape) : attention_heads_avx2_fits(shape);
            if (!fits) continue;  // the gemm-based loop again: nothing to compare
            ++compared;
            const std::vector<Tensor> kernel = run(c);
            const char* names[] = {"output", "A", "qkv's gradient", "head_scale's gradient"};
            for (size_t i = 0; i < kernel.size(); ++i) {
                if (!kernel[i].defined()) continue;
                // Both are float32 with other orders of summation and exp's steps fused differently.
                require_close(kernel[i], generic[n][i], 2e-5, names[i]);
            }
        }
        CHECK(compared >= (isa == Isa::Avx512 ? 11 : 8));
        // A NaN in q reaches its row's output, as through the gemm-based loop.
        Rng rng(4);
        Tensor qkv = rand_tensor({1, 20, 3 * 32}, rng, -1, 1, false);
        qkv.data()[5 * 96 + 3] = std::numeric_limits<real>::quiet_NaN();  // q of head 0, row 5
        const Tensor out = scaled_dot_product_attention(qkv, 2);
        for (int64_t j = 0; j < 16; ++j) CHECK(std::isnan(out.data()[5 * 32 + j]));
        CHECK(std::isfinite(out.data()[4 * 32]));
    }
    // What the kernels do not take goes to the gemm-based loop.
    CHECK_FALSE(attention_heads_avx512_fits({nullptr, 2, 97, 64, nullptr, 1, nullptr}));   // N above 96
    CHECK_FALSE(attention_heads_avx512_fits({nullptr, 2, 65, 48, nullptr, 1, nullptr}));   // d = 24
    CHECK_FALSE(attention_heads_avx512_fits({nullptr, 1, 65, 128, nullptr, 1, nullptr}));  // d = 128
    CHECK_FALSE(attention_heads_avx2_fits({nullptr, 1, 65, 64, nullptr, 1, nullptr}));     // d = 64
    CHECK(attention_heads_avx2_fits({nullptr, 2, 96, 32, nullptr, 1, nullptr}));
#else
    std::cout << "skipped: no AVX2 (not an x86-64 float32 build)\n";
#endif
}
// [/hide:attention-backward]

}  // namespace patchgrad
