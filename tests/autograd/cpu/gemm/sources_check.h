// The check that a gemm computes a sourced operand (gemm.h's sources) as it reads it: shared by
// the float64 gemm tests and the bf16 ones.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"

namespace patchgrad::test {

struct SourcesCase {
    bool trans_a, trans_b;
    int64_t M, N, K;
};
// A linear layer's forward (one K block, and a panel wider than a group of 256 KiB), a row-major
// A over several K blocks, a weight gradient (each thread's own panels, K split in groups; AMX
// multiplies its transpose), both transposed, and a narrow C.
inline const SourcesCase kSourcesCases[] = {{false, true, 300, 72, 40},  {false, true, 97, 1000, 100},
                                            {false, false, 97, 33, 600}, {true, false, 130, 40, 2000},
                                            {true, true, 40, 24, 300},   {false, false, 20, 1600, 30}};

// For each case, each operand computed (A, B, both), with and without a bias, and 1, 2 and 3
// threads: the same bits as the product of the computed matrices, written out beforehand. The
// sources compute 0.5 v + 0.25 from the stored values v, and gemm gets the stored matrices as A
// and B, so a block read from them instead of from the source changes the result; every block
// asked for must lie inside the matrix.
template <class Real, class Gemm>
void check_sources(const Gemm& gemm_fn) {
    uint32_t state = 11;
    const auto next = [&state] {
        state = state * 1664525u + 1013904223u;
        return static_cast<Real>(static_cast<double>(state >> 8) / 8388608.0 - 1.0);
    };
    const auto computed = [](Real v) { return Real(0.5) * v + Real(0.25); };
    for (const SourcesCase& c : kSourcesCases) {
        const int64_t a_rows = c.trans_a ? c.K : c.M, a_cols = c.trans_a ? c.M : c.K;
        const int64_t b_rows = c.trans_b ? c.N : c.K, b_cols = c.trans_b ? c.K : c.N;
        std::vector<Real> A(a_rows * a_cols), B(b_rows * b_cols), bias(c.N);
        for (std::vector<Real>* v : {&A, &B, &bias})
            for (Real& x : *v) x = next();
        std::vector<Real> A2 = A, B2 = B;  // the computed matrices, written out
        for (Real& x : A2) x = computed(x);
        for (Real& x : B2) x = computed(x);
        std::atomic<bool> inside{true};
        const auto source = [&](const std::vector<Real>& m, int64_t rows, int64_t cols) {
            return GemmOperandSource([&m, rows, cols, &inside, computed](int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                                                         Real* out, int64_t ld) {
                if (r0 < 0 || r1 > rows || r0 > r1 || c0 < 0 || c1 > cols || c0 > c1) inside = false;
                for (int64_t r = r0; r < r1; ++r)
                    for (int64_t j = c0; j < c1; ++j) out[(r - r0) * ld + j - c0] = computed(m[r * cols + j]);
            });
        };
        const GemmOperandSource a_source = source(A, a_rows, a_cols), b_source = source(B, b_rows, b_cols);
        for (int which = 1; which <= 3; ++which)  // 1: A, 2: B, 3: both
            for (bool with_bias : {false, true})
                for (int threads : {1, 2, 3}) {
                    INFO("trans_a " << c.trans_a << " trans_b " << c.trans_b << " M " << c.M << " N " << c.N << " K "
                                    << c.K << " computed "
                                    << (which == 1   ? "A"
                                        : which == 2 ? "B"
                                                     : "A and B")
                                    << " bias " << with_bias << " threads " << threads);
                    ThreadCount guard(threads);
                    const bool a = which & 1, b = which & 2;
                    const GemmSources sources{a ? &a_source : nullptr, b ? &b_source : nullptr};
                    const Real* bias_or_null = with_bias ? bias.data() : nullptr;
                    std::vector<Real> expected(c.M * c.N), actual(c.M * c.N);
                    gemm_fn(c.trans_a, c.trans_b, c.M, c.N, c.K, Real(1), (a ? A2 : A).data(), a_cols,
                            (b ? B2 : B).data(), b_cols, Real(0), expected.data(), c.N, bias_or_null, nullptr, nullptr);
                    gemm_fn(c.trans_a, c.trans_b, c.M, c.N, c.K, Real(1), A.data(), a_cols, B.data(), b_cols, Real(0),
                            actual.data(), c.N, bias_or_null, nullptr, &sources);
                    REQUIRE(inside);
                    REQUIRE(actual == expected);
                }
    }
}

}  // namespace patchgrad::test
