#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "autograd/cpu/gemm/rows_done_check.h"
#include "autograd/cpu/gemm/sources_check.h"
#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/gemm/gemm_blocks.h"
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, real, const real*, int64_t, const real*, int64_t, real,
                        real*, int64_t, const real*, const GemmRowsDone*, const GemmSources*);

std::vector<real> random_values(int64_t n, Rng& rng) {
    std::vector<real> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<real>(rng.uniform(-1, 1));
    return v;
}

// Runs `kernel` and gemm_reference on the same random op(A) [M, K], op(B) [K, N] and C
// [M, N] (stored with `pad` spare columns after every row, to test leading dimensions) and
// requires every C element to agree within the rounding-error bound of a length-K dot
// product, K * eps * (|alpha| |op(A)| @ |op(B)| + |beta| |C|), and the padding to be untouched.
void check_against_reference(GemmFn kernel, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, real alpha,
                             real beta, uint64_t seed, int64_t pad = 0, bool with_bias = false) {
    INFO("trans_a " << trans_a << " trans_b " << trans_b << " M " << M << " N " << N << " K " << K << " alpha " << alpha
                    << " beta " << beta << " pad " << pad << " bias " << with_bias);
    Rng rng(seed);
    const int64_t lda = (trans_a ? M : K) + pad, ldb = (trans_b ? K : N) + pad, ldc = N + pad;
    const std::vector<real> A = random_values((trans_a ? K : M) * lda, rng);
    const std::vector<real> B = random_values((trans_b ? N : K) * ldb, rng);
    const std::vector<real> C0 = random_values(M * ldc, rng);
    const std::vector<real> bias = random_values(N, rng);
    const real* bias_or_null = with_bias ? bias.data() : nullptr;

    std::vector<real> expected = C0, actual = C0;
    gemm_reference(trans_a, trans_b, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, expected.data(), ldc,
                   bias_or_null);
    kernel(trans_a, trans_b, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, actual.data(), ldc, bias_or_null,
           nullptr, nullptr);

    std::vector<real> abs_a(A.size()), abs_b(B.size()), bound(C0.size());
    for (size_t i = 0; i < A.size(); ++i) abs_a[i] = std::abs(A[i]);
    for (size_t i = 0; i < B.size(); ++i) abs_b[i] = std::abs(B[i]);
    for (size_t i = 0; i < C0.size(); ++i) bound[i] = std::abs(C0[i]);
    std::vector<real> abs_bias(bias.size());
    for (size_t i = 0; i < bias.size(); ++i) abs_bias[i] = std::abs(bias[i]);
    gemm_reference(trans_a, trans_b, M, N, K, std::abs(alpha), abs_a.data(), lda, abs_b.data(), ldb, std::abs(beta),
                   bound.data(), ldc, with_bias ? abs_bias.data() : nullptr);

    // One REQUIRE for the whole matrix (per-element assertions would dominate the run time).
    const double eps = std::numeric_limits<real>::epsilon();
    int64_t bad = -1;
    for (int64_t at = 0; at < M * ldc && bad < 0; ++at) {
        const bool ok = at % ldc < N ? std::abs(double(actual[at]) - expected[at]) <= double(K + 2) * eps * bound[at]
                                     : actual[at] == C0[at];
        if (!ok) bad = at;
    }
    const int64_t at = std::max<int64_t>(bad, 0);
    INFO("first mismatch: C[" << at / ldc << ", " << at % ldc << "] = " << actual[at] << ", reference " << expected[at]
                              << ", initial " << C0[at] << ", error bound " << double(K + 2) * eps * bound[at]);
    REQUIRE(bad == -1);
}

}  // namespace

