// matmul_bench — GFLOP/s of the gemm kernels on one shape.
//
//   matmul_bench M N K [repeats]
//
// Times C[M, N] = A[M, K] @ B[K, N] for gemm_blocked, gemm_reference (only when M*N*K is
// small enough to finish quickly) and cblas_sgemm / cblas_dgemm when built with
// PATCHGRAD_USE_OPENBLAS; also the transposed forms that linear's forward (x @ W^T) and
// backward (dOut^T @ x) use. Reports the best of `repeats` runs (default 5) after one warm-up.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "autograd/gemm.h"
#include "autograd/rng.h"

#ifdef PATCHGRAD_USE_OPENBLAS
#include <cblas.h>
#endif

using namespace patchgrad;

namespace {

double best_seconds(int repeats, const std::function<void()>& run) {
    run();
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        run();
        const auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    }
    return best;
}

int64_t parse_size(const char* s, const char* name) {
    char* end = nullptr;
    const long long v = std::strtoll(s, &end, 10);
    if (*end != '\0' || v <= 0) {
        std::fprintf(stderr, "matmul_bench: %s must be a positive integer, got '%s'\n", name, s);
        std::exit(2);
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4 || argc > 5) {
        std::fprintf(stderr, "usage: %s M N K [repeats]\n", argv[0]);
        return 2;
    }
    const int64_t M = parse_size(argv[1], "M"), N = parse_size(argv[2], "N"), K = parse_size(argv[3], "K");
    const int repeats = argc == 5 ? static_cast<int>(parse_size(argv[4], "repeats")) : 5;

    // A is stored [M, K] or [K, M], B [K, N] or [N, K]: the same numbers serve every transpose.
    Rng rng(0);
    std::vector<real> A(M * K), B(K * N), C(M * N);
    for (auto& v : A) v = static_cast<real>(rng.uniform(-1, 1));
    for (auto& v : B) v = static_cast<real>(rng.uniform(-1, 1));
    const double gflop = 2.0 * double(M) * double(N) * double(K) * 1e-9;

    std::printf("M=%lld N=%lld K=%lld, %s, best of %d\n", static_cast<long long>(M),
                static_cast<long long>(N), static_cast<long long>(K),
                sizeof(real) == 4 ? "float32" : "float64", repeats);
    const char* names[] = {"A @ B    ", "A @ B^T  ", "A^T @ B  "};
    const bool trans[][2] = {{false, false}, {false, true}, {true, false}};
    for (int t = 0; t < 3; ++t) {
        const bool ta = trans[t][0], tb = trans[t][1];
        const int64_t lda = ta ? M : K, ldb = tb ? K : N;
        std::printf("%s", names[t]);
        const double blocked = best_seconds(repeats, [&] {
            gemm_blocked(ta, tb, M, N, K, 1, A.data(), lda, B.data(), ldb, 0, C.data(), N);
        });
        std::printf("  blocked %8.2f GFLOP/s", gflop / blocked);
        if (double(M) * double(N) * double(K) <= 64.0 * 1024 * 1024) {
            const double reference = best_seconds(std::min(repeats, 2), [&] {
                gemm_reference(ta, tb, M, N, K, 1, A.data(), lda, B.data(), ldb, 0, C.data(), N);
            });
            std::printf("  reference %8.2f GFLOP/s", gflop / reference);
        }
#ifdef PATCHGRAD_USE_OPENBLAS
        const double blas = best_seconds(repeats, [&] {
#ifdef PATCHGRAD_DOUBLE
            cblas_dgemm(
#else
            cblas_sgemm(
#endif
                CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1, A.data(),
                static_cast<int>(lda), B.data(), static_cast<int>(ldb), 0, C.data(), static_cast<int>(N));
        });
        std::printf("  openblas %8.2f GFLOP/s", gflop / blas);
#endif
        std::printf("\n");
    }
    return 0;
}
