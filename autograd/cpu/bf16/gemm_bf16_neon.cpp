// gemm_bf16_neon.cpp — the bf16 kernels for ARM64 CPUs with the BF16 extension (gemm_bf16.h,
// gemm_kernels.h): FEAT_BF16, part of Armv8.6 and optional from Armv8.2 (Apple M2 and later,
// Neoverse V1 and N2, AWS Graviton 3 and later). Compiled with -march=armv8.2-a+bf16
// (CMakeLists.txt) and used only where the operating system reports BF16 (gemm_bf16.cpp).
// Everything is in an anonymous namespace and calls no standard-library template, for the
// reason gemm_tile.h gives.
//
// The instruction: BFDOT with a lane index (vbfdotq_laneq_f32(acc, b, a, lane)) treats each
// 32-bit lane of b and a as a pair of bf16 values and does, per lane j,
//     acc[j] += b.lo[j] * a.lo[lane] + b.hi[j] * a.hi[lane]      (two multiply-adds, in float32)
// which is x86's vdpbf16ps with A's pair taken from one lane of a register: one load of four
// rows' pairs serves four rows, where x86 broadcasts each row's pair. Unlike vdpbf16ps, BFDOT
// rounds its sums to *odd*, not to nearest (and flushes denormals to zero): an error of up to
// one float32 ulp per addition instead of half a ulp, which the tests' bound accounts for
// (gemm_bf16_sum_roundoff in gemm_bf16.h).
//
// The tile is 12 x 8: 24 accumulators (12 rows x 2 vectors of 4 columns), 2 registers of B's
// pairs and 3 of A's (12 rows) make 29 of the 32. Packing rounds with the portable
// round_to_bf16 (bf16.h), one element at a time: it touches each input once per block, the
// kernel K times.
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC) && !defined(PATCHGRAD_DOUBLE)
#include <arm_neon.h>

#include "patchgrad/autograd/cpu/bf16/bf16.h"

namespace patchgrad {
namespace {

constexpr int64_t MR = 12, NV = 2, L = 4, NR = NV * L, AV = MR / L;

// P[s][q][i] = the pair op(X)[r0 + s*W + i, k0 + 2q .. 2q+1] (low half k0 + 2q), for slivers
// of W rows, zero-padded to whole slivers (and the second value of the last pair of an odd
// kc); op(X)[r, k] is X[k * ld + r] when trans, X[r * ld + k] otherwise. Packing A is this
// with W = MR; packing B is this for op(B)^T (whose rows are op(B)'s columns) with W = NR.
template <int64_t W>
void pack_pairs(bool trans, const float* X, int64_t ld, int64_t r0, int64_t k0, int64_t rows, int64_t kc, uint32_t* P) {
    const int64_t pairs = (kc + 1) / 2;
    auto rounded = [&](int64_t r, int64_t k) -> uint32_t {
        if (r >= rows || k >= kc) return 0;
        return round_to_bf16(trans ? X[(k0 + k) * ld + r0 + r] : X[(r0 + r) * ld + k0 + k]);
    };
    for (int64_t s = 0; s < rows; s += W)
        for (int64_t q = 0; q < pairs; ++q)
            for (int64_t i = 0; i < W; ++i)
                P[s * pairs + q * W + i] = rounded(s + i, 2 * q) | rounded(s + i, 2 * q + 1) << 16;
}

void pack_a(bool trans_a, const float* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc, uint32_t* Ap) {
    pack_pairs<MR>(trans_a, A, lda, r0, k0, rows, kc, Ap);
}

void pack_b(bool trans_b, const float* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols, uint32_t* Bp) {
    pack_pairs<NR>(!trans_b, B, ldb, c0, k0, cols, kc, Bp);  // op(B)^T is stored transposed unless B is
}

inline bfloat16x8_t load_pairs(const uint32_t* p) { return vreinterpretq_bf16_u32(vld1q_u32(p)); }

// Rows g*4 + lane of the tile, for g = 0, 1, 2: their pairs are lane `lane` of a[g]. The lane
// is a template argument because BFDOT encodes it in the instruction.
template <int lane, int64_t NB>
inline void rows_at_lane(float32x4_t (&acc)[MR][NB], const bfloat16x8_t (&a)[AV], const bfloat16x8_t (&b)[NB]) {
#pragma GCC unroll 3
    for (int64_t g = 0; g < AV; ++g)
#pragma GCC unroll 2
        for (int64_t v = 0; v < NB; ++v)
            acc[g * L + lane][v] = vbfdotq_laneq_f32(acc[g * L + lane][v], b[v], a[g], lane);
}

template <int64_t NB>
void micro_kernel(int64_t pairs, const uint32_t* a, const uint32_t* b, float alpha, float beta, const float* bias,
                  float* c, int64_t ldc, int64_t mr, int64_t nr) {
    float32x4_t acc[MR][NB];
#pragma GCC unroll 12
    for (int64_t i = 0; i < MR; ++i)
#pragma GCC unroll 2
        for (int64_t v = 0; v < NB; ++v) acc[i][v] = vdupq_n_f32(0);
    for (int64_t q = 0; q < pairs; ++q) {
        bfloat16x8_t bv[NB], av[AV];  // pair q of 4 columns per register; of 4 rows per register
#pragma GCC unroll 2
        for (int64_t v = 0; v < NB; ++v) bv[v] = load_pairs(b + q * NR + v * L);
#pragma GCC unroll 3
        for (int64_t g = 0; g < AV; ++g) av[g] = load_pairs(a + q * MR + g * L);
        rows_at_lane<0>(acc, av, bv);
        rows_at_lane<1>(acc, av, bv);
        rows_at_lane<2>(acc, av, bv);
        rows_at_lane<3>(acc, av, bv);
    }
    for (int64_t i = 0; i < mr; ++i)
        for (int64_t v = 0; v < NB; ++v) {
            const int64_t cols = nr - v * L;  // C may end inside this vector: no lane past nr is touched
            if (cols <= 0) break;
            float out[L];
            vst1q_f32(out, acc[i][v]);
            float* cv = c + i * ldc + v * L;
            for (int64_t j = 0; j < L && j < cols; ++j)
                cv[j] = alpha * out[j] + (beta != 0 ? beta * cv[j] : 0.0f) + (bias ? bias[v * L + j] : 0.0f);
        }
}

}  // namespace

const Bf16Kernels gemm_bf16_kernels_neon = {
    "neon_bf16 (bfdot)",
    MR,
    NR,
    L,
    1,
    144 / MR* MR,
    kGemmKC,
    false,
    0x1p-23,
    &pack_a,
    &pack_b,
    {&micro_kernel<1>, &micro_kernel<2>},
    {&micro_kernel<1>, &micro_kernel<2>}};  // (pack_a writes [q][i] for both transposes)

}  // namespace patchgrad
#endif
