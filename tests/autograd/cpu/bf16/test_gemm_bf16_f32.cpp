// Mixed precision (autograd/cpu/bf16/gemm_bf16.h): rounding to bf16, the bf16 products at every
// instruction-set level against float64, their determinism, and one ViT training step in bf16
// against float32.
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autograd/cpu/gemm/rows_done_check.h"
#include "autograd/cpu/gemm/sources_check.h"
#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/cpu/bf16/bf16.h"
#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/cpu/bf16/gemm_bf16_amx_tile.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/gemm/gemm_blocks.h"
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"
#include "vit/vit_test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

float from_bits(uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

constexpr double kBf16Unit = 1.0 / 256;  // u = 2^-8: bf16 keeps 8 significant bits

// gemm_bf16 (or gemm under the bf16 precision) on random op(A) [M, K], op(B) [K, N], checked
// element by element against float64 twice:
//  - against the exact product of the bf16-rounded inputs: only float32 summation error is
//    allowed, |error| <= gamma_K * sum_k |a'_k b'_k|, gamma_K = K s / (1 - K s) (Higham's
//    bound for any summation order; the products of bf16 values are exact in float32), where
//    s bounds one addition's relative error: u32 = 2^-24 when it rounds to nearest, 2^-23 for
//    ARM's BFDOT, which rounds to odd (gemm_bf16_sum_roundoff). This
//    is the check that notices a kernel that rounds differently (truncating, say): that moves
//    the result by ~2^-8, far beyond gamma_K.
//  - against the exact product of the float32 inputs: the error bound of bf16 inputs,
//    |error| <= ((2u + u^2) + gamma_K (1 + u)^2) * sum_k |a_k b_k|, u = 2^-8.
using Bf16Fn = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                        float, float*, int64_t, const float*, const GemmRowsDone*, const GemmSources*);

// `pad` extra columns in every row of A, B and C (attention reads q, k and v out of the rows of
// qkv, three heads' worth apart): the kernels must use the leading dimensions, not the sizes.
void check_bf16(Bf16Fn kernel, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, uint64_t seed,
                int64_t pad = 0) {
    INFO("trans_a " << trans_a << " trans_b " << trans_b << " M " << M << " N " << N << " K " << K << " pad " << pad);
    Rng rng(seed);
    const int64_t lda = (trans_a ? M : K) + pad, ldb = (trans_b ? K : N) + pad, ldc = N + pad;
    std::vector<float> A((trans_a ? K : M) * lda), B((trans_b ? N : K) * ldb),
        C(M * ldc, std::numeric_limits<float>::quiet_NaN());
    for (auto& v : A) v = static_cast<float>(rng.uniform(-1, 1));
    for (auto& v : B) v = static_cast<float>(rng.uniform(-1, 1));
    kernel(trans_a, trans_b, M, N, K, 1, A.data(), lda, B.data(), ldb, 0, C.data(), ldc, nullptr, nullptr,
           nullptr);  // beta 0: C unread

    const double s = kernel == &gemm_bf16 ? gemm_bf16_sum_roundoff() : std::ldexp(1.0, -24);  // others: x86, emulations
    const double gamma = K * s / (1 - K * s), u = kBf16Unit;
    double worst_rounded = 0, worst_exact = 0, largest_error = 0;
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double exact = 0, abs_exact = 0, rounded = 0, abs_rounded = 0;
            for (int64_t k = 0; k < K; ++k) {
                const float a = trans_a ? A[k * lda + i] : A[i * lda + k];
                const float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                const double ar = bf16_to_float(round_to_bf16(a)), br = bf16_to_float(round_to_bf16(b));
                exact += double(a) * b;
                abs_exact += std::abs(double(a) * b);
                rounded += ar * br;
                abs_rounded += std::abs(ar * br);
            }
            const double c = C[i * ldc + j];
            worst_rounded = std::max(worst_rounded, std::abs(c - rounded) / (gamma * abs_rounded));
            worst_exact =
                std::max(worst_exact, std::abs(c - exact) / ((2 * u + u * u + gamma * (1 + u) * (1 + u)) * abs_exact));
            largest_error = std::max(largest_error, std::abs(c - exact) / abs_exact);
        }
    INFO("worst error / bound: " << worst_rounded << " (rounded inputs), " << worst_exact << " (float32 inputs)");
    CHECK(worst_rounded <= 1);
    CHECK(worst_exact <= 1);
    for (int64_t i = 0; i < M; ++i)  // and the padding of C untouched
        for (int64_t j = N; j < ldc; ++j) CHECK(std::isnan(C[i * ldc + j]));
    // And the inputs were really rounded: float32 inputs would be exact to ~1e-7 here. (Over 64
    // products or more: the error of one can fall below 1e-4 by chance.)
    if (M * N * K >= 64) CHECK(largest_error > 1e-4);
}

