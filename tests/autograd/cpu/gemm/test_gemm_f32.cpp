#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, real, const real*, int64_t, const real*, int64_t, real,
                        real*, int64_t, const real*, const GemmRowsDone*, const GemmSources*);

// `kernel` and gemm_reference, both in float32, on random op(A) [M, K] and op(B) [K, N]
// (beta = 0): each has a rounding error of at most ~K/2 eps |op(A)| @ |op(B)| per element
// whatever its summation order, so they must agree within K eps of that (computed in double).
void check_f32(GemmFn kernel, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, uint64_t seed) {
    INFO("trans_a " << trans_a << " trans_b " << trans_b << " M " << M << " N " << N << " K " << K);
    Rng rng(seed);
    std::vector<real> A(M * K), B(K * N);
    for (auto& v : A) v = static_cast<real>(rng.uniform(-1, 1));
    for (auto& v : B) v = static_cast<real>(rng.uniform(-1, 1));
    const int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
    std::vector<real> expected(M * N), actual(M * N);
    gemm_reference(trans_a, trans_b, M, N, K, 1, A.data(), lda, B.data(), ldb, 0, expected.data(), N);
    kernel(trans_a, trans_b, M, N, K, 1, A.data(), lda, B.data(), ldb, 0, actual.data(), N, nullptr, nullptr, nullptr);

    const double eps = std::numeric_limits<float>::epsilon();
    int64_t bad = -1;
    double worst_ratio = 0;
    for (int64_t i = 0; i < M && bad < 0; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double abs_dot = 0;
            for (int64_t k = 0; k < K; ++k) {
                const double a = trans_a ? A[k * lda + i] : A[i * lda + k];
                const double b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                abs_dot += std::abs(a * b);
            }
            const double error = std::abs(double(actual[i * N + j]) - expected[i * N + j]);
            const double bound = double(K) * eps * abs_dot;
            worst_ratio = std::max(worst_ratio, error / bound);
            if (error > bound) {
                bad = i * N + j;
                break;
            }
        }
    INFO("worst error / bound " << worst_ratio << ", first mismatch at flat index " << bad);
    REQUIRE(bad == -1);
}

// The multiplies of a ViT-Tiny-like model (D = 128, 4 heads of 32, MLP 512, 65 tokens,
// patches of 4x4x3 = 48 values) on 2 images (R = 130 rows), in the forms linear and
// matmul use them: forward x @ W^T, backward dOut @ W and dOut^T @ x.
struct Shape3 {
    int64_t M, N, K;
};
const Shape3 kVitLinear[] = {{130, 384, 128}, {130, 128, 128}, {130, 512, 128},
                             {130, 128, 512}, {130, 128, 48},  {2, 10, 128}};

}  // namespace

TEST_CASE("gemm: float32 gemm agrees with gemm_reference on ViT shapes, at every instruction-set level",
          "[op:gemm][forward]") {
    for_each_isa([&](Isa) {
#ifdef PATCHGRAD_USE_OPENBLAS
        INFO("gemm is cblas_sgemm");
#else
        INFO("gemm is gemm_blocked");
#endif
        uint64_t seed = 0;
        for (GemmFn kernel : {gemm, gemm_blocked}) {
            for (const Shape3& s : kVitLinear) {
                check_f32(kernel, false, true, s.M, s.N, s.K, ++seed);   // y = x @ W^T
                check_f32(kernel, false, false, s.M, s.K, s.N, ++seed);  // dx = dy @ W
                check_f32(kernel, true, false, s.N, s.K, s.M, ++seed);   // dW = dy^T @ x
            }
            // Attention per head: scores q @ k^T [65, 32] x [65, 32] and scores @ v [65, 65] x [65, 32].
            check_f32(kernel, false, true, 65, 65, 32, ++seed);
            check_f32(kernel, false, false, 65, 32, 65, ++seed);
            check_f32(kernel, true, false, 65, 32, 65, ++seed);
            // 8 images' tokens (520 rows) with K past one cache block of 256.
            check_f32(kernel, false, true, 520, 384, 300, ++seed);
            // A weight gradient dy^T @ x over 300 rows: its transposed A (lda 384) is read in
            // place in K blocks of 85 (gemm.cpp's k_block), three whole ones and a part.
            check_f32(kernel, true, false, 384, 128, 300, ++seed);
        }
    });
}

TEST_CASE("gemm: float32 gemm_blocked packs B rows that end in part of a vector, every length, at every level",
          "[op:gemm][forward]") {
    // A row-major B's rows are copied into slivers of NR columns (up to 32): N = 1 .. 33 leaves
    // every count of columns in the last sliver. A transposed B's rows are loaded L values at a
    // time (16 floats with AVX-512) and transposed: K = 1 .. 33 ends them with every count of
    // values, which load_first builds from half, quarter, ... loads (gemm_tile.h).
    for_each_isa([&](Isa) {
        uint64_t seed = 1000;
        for (int64_t n = 1; n <= 33; ++n) check_f32(gemm_blocked, false, false, 13, n, 24, ++seed);
        for (int64_t k = 1; k <= 33; ++k) check_f32(gemm_blocked, false, true, 13, 65, k, ++seed);
        // Attention's products for heads of d = 24 (cifar-micro): q k^T, A v and A^T dO.
        check_f32(gemm_blocked, false, true, 65, 65, 24, ++seed);
        check_f32(gemm_blocked, false, false, 65, 24, 65, ++seed);
        check_f32(gemm_blocked, true, false, 65, 24, 65, ++seed);
    });
}

}  // namespace patchgrad