TEST_CASE("gemm: gemm_reference matches hand-computed products", "[op:gemm][forward]") {
    // A = [[1, 2, 3], [4, 5, 6]], B = [[1, 2], [3, 4], [5, 6]]: A @ B = [[22, 28], [49, 64]].
    const std::vector<real> A = {1, 2, 3, 4, 5, 6}, B = {1, 2, 3, 4, 5, 6};
    std::vector<real> C = {1, 1, 1, 1};
    gemm_reference(false, false, 2, 2, 3, 2, A.data(), 3, B.data(), 2, 0.5, C.data(), 2);
    CHECK(C == std::vector<real>{44.5, 56.5, 98.5, 128.5});

    // A^T @ A with A stored [2, 3]: [[17, 22, 27], [22, 29, 36], [27, 36, 45]].
    std::vector<real> G(9);
    gemm_reference(true, false, 3, 3, 2, 1, A.data(), 3, A.data(), 3, 0, G.data(), 3);
    CHECK(G == std::vector<real>{17, 22, 27, 22, 29, 36, 27, 36, 45});

    // A @ A^T = [[14, 32], [32, 77]]; B^T @ A^T = (A @ B)^T = [[22, 49], [28, 64]].
    std::vector<real> H(4);
    gemm_reference(false, true, 2, 2, 3, 1, A.data(), 3, A.data(), 3, 0, H.data(), 2);
    CHECK(H == std::vector<real>{14, 32, 32, 77});
    gemm_reference(true, true, 2, 2, 3, 1, B.data(), 2, A.data(), 3, 0, H.data(), 2);
    CHECK(H == std::vector<real>{22, 49, 28, 64});
}

TEST_CASE("gemm: gemm_blocked matches gemm_reference on small, prime and odd sizes, all transposes",
          "[op:gemm][forward]") {
    for_each_isa([&](Isa) {
        const int64_t sizes[] = {1, 2, 3, 7, 13, 25, 33, 97};
        uint64_t seed = 0;
        for (bool trans_a : {false, true})
            for (bool trans_b : {false, true})
                for (int64_t M : sizes)
                    for (int64_t N : sizes)
                        for (int64_t K : sizes)
                            check_against_reference(gemm_blocked, trans_a, trans_b, M, N, K, 1, 0, ++seed);
    });
}

TEST_CASE("gemm: gemm_blocked matches gemm_reference across cache-block boundaries", "[op:gemm][forward]") {
    for_each_isa([&](Isa) {
        // M beyond the A block (144 rows), K beyond two K blocks (256), N beyond the B panel
        // (1536 columns), none of them multiples of the blocks or tiles.
        uint64_t seed = 100;
        for (bool trans_a : {false, true})
            for (bool trans_b : {false, true}) {
                check_against_reference(gemm_blocked, trans_a, trans_b, 301, 37, 600, 1, 0, ++seed);
                check_against_reference(gemm_blocked, trans_a, trans_b, 19, 1601, 263, 1, 0, ++seed);
                check_against_reference(gemm_blocked, trans_a, trans_b, 145, 65, 257, -0.75, 0.5, ++seed, 3);
            }
    });
}

TEST_CASE("gemm: alpha, beta and leading dimensions larger than the rows", "[op:gemm][forward]") {
    for_each_isa([&](Isa) {
        uint64_t seed = 200;
        for (GemmFn kernel : {gemm_blocked, gemm})
            for (bool trans_a : {false, true})
                for (bool trans_b : {false, true})
                    for (real alpha : {1.0, -0.5, 0.0})
                        for (real beta : {0.0, 1.0, 0.3})
                            for (int64_t pad : {0, 5}) {
                                check_against_reference(kernel, trans_a, trans_b, 13, 29, 11, alpha, beta, ++seed, pad);
                                check_against_reference(kernel, trans_a, trans_b, 40, 50, 300, alpha, beta, ++seed,
                                                        pad);
                            }
    });
}