struct Sizes {
    int64_t M, N, K;
};
// Whole tiles, edge tiles (M, N not multiples of 12 and 32), an odd K (the pair padded with
// zero), a K longer than one K block (odd again: 257 = 256 + 1, and 513 = 512 + 1 for AMX's
// blocks of 512), the ViT's attention products (65 tokens, head 32), and a weight gradient's
// shape with more rows than columns.
const Sizes kSizes[] = {{24, 64, 16}, {13, 33, 7},  {1, 1, 1},       {30, 70, 257}, {20, 40, 513},
                        {65, 65, 32}, {65, 32, 65}, {130, 384, 128}, {40, 20, 513}};

// The kernel's product of op(A) [M, K] and op(B) [K, N] on 1, 2, 3, 8 and 16 threads: the same bits
// each time. The default, 300 x 600 by 600 x 200, has several row slivers per thread and two K
// blocks or more (of 512 for AMX, 256 otherwise), which each thread runs with panels of its own
// (gemm_blocks.h).
void check_same_bits_for_any_thread_count(Bf16Fn kernel, bool trans_a, bool trans_b, uint64_t seed, int64_t M = 300,
                                          int64_t N = 200, int64_t K = 600) {
    Rng rng(seed);
    std::vector<float> A(M * K), B(K * N);
    for (auto& v : A) v = static_cast<float>(rng.uniform(-1, 1));
    for (auto& v : B) v = static_cast<float>(rng.uniform(-1, 1));
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2, 3, 8, 16}) {
        ThreadCount guard(threads);
        std::vector<float> C(M * N);
        kernel(trans_a, trans_b, M, N, K, 1, A.data(), trans_a ? M : K, B.data(), trans_b ? K : N, 0, C.data(), N,
               nullptr, nullptr, nullptr);
        results.push_back(C);
    }
    for (size_t i = 1; i < results.size(); ++i) CHECK(results[0] == results[i]);
}

// A native kernel called directly (the tests that the dispatch's choice would not reach): every
// size of kSizes and transpose pair against float64, with and without padded rows, from
// seed + 1 on; then the same bits for 1 to 16 threads.
void check_native_kernel(Bf16Fn kernel, uint64_t seed, uint64_t bits_seed) {
    for (const Sizes& s : kSizes)
        for (bool trans_a : {false, true})
            for (bool trans_b : {false, true}) {
                check_bf16(kernel, trans_a, trans_b, s.M, s.N, s.K, ++seed);
                check_bf16(kernel, trans_a, trans_b, s.M, s.N, s.K, ++seed, 7);
            }
    for (bool trans_b : {false, true}) check_same_bits_for_any_thread_count(kernel, false, trans_b, bits_seed);
}

