// rows_done_check.h — the check that a gemm calls rows_done (gemm.h) as promised, for the
// float32/float64 kernels (test_gemm.cpp) and the bf16 ones (test_gemm_bf16_f32.cpp).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/cpu/gemm/gemm_blocks.h"

namespace patchgrad::test {

// Shapes that take each way through the drivers: one K block, several K blocks shared by the
// threads, a weight gradient's K blocks in groups (each_thread_packs_panels, gemm_k_groups),
// more columns than one panel (NC = 1536), edges in every direction, a bias and beta 1.
struct RowsDoneCase {
    bool trans_a, trans_b;
    int64_t M, N, K;
};
inline const RowsDoneCase kRowsDoneCases[] = {{false, true, 300, 72, 40},   {false, false, 97, 33, 600},
                                              {true, false, 40, 24, 3000},  {true, false, 130, 40, 2000},
                                              {false, false, 20, 1600, 30}, {false, true, 1, 1, 1}};

// For each case and 1, 2 and 3 threads: every row reported exactly once; a copy of each row
// taken inside its call equals the row of the final C (so it was final then); and C the same,
// bit for bit, as the product without rows_done.
template <class Real, class Gemm>
void check_rows_done(const Gemm& gemm_fn) {
    uint32_t state = 7;
    const auto next = [&state] {
        state = state * 1664525u + 1013904223u;
        return static_cast<Real>(static_cast<double>(state >> 8) / 8388608.0 - 1.0);
    };
    for (const RowsDoneCase& c : kRowsDoneCases)
        for (const int threads : {1, 2, 3}) {
            INFO(c.M << " x " << c.N << " x " << c.K << (c.trans_a ? " A^T" : "") << (c.trans_b ? " B^T" : "") << ", "
                     << threads << " threads");
            ThreadCount guard(threads);
            std::vector<Real> A(c.M * c.K), B(c.K * c.N), bias(c.N), start(c.M * c.N);
            for (std::vector<Real>* v : {&A, &B, &bias, &start})
                for (Real& x : *v) x = next();
            const int64_t lda = c.trans_a ? c.M : c.K, ldb = c.trans_b ? c.K : c.N;
            std::vector<Real> plain = start, with = start, seen(c.M * c.N);
            std::vector<int> calls(c.M, 0);
            std::mutex mutex;
            const GemmRowsDone record = [&](int64_t i0, int64_t i1) {
                std::lock_guard<std::mutex> lock(mutex);
                for (int64_t i = i0; i < i1; ++i) {
                    ++calls[i];
                    for (int64_t j = 0; j < c.N; ++j) seen[i * c.N + j] = with[i * c.N + j];
                }
            };
            gemm_fn(c.trans_a, c.trans_b, c.M, c.N, c.K, Real(1), A.data(), lda, B.data(), ldb, Real(1), plain.data(),
                    c.N, bias.data(), nullptr, nullptr);
            gemm_fn(c.trans_a, c.trans_b, c.M, c.N, c.K, Real(1), A.data(), lda, B.data(), ldb, Real(1), with.data(),
                    c.N, bias.data(), &record, nullptr);
            REQUIRE(calls == std::vector<int>(c.M, 1));
            REQUIRE(seen == with);
            REQUIRE(with == plain);
        }
}

}  // namespace patchgrad::test