TEST_CASE("gemm: a bias vector is added to every row of C, as in addmm", "[op:gemm][forward]") {
    for_each_isa([&](Isa) {
        // By hand: [[1, 2, 3], [4, 5, 6]] @ [[1, 2], [3, 4], [5, 6]] = [[22, 28], [49, 64]], plus 0.5 C, plus [10, 20].
        const std::vector<real> A = {1, 2, 3, 4, 5, 6}, B = {1, 2, 3, 4, 5, 6}, bias = {10, 20};
        for (GemmFn kernel : {gemm_reference, gemm_blocked, gemm}) {
            std::vector<real> C = {2, 2, 2, 2};
            kernel(false, false, 2, 2, 3, 1, A.data(), 3, B.data(), 2, 0.5, C.data(), 2, bias.data(), nullptr, nullptr);
            CHECK(C == std::vector<real>{33, 49, 60, 85});
            std::vector<real> D(4, std::numeric_limits<real>::quiet_NaN());  // beta = 0: C is never read
            kernel(false, false, 2, 2, 3, 1, A.data(), 3, B.data(), 2, 0, D.data(), 2, bias.data(), nullptr, nullptr);
            CHECK(D == std::vector<real>{32, 48, 59, 84});
            std::vector<real> E = {2, 2, 2, 2};  // K = 0: beta C + bias
            kernel(false, false, 2, 2, 0, 1, nullptr, 1, nullptr, 2, 0.5, E.data(), 2, bias.data(), nullptr, nullptr);
            CHECK(E == std::vector<real>{11, 21, 11, 21});
        }
        // Edge tiles (N = 17, 65: a sliver at most half full), K = 300 (one K block where a
        // row-major A is read in place, two elsewhere) and 600 (several on every path: the bias
        // must be added once, not once per block), several N panels (N = 1601), padding.
        uint64_t seed = 250;
        for (GemmFn kernel : {gemm_blocked, gemm})
            for (bool trans_a : {false, true})
                for (bool trans_b : {false, true})
                    for (real beta : {0.0, 0.5}) {
                        check_against_reference(kernel, trans_a, trans_b, 29, 17, 5, 1, beta, ++seed, 3, true);
                        check_against_reference(kernel, trans_a, trans_b, 65, 65, 32, 0.25, beta, ++seed, 0, true);
                        check_against_reference(kernel, trans_a, trans_b, 40, 50, 300, -1, beta, ++seed, 2, true);
                        check_against_reference(kernel, trans_a, trans_b, 40, 50, 600, -1, beta, ++seed, 2, true);
                    }
        check_against_reference(gemm_blocked, false, true, 13, 1601, 7, 1, 0, ++seed, 0, true);
    });
}

TEST_CASE("gemm: gemm (the dispatcher) matches gemm_reference", "[op:gemm][forward]") {
    uint64_t seed = 300;
    for (bool trans_a : {false, true})
        for (bool trans_b : {false, true})
            for (int64_t M : {1, 7, 150})
                for (int64_t K : {1, 31, 260}) check_against_reference(gemm, trans_a, trans_b, M, 41, K, 1, 0, ++seed);
}

TEST_CASE("gemm: beta = 0 overwrites C without reading it, even NaN", "[op:gemm][forward]") {
    for_each_isa([&](Isa) {
        const std::vector<real> A = {1, 2, 3, 4, 5, 6}, B = {1, 2, 3, 4, 5, 6};
        for (GemmFn kernel : {gemm_reference, gemm_blocked, gemm}) {
            std::vector<real> C(4, std::numeric_limits<real>::quiet_NaN());
            kernel(false, false, 2, 2, 3, 1, A.data(), 3, B.data(), 2, 0, C.data(), 2, nullptr, nullptr, nullptr);
            CHECK(C == std::vector<real>{22, 28, 49, 64});
        }
    });
}