// AMX's tile instructions (gemm_bf16_amx_tile.h) in plain C++, with the arithmetic of Intel's
// pseudo-code for TDPBF16PS: per element, for each pair q in order, the low product and then
// the high one added to the float32 sum, each addition rounded to nearest (the products of
// bf16 values are exact in float32). The kernel's packing, K loop, tail and edges run through
// it as they would on the hardware, which this machine need not have.
struct EmulatedAmxTiles {
    static float (&c())[4][16][16] {
        thread_local float tiles[4][16][16];
        return tiles;
    }
    static float lo(uint32_t pair) { return bf16_to_float(static_cast<uint16_t>(pair & 0xffff)); }
    static float hi(uint32_t pair) { return bf16_to_float(static_cast<uint16_t>(pair >> 16)); }
    static void zero() { std::memset(c(), 0, sizeof(float[4][16][16])); }
    // C[t] += A[a_half] B[b_half]: A rows 16 * a_half + m, B columns 16 * b_half + n.
    static void dot(int t, const uint32_t* a, int64_t lda, const uint32_t* b, int64_t ldb) {
        for (int m = 0; m < 16; ++m)
            for (int n = 0; n < 16; ++n) {
                float sum = c()[t][m][n];
                for (int q = 0; q < 16; ++q) {
                    sum += lo(a[m * lda + q]) * lo(b[q * ldb + n]);
                    sum += hi(a[m * lda + q]) * hi(b[q * ldb + n]);
                }
                c()[t][m][n] = sum;
            }
    }
    static void multiply(const uint32_t* a, int64_t lda, const uint32_t* b, int64_t ldb) {
        dot(0, a, lda, b, ldb);
        dot(1, a, lda, b + 16, ldb);
        dot(2, a + 16 * lda, lda, b, ldb);
        dot(3, a + 16 * lda, lda, b + 16, ldb);
    }
    static void load(const float* in, int64_t ldc) {
        for (int t = 0; t < 4; ++t)
            for (int m = 0; m < 16; ++m)
                for (int n = 0; n < 16; ++n) c()[t][m][n] = in[(16 * (t / 2) + m) * ldc + 16 * (t % 2) + n];
    }
    static void store(float* out, int64_t ldc) {
        for (int t = 0; t < 4; ++t)
            for (int m = 0; m < 16; ++m)
                for (int n = 0; n < 16; ++n) out[(16 * (t / 2) + m) * ldc + 16 * (t % 2) + n] = c()[t][m][n];
    }
};

const Bf16Kernels kAmxEmulated = AmxKernel<EmulatedAmxTiles>::table("amx, emulated");

// A fault of the kind the first-use check is for: the two off-diagonal C tiles stored in each
// other's place (a tile configuration or store offset misread on real hardware).
struct SwappedTilesAmx : EmulatedAmxTiles {
    static void store(float* out, int64_t ldc) {
        EmulatedAmxTiles::store(out, ldc);
        for (int m = 0; m < 16; ++m)
            for (int n = 0; n < 16; ++n) std::swap(out[m * ldc + 16 + n], out[(16 + m) * ldc + n]);
    }
};

void gemm_bf16_amx_emulated(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                            int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                            const float* bias, const GemmRowsDone* rows_done = nullptr,
                            const GemmSources* sources = nullptr) {
    gemm_bf16_with(kAmxEmulated, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done,
                   sources);
}

#if defined(__x86_64__)
// The AVX512_BF16 kernel itself, which the dispatch does not choose on a CPU with AMX; only the
// vdpbf16ps test calls it, where the CPU has AVX512_BF16.
void gemm_bf16_vdpbf16ps(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                         int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const float* bias,
                         const GemmRowsDone* rows_done = nullptr, const GemmSources* sources = nullptr) {
    gemm_bf16_with(gemm_bf16_kernels_avx512, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias,
                   rows_done, sources);
}
#endif

// The AMX kernel itself, where this CPU has it (amx_kernels_on_this_cpu); only the native test calls it.
void gemm_bf16_amx_native(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                          const float* bias, const GemmRowsDone* rows_done = nullptr,
                          const GemmSources* sources = nullptr) {
    std::string why_not;
    gemm_bf16_with(*amx_kernels_on_this_cpu(why_not), trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                   bias, rows_done, sources);
}

}  // namespace

