// tutorial: float32
// Chapter 12: making it fast. Times C[256, 256] = A[256, 512] @ B[512, 256] three ways: the naive
// triple loop (i, j, k), the same loop reordered (i, k, j) so the inner loop runs along rows,
// and patchgrad's blocked, packed, register-tiled gemm (autograd/cpu/gemm/gemm.cpp), with one and two
// threads. Checks that they agree, and that the thread count does not change a single bit.
// Measures honestly: a warm-up run first, then rounds that alternate between the versions,
// keeping the best time of each. Timings vary from machine to machine and run to run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/rng.h"

using namespace patchgrad;

namespace {

// K spans two of gemm's K blocks, so gemm adds two partial sums per element of C and rounds
// differently from the naive loop, which the check below shows.
constexpr int64_t M = 256, N = 256, K = 512;
static_assert(K > kGemmKC, "the rounding check needs more than one K block");

// [snippet:naive-ijk]
// C[M, N] = A[M, K] @ B[K, N], one dot product per element of C: the inner loop walks down
// a column of B, N elements apart in memory.
void naive_ijk(const real* A, const real* B, real* C) {
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            real dot = 0;
            for (int64_t k = 0; k < K; ++k) dot += A[i * K + k] * B[k * N + j];
            C[i * N + j] = dot;
        }
}
// [/snippet:naive-ijk]

// [snippet:naive-ikj]
// The same sums, loops reordered: row i of C accumulates A[i, k] times row k of B. The inner
// loop now reads B and writes C contiguously, and the compiler vectorises it. Every C element
// still adds its K terms in increasing k, so the result is the same to the last bit.
void naive_ikj(const real* A, const real* B, real* C) {
    std::fill(C, C + M * N, real(0));
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) {
            const real a = A[i * K + k];
            for (int64_t j = 0; j < N; ++j) C[i * N + j] += a * B[k * N + j];
        }
}
// [/snippet:naive-ikj]

// [snippet:best-of]
// Seconds of the fastest of `rounds` calls of each version, after one warm-up call each
// (which pays for page faults, cold caches and starting the threads). The versions take
// turns round by round, so a slow moment of the machine hits all of them alike.
std::vector<double> best_of(const std::vector<std::function<void()>>& versions, int rounds) {
    using Clock = std::chrono::steady_clock;
    for (const auto& run : versions) run();
    std::vector<double> best(versions.size(), std::numeric_limits<double>::infinity());
    for (int r = 0; r < rounds; ++r)
        for (size_t v = 0; v < versions.size(); ++v) {
            const auto start = Clock::now();
            versions[v]();
            best[v] = std::min(best[v], std::chrono::duration<double>(Clock::now() - start).count());
        }
    return best;
}
// [/snippet:best-of]

double max_abs_difference(const std::vector<real>& a, const std::vector<real>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - double(b[i])));
    return d;
}

}  // namespace

int main() {
    Rng rng(0);
    std::vector<real> A(M * K), B(K * N);
    for (real& v : A) v = static_cast<real>(rng.uniform(-1, 1));
    for (real& v : B) v = static_cast<real>(rng.uniform(-1, 1));
    std::vector<real> c_ijk(M * N), c_ikj(M * N), c_gemm1(M * N), c_gemm2(M * N);

    std::printf("C[%lld, %lld] = A[%lld, %lld] @ B[%lld, %lld] in %s: 2 M N K = %.1f million flops\n",
                static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(M),
                static_cast<long long>(K), static_cast<long long>(K), static_cast<long long>(N),
                sizeof(real) == 4 ? "float32" : "float64", 2.0 * M * N * K / 1e6);

    // [snippet:call-gemm]
    auto blocked = [&](std::vector<real>& C) {
        gemm(false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, C.data(), N);
    };
    // [/snippet:call-gemm]
    const std::vector<double> seconds = best_of(
        {[&] { naive_ijk(A.data(), B.data(), c_ijk.data()); }, [&] { naive_ikj(A.data(), B.data(), c_ikj.data()); },
         [&] {
             set_num_threads(1);
             blocked(c_gemm1);
         },
         [&] {
             set_num_threads(2);
             blocked(c_gemm2);
         }},
        3);
    set_num_threads(1);

    const char* names[] = {"naive loop (i, j, k)", "naive loop (i, k, j)", "gemm, 1 thread", "gemm, 2 threads"};
    std::printf("\n%-22s %10s %10s %9s\n", "version", "best ms", "GFLOP/s", "speed-up");
    for (size_t v = 0; v < seconds.size(); ++v)
        std::printf("%-22s %10.2f %10.2f %8.1fx\n", names[v], 1e3 * seconds[v], 2.0 * M * N * K / seconds[v] / 1e9,
                    seconds[0] / seconds[v]);

    // The blocked kernel adds each C element's products in another order (K blocks, and
    // FMA where the compiler uses it), so it agrees with the naive loop to rounding, not bit
    // for bit: the bound is K eps times the sum of |A[i, k] B[k, j]| <= K.
    const double bound = double(K) * std::numeric_limits<real>::epsilon() * double(K);
    const double diff = max_abs_difference(c_ijk, c_gemm1);
    std::printf("\nnaive (i, k, j) equals naive (i, j, k) bit for bit: %s\n", c_ijk == c_ikj ? "yes" : "no");
    std::printf("gemm agrees with the naive loop within the rounding bound: %s\n", diff <= bound ? "yes" : "no");
    std::printf("  (largest difference %.3g, bound K * eps * K = %.3g)\n", diff, bound);
    std::printf("gemm on 2 threads equals gemm on 1 thread bit for bit: %s\n",
                std::memcmp(c_gemm1.data(), c_gemm2.data(), c_gemm1.size() * sizeof(real)) == 0 ? "yes" : "no");
    return 0;
}