TEST_CASE("gemm: K = 0 scales C by beta, M = 0 or N = 0 leaves it alone", "[op:gemm][forward]") {
    for_each_isa([&](Isa) {
        for (GemmFn kernel : {gemm_reference, gemm_blocked, gemm}) {
            std::vector<real> C = {1, 2, 3, 4};
            kernel(false, false, 2, 2, 0, 1, nullptr, 1, nullptr, 2, 0.5, C.data(), 2, nullptr, nullptr, nullptr);
            CHECK(C == std::vector<real>{0.5, 1, 1.5, 2});
            kernel(false, false, 2, 2, 0, 1, nullptr, 1, nullptr, 2, 0, C.data(), 2, nullptr, nullptr, nullptr);
            CHECK(C == std::vector<real>{0, 0, 0, 0});

            std::vector<real> D = {1, 2, 3, 4};
            kernel(false, false, 0, 2, 3, 1, nullptr, 3, nullptr, 2, 0, D.data(), 2, nullptr, nullptr, nullptr);
            kernel(false, false, 2, 0, 3, 1, nullptr, 3, nullptr, 1, 0, D.data(), 1, nullptr, nullptr, nullptr);
            CHECK(D == std::vector<real>{1, 2, 3, 4});
        }
    });
}

TEST_CASE("gemm: gemm_blocked is deterministic, whatever ran before it", "[op:gemm][forward]") {
    for_each_isa([&](Isa) {
        Rng rng(7);
        const int64_t M = 150, N = 70, K = 300;
        const std::vector<real> A = random_values(M * K, rng), B = random_values(K * N, rng);
        std::vector<real> first(M * N), second(M * N);
        gemm_blocked(false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, first.data(), N);
        // A different multiply in between leaves other data in the reused packing buffers.
        const std::vector<real> X = random_values(400 * 400, rng);
        std::vector<real> Y(400 * 400);
        gemm_blocked(true, true, 400, 400, 400, 1, X.data(), 400, X.data(), 400, 0, Y.data(), 400);
        gemm_blocked(false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, second.data(), N);
        REQUIRE(std::memcmp(first.data(), second.data(), first.size() * sizeof(real)) == 0);
    });
}

TEST_CASE(
    "gemm: gemm_blocked gives the same bits for 1, 2 and 3 threads, with the panels of B shared or each thread's own",
    "[op:gemm][forward][parallel]") {
    // A weight gradient's kind of shape (few slivers, many small K blocks): each thread packs its
    // own panels. A larger product of several K blocks, and one of a single K block: the threads
    // pack each panel together. (A row-major A of K > 2 kGemmKC, so that the K blocks are kGemmKC:
    // a row-major A read in place takes a K of up to 2 kGemmKC whole.)
    struct Case {
        int64_t M, N, K;
        bool own_panels;
    };
    const Case cases[] = {{150, 70, 700, true}, {512, 520, 600, false}, {300, 200, 200, false}};
    for (const Case& c : cases) REQUIRE(each_thread_packs_panels(c.M, c.N, c.K, kGemmKC) == c.own_panels);
    for_each_isa([&](Isa) {
        uint64_t seed = 40;
        for (const Case& c : cases)
            for (bool trans_b : {false, true}) {
                INFO("M " << c.M << " N " << c.N << " K " << c.K << " trans_b " << trans_b);
                Rng rng(++seed);
                const std::vector<real> A = random_values(c.M * c.K, rng), B = random_values(c.K * c.N, rng);
                std::vector<std::vector<real>> results;
                for (int threads : {1, 2, 3}) {
                    ThreadCount guard(threads);
                    std::vector<real> C(c.M * c.N);
                    gemm_blocked(false, trans_b, c.M, c.N, c.K, 1, A.data(), c.K, B.data(), trans_b ? c.K : c.N, 0,
                                 C.data(), c.N);
                    results.push_back(C);
                }
                REQUIRE(results[0] == results[1]);
                REQUIRE(results[0] == results[2]);
            }
    });
    // The tests above check each thread's own panels against the reference (their products of
    // several K blocks are small); here the shared ones of several K blocks, on two threads.
    ThreadCount two(2);
    check_against_reference(gemm_blocked, false, false, 512, 520, 600, 1, 0.5, 77);
    check_against_reference(gemm_blocked, false, true, 512, 520, 600, -1, 0, 78, 2, true);
}