TEST_CASE("bf16: round_to_bf16 rounds to nearest, ties to even, and keeps NaN, infinity and signed zero",
          "[op:gemm][bf16]") {
    CHECK(round_to_bf16(1.0f) == 0x3f80);
    CHECK(round_to_bf16(-2.0f) == 0xc000);
    CHECK(round_to_bf16(-0.0f) == 0x8000);
    // 1 + 2^-8 is half-way between 1 (0x3f80, even) and 1 + 2^-7 (0x3f81): to even, down.
    CHECK(round_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
    // 1 + 3 * 2^-8 is half-way between 0x3f81 (odd) and 0x3f82: to even, up.
    CHECK(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
    // Just above half-way rounds up, just below down.
    CHECK(round_to_bf16(from_bits(0x3f808001)) == 0x3f81);
    CHECK(round_to_bf16(from_bits(0x3f807fff)) == 0x3f80);
    // A carry out of the fraction moves to the next binade: 1.99999 -> 2.
    CHECK(round_to_bf16(from_bits(0x3fffffff)) == 0x4000);
    CHECK(round_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // beyond the largest bf16: infinity
    CHECK(round_to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
    CHECK(std::isnan(bf16_to_float(round_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    CHECK(std::isnan(bf16_to_float(round_to_bf16(from_bits(0x7f800001)))));  // a NaN with only a low bit set

    // The relative error of any normal float is at most u = 2^-8.
    Rng rng(3);
    double worst = 0;
    for (int n = 0; n < 100000; ++n) {
        const float x = static_cast<float>(rng.uniform(-1, 1) * std::exp(rng.uniform(-40, 40)));
        worst = std::max(worst, std::abs(double(bf16_to_float(round_to_bf16(x))) - x) / std::abs(double(x)));
    }
    CHECK(worst <= kBf16Unit);
    CHECK(worst > kBf16Unit * 0.99);  // and it is reached: the bound is tight
}

TEST_CASE("bf16: gemm_bf16 is within the bf16 error bound of float64, at every instruction-set level",
          "[op:gemm][bf16]") {
    for_each_isa([&](Isa) {
        INFO(gemm_bf16_description());
        uint64_t seed = 0;
        for (Bf16Fn kernel : {&gemm_bf16, &gemm_bf16_emulated})
            for (const Sizes& s : kSizes)
                for (bool trans_a : {false, true})
                    for (bool trans_b : {false, true}) {
                        check_bf16(kernel, trans_a, trans_b, s.M, s.N, s.K, ++seed);
                        check_bf16(kernel, trans_a, trans_b, s.M, s.N, s.K, ++seed, 7);
                    }
    });
}

TEST_CASE("bf16: AMX's kernel, its tile instructions emulated, is within the bf16 error bound of float64",
          "[op:gemm][bf16][amx]") {
    // The sizes above (edges of the 32 x 32 tile block, odd K, two K blocks whose pairs end in
    // a partial tile), plus a K block of exactly two tiles and a C of exactly one block.
    uint64_t seed = 100;
    for (const Sizes& s : kSizes)
        for (bool trans_a : {false, true})
            for (bool trans_b : {false, true})
                check_bf16(&gemm_bf16_amx_emulated, trans_a, trans_b, s.M, s.N, s.K, ++seed);
    check_bf16(&gemm_bf16_amx_emulated, false, false, 32, 32, 64, ++seed);
    check_bf16(&gemm_bf16_amx_emulated, true, true, 33, 31, 63, ++seed);

    // Whole blocks with alpha 1 start their sums from C (beta 1) or the bias (beta 0): C + A'B'
    // and bias + A'B', within float32 rounding of the sums (the terms are below K = 40).
    for (bool with_bias : {false, true}) {
        const int64_t M = 64, N = 96, K = 40;
        Rng rng(with_bias ? 11 : 10);
        std::vector<float> A(M * K), B(K * N), bias(N), C(M * N), product(M * N);
        for (auto* v : {&A, &B, &bias, &C})
            for (float& x : *v) x = static_cast<float>(rng.uniform(-1, 1));
        gemm_bf16_amx_emulated(false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, product.data(), N, nullptr);
        std::vector<float> expected(M * N);
        for (int64_t i = 0; i < M * N; ++i) expected[i] = product[i] + (with_bias ? bias[i % N] : C[i]);
        gemm_bf16_amx_emulated(false, false, M, N, K, 1, A.data(), K, B.data(), N, with_bias ? 0 : 1, C.data(), N,
                               with_bias ? bias.data() : nullptr);
        for (int64_t i = 0; i < M * N; ++i) CHECK(C[i] == Approx(expected[i]).margin(2e-5));
    }

    // alpha, beta and the bias, on a C that is not the whole block: the same epilogue as
    // float32's formula, C = alpha * A'B' + beta * C + bias, with A'B' the emulated float32 sums.
    const int64_t M = 35, N = 37, K = 40;
    Rng rng(9);
    std::vector<float> A(M * K), B(K * N), bias(N), C(M * N), expected(M * N);
    for (auto* v : {&A, &B, &bias, &C})
        for (float& x : *v) x = static_cast<float>(rng.uniform(-1, 1));
    std::vector<float> product(M * N);
    gemm_bf16_amx_emulated(false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, product.data(), N, nullptr);
    for (int64_t i = 0; i < M * N; ++i) expected[i] = 0.5f * product[i] + (2 * C[i] + bias[i % N]);
    gemm_bf16_amx_emulated(false, false, M, N, K, 0.5f, A.data(), K, B.data(), N, 2, C.data(), N, bias.data());
    // (The two sum the three terms in different orders: equal to float32 rounding of terms up to 3.)
    for (int64_t i = 0; i < M * N; ++i) CHECK(C[i] == Approx(expected[i]).margin(1e-6));
}

TEST_CASE("bf16: AMX's first-use check passes the emulated kernel and refuses a faulty one, naming the fault",
          "[op:gemm][bf16][amx]") {
    CHECK(bf16_kernel_check(kAmxEmulated).empty());
    const std::string failure = bf16_kernel_check(AmxKernel<SwappedTilesAmx>::table("amx, tiles 1 and 2 swapped"));
    INFO(failure);
    // The kernel, the shape, the transposes and the worst element, for a user to report.
    CHECK(failure.rfind("amx, tiles 1 and 2 swapped, 40 x 40 x 70 with op(A) = A and op(B) = B: C[", 0) == 0);
    CHECK(failure.find("where the float64 product of the bf16 inputs is ") != std::string::npos);
}

TEST_CASE("bf16: AMX's native kernel on this CPU is within the bf16 error bound of float64", "[.][amx-native]") {
    // Hidden from the default run: CTest runs it as "amx: the native kernel ...", which counts
    // as skipped where the line below says so. (Not compared bit for bit with the emulation:
    // the hardware's sums differ from the pseudo-code's order of roundings in the last bits.)
    std::string why_not;
    if (!amx_kernels_on_this_cpu(why_not)) {
        std::cout << "skipped: no AMX (" << why_not << ")\n";
        return;
    }
    CHECK(bf16_kernel_check(*amx_kernels_on_this_cpu(why_not)).empty());
    check_native_kernel(&gemm_bf16_amx_native, 200, 12);
}

TEST_CASE("bf16: AMX's AVX-512 packing writes the words of the readable packing", "[.][avx512-bf16-packing]") {
    // Hidden from the default run: CTest runs it as "amx: the AVX-512 packing ...", skipped
    // where the CPU has no AVX512_BF16. The hardware's table packs with these functions, the
    // emulation with gemm_bf16_amx_tile.h's loops: the same words for every sliver edge, odd
    // and even kc, K blocks that end inside a tile and on one, and both transposes.
#if defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE)
    if (!__builtin_cpu_supports("avx512bf16")) {
        std::cout << "skipped: no AVX512_BF16\n";
        return;
    }
    using Amx = AmxKernel<EmulatedAmxTiles>;
    Rng rng(31);
    const int64_t ld = 90, rows_total = 80;  // X [80, 90]: every block below fits
    std::vector<float> X(rows_total * ld);
    for (auto& v : X) v = static_cast<float>(rng.uniform(-2, 2));
    X[5] = 0;  // a zero, a tie and a NaN among them
    X[6] = 1.0f + std::ldexp(1.0f, -8);
    X[7] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t kc : {1, 2, 31, 32, 33, 64, 70})
        for (int64_t extent : {1, 15, 16, 17, 32, 33, 64}) {
            const int64_t slivers = (extent + 31) / 32, pairs = bf16_pairs(kc, 16);
            for (bool trans : {false, true}) {
                INFO("kc " << kc << " rows or columns " << extent << " trans " << trans);
                std::vector<uint32_t> fast(slivers * 32 * pairs, 0xdeadbeef), readable(fast.size(), 0xabadcafe);
                // op(A) [extent, kc] from row 3, column 2 of X: A^T reads X as [k][r]
                gemm_bf16_amx_pack_a(trans, X.data(), ld, 3, 2, extent, kc, fast.data());
                Amx::pack_a(trans, X.data(), ld, 3, 2, extent, kc, readable.data());
                CHECK(fast == readable);
                // op(B) [kc, extent]: B^T reads X as [c][k]
                std::fill(fast.begin(), fast.end(), 0xdeadbeef);
                std::fill(readable.begin(), readable.end(), 0xabadcafe);
                gemm_bf16_amx_pack_b(trans, X.data(), ld, 2, 3, kc, extent, fast.data());
                Amx::pack_b(trans, X.data(), ld, 2, 3, kc, extent, readable.data());
                CHECK(fast == readable);
            }
        }
#else
    std::cout << "skipped: no AVX512_BF16 (not an x86-64 float32 build)\n";
#endif
}

TEST_CASE("bf16: the AVX512_BF16 kernel on this CPU is within the bf16 error bound of float64",
          "[.][vdpbf16ps-native]") {
    // Hidden from the default run, like the AMX test above: CTest runs it as "vdpbf16ps: the
    // native kernel ...", which counts as skipped where the CPU has no AVX512_BF16. Where the
    // CPU has AMX too, the dispatch never picks this kernel, so only this test runs it there.
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx512bf16") || active_isa() != Isa::Avx512) {
        std::cout << "skipped: no AVX512_BF16 at the active instruction-set level\n";
        return;
    }
    check_native_kernel(&gemm_bf16_vdpbf16ps, 300, 13);
#else
    std::cout << "skipped: no AVX512_BF16 (not an x86-64 build)\n";
#endif
}

TEST_CASE("bf16: AMX's kernel, emulated, gives the same bits for any thread count", "[op:gemm][bf16][amx][parallel]") {
    for (bool trans_a : {false, true})  // (A^T B with M > N: through C^T = B^T A)
        for (bool trans_b : {false, true})
            check_same_bits_for_any_thread_count(&gemm_bf16_amx_emulated, trans_a, trans_b, 12);
}

// A weight gradient with more rows than columns runs on AMX as C^T = B^T A, added to C
// transposed: beta 0 writes C (NaN before it is never read), beta 1 and 0.5 add, alpha scales,
// and C's padding past N is untouched.
TEST_CASE("bf16: AMX's A^T B with more rows than columns writes or adds C as beta says", "[op:gemm][bf16][amx]") {
    REQUIRE(kAmxEmulated.transpose_wide_weight_gradients);
    const int64_t M = 70, N = 30, K = 600, ldc = N + 3;
    Rng rng(14);
    std::vector<float> A(K * M), B(K * N);
    for (auto* v : {&A, &B})
        for (float& x : *v) x = static_cast<float>(rng.uniform(-1, 1));
    // The product through the kernel's usual path: A^T written out, so that it is A [M, K] B.
    std::vector<float> At(M * K), product(M * ldc, std::numeric_limits<float>::quiet_NaN());
    for (int64_t k = 0; k < K; ++k)
        for (int64_t i = 0; i < M; ++i) At[i * K + k] = A[k * M + i];
    gemm_bf16_amx_emulated(false, false, M, N, K, 1, At.data(), K, B.data(), N, 0, product.data(), ldc, nullptr);
    for (const float beta : {0.0f, 1.0f, 0.5f})
        for (const float alpha : {1.0f, -2.0f}) {
            INFO("alpha " << alpha << " beta " << beta);
            std::vector<float> C(M * ldc, std::numeric_limits<float>::quiet_NaN());
            for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j)
                    if (beta != 0) C[i * ldc + j] = static_cast<float>(rng.uniform(-1, 1));
            const std::vector<float> before = C;
            gemm_bf16_amx_emulated(true, false, M, N, K, alpha, A.data(), M, B.data(), N, beta, C.data(), ldc, nullptr);
            for (int64_t i = 0; i < M; ++i) {
                for (int64_t j = 0; j < N; ++j) {
                    const float added = beta == 0 ? 0.0f : beta * before[i * ldc + j];
                    // (The same bf16 products, summed in other groups: within float32 rounding.)
                    CHECK(C[i * ldc + j] == Approx(alpha * product[i * ldc + j] + added).epsilon(1e-5).margin(1e-4));
                }
                for (int64_t j = N; j < ldc; ++j) CHECK(std::isnan(C[i * ldc + j]));
            }
        }
}

TEST_CASE("bf16: rows_done sees every row of C once, already final, and changes nothing", "[op:gemm][bf16]") {
    check_rows_done<float>(&gemm_bf16_amx_emulated);
    check_rows_done<float>(&gemm_bf16_emulated);
    for_each_isa([](Isa) { check_rows_done<float>(&gemm_bf16); });  // the native kernel where there is one
}

TEST_CASE("bf16: an operand computed as it is read gives the bits of the computed matrix", "[op:gemm][bf16]") {
    check_sources<float>(&gemm_bf16_amx_emulated);
    check_sources<float>(&gemm_bf16_emulated);
    for_each_isa([](Isa) { check_sources<float>(&gemm_bf16); });  // the native kernel where there is one
}

TEST_CASE("bf16: gemm follows the matmul precision, and the guard restores it", "[op:gemm][bf16]") {
    REQUIRE(matmul_precision() == MatmulPrecision::Fp32);
    const int64_t M = 13, N = 40, K = 21;
    Rng rng(5);
    std::vector<float> A(M * K), B(K * N), bias(N), via_gemm(M * N, 1), direct(M * N, 1), fp32(M * N, 1);
    for (auto* v : {&A, &B, &bias})
        for (float& x : *v) x = static_cast<float>(rng.uniform(-1, 1));
    for_each_isa([&](Isa) {
        {
            MatmulPrecisionGuard bf16(MatmulPrecision::Bf16);
            REQUIRE(matmul_precision() == MatmulPrecision::Bf16);
            // alpha, beta and the bias too: C = 0.5 * A @ B + 2 * C + bias
            gemm(false, false, M, N, K, 0.5f, A.data(), K, B.data(), N, 2, via_gemm.data(), N, bias.data());
        }
        REQUIRE(matmul_precision() == MatmulPrecision::Fp32);
        gemm_bf16(false, false, M, N, K, 0.5f, A.data(), K, B.data(), N, 2, direct.data(), N, bias.data());
        CHECK(via_gemm == direct);
        gemm(false, false, M, N, K, 0.5f, A.data(), K, B.data(), N, 2, fp32.data(), N, bias.data());
        CHECK(fp32 != direct);  // fp32 again: not rounded
        // Each was applied to its own C, which started at 1 and then held the last level's result.
        std::fill(via_gemm.begin(), via_gemm.end(), 1.0f);
        std::fill(direct.begin(), direct.end(), 1.0f);
        std::fill(fp32.begin(), fp32.end(), 1.0f);
    });
    MatmulPrecisionGuard bf16(MatmulPrecision::Bf16);
    REQUIRE_THROWS_WITH(parse_enum<MatmulPrecision>("fp16", "--precision"), "--precision 'fp16' is not fp32 or bf16");
}

TEST_CASE("bf16: gemm_bf16 gives the same bits for any thread count, at every instruction-set level",
          "[op:gemm][bf16][parallel]") {
    for (const int64_t kc : {kGemmKC, AmxKernel<EmulatedAmxTiles>::kKC}) {
        REQUIRE(each_thread_packs_panels(300, 200, 600, kc));
        REQUIRE_FALSE(each_thread_packs_panels(512, 520, 300, kc));  // panels packed by all threads together
    }
    for_each_isa([&](Isa) {
        for (bool trans_a : {false, true})
            for (bool trans_b : {false, true}) check_same_bits_for_any_thread_count(&gemm_bf16, trans_a, trans_b, 11);
        for (bool trans_b : {false, true})
            check_same_bits_for_any_thread_count(&gemm_bf16, false, trans_b, 13, 512, 520, 300);
    });
}

// [hide:attention-backward]
TEST_CASE("bf16: attention's per-head products are float32 with AMX's kernel and bf16 with the others",
          "[op:gemm][bf16][op:attention]") {
    // gemm_small (gemm.h): the fused attention op's output and qkv's gradient under bf16 equal
    // float32's bit for bit where the kernel is AMX's, and differ from them elsewhere.
    Rng rng(4);
    Tensor qkv = Tensor::normal({3, 9, 24}, 0, 1, rng, true);
    const auto run = [&](MatmulPrecision precision) {
        MatmulPrecisionGuard guard(precision);
        qkv.zero_grad();
        Tensor out = scaled_dot_product_attention(qkv, 2);
        sum(out * out).backward();
        return std::make_pair(out.to_vector(), qkv.grad().to_vector());
    };
    const auto fp32 = run(MatmulPrecision::Fp32), bf16 = run(MatmulPrecision::Bf16);
    INFO(gemm_bf16_description());
    if (gemm_bf16_is_amx()) {
        CHECK(bf16.first == fp32.first);
        CHECK(bf16.second == fp32.second);
    } else {
        CHECK(bf16.first != fp32.first);
        CHECK(bf16.second != fp32.second);
    }
}
// [/hide:attention-backward]

TEST_CASE("bf16: one ViT training step in bf16 is within a stated tolerance of float32", "[op:gemm][bf16]") {
    // The loss and every parameter's gradient, bf16 against float32, as relative errors in the
    // L2 norm. Each matrix product's inputs are rounded by at most 2^-8 (0.4%); the errors of a
    // forward and backward through two blocks add up to a few times that, so 3% is a loose bound
    // that still fails if, say, a gradient were computed from unrounded or wrongly rounded values
    // of the wrong tensor (those errors are O(1)).
    ViTConfig config = small_config();
    config.dim = 32;
    config.heads = 4;
    config.mlp_dim = 64;
    Rng rng(2);
    const Tensor images = Tensor::normal({6, config.channels, config.image_height, config.image_width}, 0, 1, rng);
    const std::vector<int64_t> labels = {0, 1, 2, 3, 4, 0};
    auto step = [&](MatmulPrecision precision) {
        MatmulPrecisionGuard guard(precision);
        VisionTransformer model(config, 0);
        Tensor loss = cross_entropy(model.forward(images), labels);
        loss.backward();
        std::vector<std::pair<std::string, std::vector<float>>> result = {{"loss", loss.to_vector()}};
        for (const auto& [name, p] : model.named_parameters()) result.emplace_back(name, p.grad().to_vector());
        return result;
    };
    const auto fp32 = step(MatmulPrecision::Fp32), bf16 = step(MatmulPrecision::Bf16);
    REQUIRE(fp32.size() == bf16.size());
    double worst = 0, smallest = 1;
    for (size_t t = 0; t < fp32.size(); ++t) {
        double diff = 0, norm = 0;
        for (size_t i = 0; i < fp32[t].second.size(); ++i) {
            diff += std::pow(double(bf16[t].second[i]) - fp32[t].second[i], 2);
            norm += std::pow(double(fp32[t].second[i]), 2);
        }
        const double relative = std::sqrt(diff / norm);
        INFO(fp32[t].first << ": relative error " << relative);
        CHECK(relative <= 0.03);
        worst = std::max(worst, relative);
        if (t > 0) smallest = std::min(smallest, relative);  // (the loss, t = 0, is one number: below)
    }
    INFO("worst relative error " << worst << ", smallest of a gradient " << smallest);
    CHECK(smallest > 1e-5);                   // bf16 did change every gradient: the precision reached every product
    CHECK(bf16[0].second != fp32[0].second);  // and the loss
}

}  // namespace patchgrad