TEST_CASE("gemm: a weight gradient's groups share K evenly, so every thread's tasks carry its share",
          "[gemm][parallel]") {
    // The groups cover [0, K) in order, start on whole granules, and any run of them holds its
    // share of K to within two granules, for every count the driver may choose.
    for (int64_t K : {1, 63, 64, 65, 700, 1000, 4097, 8320})
        for (int64_t groups = 1; groups <= std::min<int64_t>(40, gemm_k_granules(K)); ++groups) {
            INFO("K " << K << " groups " << groups);
            REQUIRE(gemm_k_group_start(0, groups, K) == 0);
            REQUIRE(gemm_k_group_start(groups, groups, K) == K);
            for (int64_t a = 0; a < groups; ++a) {
                REQUIRE(gemm_k_group_start(a + 1, groups, K) > gemm_k_group_start(a, groups, K));
                REQUIRE(gemm_k_group_start(a, groups, K) % kGemmKGranule == 0);
                for (int64_t b = a + 1; b <= groups; ++b) {
                    const double share = double(K) * double(b - a) / double(groups);
                    const int64_t run = gemm_k_group_start(b, groups, K) - gemm_k_group_start(a, groups, K);
                    REQUIRE(std::abs(double(run) - share) < 2 * kGemmKGranule);
                }
            }
        }
    // cifar-tiny's weight gradients at batch 128 (K = 8,320 tokens) in AMX's K blocks of 512 and
    // 32-row slivers, and in blocks of 256 (float32's largest) and 12-row slivers: cut into chunks as
    // parallel_for cuts the (group, sliver) tasks, no thread's K work exceeds the even share by
    // more than one task. (Groups of whole K blocks fail this at 2 threads for 4 slivers.)
    struct Kernel {
        int64_t k_block, MR;
    };
    const int64_t K = 8320;
    for (const Kernel kernel : {Kernel{512, 32}, Kernel{256, 12}})
        for (int64_t M : {128, 256, 384}) {
            const int64_t k_block = kernel.k_block, slivers = (M + kernel.MR - 1) / kernel.MR;
            const int64_t groups = gemm_k_groups(slivers, K, k_block), tasks = groups * slivers;
            const auto task_work = [&](int64_t t) {
                return gemm_k_group_start(t / slivers + 1, groups, K) - gemm_k_group_start(t / slivers, groups, K);
            };
            int64_t largest_task = 0;
            for (int64_t t = 0; t < tasks; ++t) largest_task = std::max(largest_task, task_work(t));
            for (int64_t threads : {2, 3, 4, 8, 16}) {
                INFO("k_block " << k_block << " M " << M << " threads " << threads);
                const int64_t chunk = (tasks + threads - 1) / threads;
                for (int64_t t0 = 0; t0 < tasks; t0 += chunk) {
                    int64_t work = 0;
                    for (int64_t t = t0; t < std::min(tasks, t0 + chunk); ++t) work += task_work(t);
                    REQUIRE(double(work) <= double(K * slivers) / double(threads) + double(largest_task));
                }
            }
        }
}

TEST_CASE("gemm: rows_done sees every row of C once, already final, and changes nothing", "[gemm]") {
    for_each_isa([](Isa) {
        for (GemmFn kernel : {gemm_reference, gemm_blocked, gemm}) check_rows_done<real>(kernel);
    });
}

TEST_CASE("gemm: an operand computed as it is read gives the bits of the computed matrix", "[op:gemm][forward]") {
    for_each_isa([](Isa) {
        for (GemmFn kernel : {gemm_reference, gemm_blocked, gemm}) check_sources<real>(kernel);
    });
}

}  // namespace patchgrad
