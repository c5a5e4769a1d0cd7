// gemm_tile.h — gemm's micro-kernel and packing, written for one explicit vector width.
//
// Included only by gemm_baseline.cpp, gemm_avx2.cpp and gemm_avx512.cpp, each compiled with
// its own instruction-set flags, each instantiating Tile<Vector, MR, NV> for its registers:
//
//   file               flags (CMakeLists.txt)   Vector          tile MR x NR (float)  registers used
//   gemm_avx512.cpp    -march=x86-64-v4         64 bytes (16f)  12 x 32 (NV = 2)      24 acc + 2 B + 1 A of 32
//   gemm_avx2.cpp      -march=x86-64-v3         32 bytes (8f)   6 x 16  (NV = 2)      12 acc + 2 B + 1 A of 16
//   gemm_baseline.cpp  (the default: SSE2)      16 bytes (4f)   6 x 8   (NV = 2)      12 acc + 2 B + 1 A of 16
//                      (ARM64: NEON)            16 bytes (4f)   8 x 12  (NV = 3)      24 acc + 3 B + 1 A of 32
//
// Why the width is written down. Plain loops over a real acc[MR][NR] tile, left for the
// compiler to vectorise, depend on its tuning: where -march=native prefers 256-bit vectors
// (-mprefer-vector-width=256), GCC splits the 12 x 32 tile meant for 24 AVX-512 registers into
// 48 AVX2-sized ones, spills half of them to memory, and runs at half speed. A tile only fits
// the register file if the code says how wide a register is, so the tile here is an array of
// GCC/clang vector-extension values (`real __attribute__((vector_size(64)))` is 16 floats in
// one zmm register): `acc[i][v] += a * b[v]` is then one fused multiply-add instruction on a
// whole register, whatever the compiler's tuning prefers. The extensions are portable across
// GCC and clang on every architecture (no intrinsics): on ARM64 the same code is NEON.
//
// Everything here is in an anonymous namespace on purpose. The three files instantiate the
// same templates with different instructions; with ordinary (external) linkage the linker
// would keep one copy of each, possibly the AVX-512 one, and a CPU without AVX-512 would
// crash on it. Internal linkage gives every file its own copy. For the same reason nothing
// here calls a standard-library template (std::min etc.), only memcpy and memset.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"

namespace patchgrad {
namespace {

template <class Vector>
inline Vector load(const real* p) {
    Vector v;
    std::memcpy(&v, p, sizeof v);  // one unaligned vector load
    return v;
}

template <class Vector>
inline void store(real* p, Vector v) {
    std::memcpy(p, &v, sizeof v);
}

// (A scalar minus a zero vector is that scalar in every lane: one broadcast instruction. Plus
// a zero vector would cost an add, since -0 + 0 is +0.)

inline int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

// dst[0, n) = src[0, n) for n < 2P, P a power of two: copies of P, P / 2, ..., 1 reals, each
// of a size known at compile time.
template <int64_t P>
inline void copy_pieces(real* dst, const real* src, int64_t n) {
    if (n >= P) {
        std::memcpy(dst, src, P * sizeof(real));
        dst += P, src += P, n -= P;
    }
    if constexpr (P > 1) copy_pieces<P / 2>(dst, src, n);
}

// The largest power of two below w (w >= 2).
constexpr int64_t power_of_two_below(int64_t w) { return w <= 2 ? 1 : 2 * power_of_two_below((w + 1) / 2); }

// dst[0, n) = src[0, n) for n <= W. A whole sliver's run (n == W, all but the last sliver of
// a block) is one copy of a size known at compile time, which becomes a few vector moves; a
// loop with a run-time count stays scalar. A shorter run (attention's v rows at d = 24, in a
// 32-wide sliver) is copied in pieces of compile-time size too (tutorials/12_speed/measurements.md#kernel-notes).
template <int64_t W>
inline void copy_run(real* dst, const real* src, int64_t n) {
    if (n == W)
        std::memcpy(dst, src, W * sizeof(real));
    else
        copy_pieces<power_of_two_below(W)>(dst, src, n);
}

// ---- an L x L transpose in registers (pack_b of a transposed B) -------------------------------
//
// In log2(L) rounds, h = L/2, L/4, .., 1: rows i and i + h (for each i with i / h even) swap
// chunks of h lanes, row i keeping the even chunks of both, i + h the odd ones:
//     a = [a0 a1 | a2 a3], b = [b0 b1 | b2 b3]  ->  [a0 a1 | b0 b1], [a2 a3 | b2 b3]   (h = 2)
// after which row i holds column i. Each step is one two-vector shuffle whose lanes are known
// at compile time (__builtin_shufflevector, GCC 12+ and clang): lane I of the result comes from
// chunk 2 (I / 2h) + hi of a or (for odd I / h) of b.
template <int64_t L, int64_t h, bool hi, class Vector, int64_t... I>
inline Vector chunks(Vector a, Vector b, std::integer_sequence<int64_t, I...>) {
    return __builtin_shufflevector(a, b, ((2 * (I / (2 * h)) + hi) * h + I % h + (I / h) % 2 * L)...);
}

template <class Vector, int64_t L, int64_t h = L / 2>
inline void transpose(Vector (&r)[L]) {
    constexpr auto lanes = std::make_integer_sequence<int64_t, L>{};
#pragma GCC unroll 16
    for (int64_t i = 0; i < L; ++i)
        if ((i / h) % 2 == 0) {
            const Vector a = r[i], b = r[i + h];
            r[i] = chunks<L, h, false>(a, b, lanes);
            r[i + h] = chunks<L, h, true>(a, b, lanes);
        }
    if constexpr (h > 1) transpose<Vector, L, h / 2>(r);
}

// What C[i, j] becomes for the product `ab` (alpha * op(A) @ op(B) there), by the same formula
// as gemm_reference. beta == 0 never reads c, which may hold garbage.
inline real c_update(real ab, real beta, const real& c, const real* bias, int64_t j) {
    return ab + (beta == 0 ? real(0) : beta * c) + (bias ? bias[j] : real(0));
}

// The register widths. (Written out: GCC silently drops a vector_size that depends on a
// template parameter, leaving a scalar.)
typedef real Vector128 __attribute__((vector_size(16)));
typedef real Vector256 __attribute__((vector_size(32)));
typedef real Vector512 __attribute__((vector_size(64)));

// The vector of half the width, for load_first (16 bytes, the narrowest, has none).
template <class Vector>
struct Half {};
template <>
struct Half<Vector512> {
    using type = Vector256;
};
template <>
struct Half<Vector256> {
    using type = Vector128;
};

// [lo, hi]: two half vectors side by side in one (one insert instruction).
template <class Vector, class HalfVector, int64_t... I>
inline Vector joined(HalfVector lo, HalfVector hi, std::integer_sequence<int64_t, I...>) {
    return __builtin_shufflevector(lo, hi, I...);
}

// The first n (<= L) reals at p, the rest zero: the last run of a row, which may end the
// matrix (a whole-vector load would read past it). Built from loads of half the width, a
// quarter, ..., down to 16 bytes, then element by element: n small stores into a zeroed array
// and one load of it would wait on the stores (at d = 24 attention's transposed k and v end
// every row with 8 of 16 floats: tutorials/12_speed/measurements.md#kernel-notes).
template <class Vector, int64_t L>
inline Vector load_first(const real* p, int64_t n) {
    if (n >= L) return load<Vector>(p);
    if constexpr (sizeof(Vector) > 16) {
        using HalfVector = typename Half<Vector>::type;
        constexpr auto lanes = std::make_integer_sequence<int64_t, L>{};
        if (n >= L / 2)
            return joined<Vector>(load<HalfVector>(p), load_first<HalfVector, L / 2>(p + L / 2, n - L / 2), lanes);
        return joined<Vector>(load_first<HalfVector, L / 2>(p, n), HalfVector{}, lanes);
    } else {
        real part[L] = {};
        for (int64_t i = 0; i < n; ++i) part[i] = p[i];
        return load<Vector>(part);
    }
}

template <class Vector, int64_t MR, int64_t NV>
struct Tile {
    static_assert(sizeof(Vector) >= 16, "Vector must be a vector-extension type of 16 bytes or more");
    static constexpr int64_t L = sizeof(Vector) / sizeof(real);  // reals per vector
    static constexpr int64_t NR = NV * L;

    // [snippet:gemm-pack-a]
    static void pack_a(bool trans_a, const real* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc,
                       real* Ap) {
        for (int64_t s = 0; s < rows; s += MR) {
            const int64_t n = smaller(MR, rows - s);
            real* dst = Ap + s * kc;
            if (trans_a)  // op(A) = A^T: a column of the sliver is a contiguous run of A
                for (int64_t p = 0; p < kc; ++p) copy_run<MR>(dst + p * MR, A + (k0 + p) * lda + r0 + s, n);
            else  // read each row of A once, front to back
                for (int64_t i = 0; i < n; ++i)
                    for (int64_t p = 0; p < kc; ++p) dst[p * MR + i] = A[(r0 + s + i) * lda + k0 + p];
            for (int64_t p = 0; p < kc; ++p)
                for (int64_t i = n; i < MR; ++i) dst[p * MR + i] = 0;
        }
    }
    // [/snippet:gemm-pack-a]

    static void pack_a_rows(const real* A, int64_t lda, int64_t r0, int64_t k0, int64_t rows, int64_t kc, real* Ap) {
        for (int64_t s = 0; s < rows; s += MR) {
            const int64_t n = smaller(MR, rows - s);
            real* dst = Ap + s * kGemmKC;
            for (int64_t i = 0; i < n; ++i)
                std::memcpy(dst + i * kGemmKC, A + (r0 + s + i) * lda + k0, kc * sizeof(real));
            for (int64_t i = n; i < MR; ++i)
                for (int64_t p = 0; p < kc; ++p) dst[i * kGemmKC + p] = 0;
        }
    }

    static void pack_b(bool trans_b, const real* B, int64_t ldb, int64_t k0, int64_t c0, int64_t kc, int64_t cols,
                       real* Bp) {
        for (int64_t s = 0; s < cols; s += NR) {
            const int64_t n = smaller(NR, cols - s);
            real* dst = Bp + s * kc;
            if (trans_b) {
                // Column j of op(B) is row j of B: L rows of L values, transposed, are L rows of
                // L columns of the sliver (an element-by-element copy is a visible part of a step
                // for attention's k^T and v^T). Rows past the matrix are zeros, written as well.
                for (int64_t v = 0; v < NV; ++v)
                    for (int64_t p = 0; p < kc; p += L) {
                        const int64_t values = smaller(L, kc - p);
                        Vector r[L];
#pragma GCC unroll 16
                        for (int64_t j = 0; j < L; ++j)
                            r[j] = v * L + j < n
                                       ? load_first<Vector, L>(B + (c0 + s + v * L + j) * ldb + k0 + p, values)
                                       : Vector{};
                        transpose<Vector, L>(r);
                        for (int64_t q = 0; q < values; ++q) store(dst + (p + q) * NR + v * L, r[q]);
                    }
                continue;
            }
            // A last sliver's row is zeroed just before its copy overwrites the start, while it
            // is in cache: one memset of the whole sliver first is slower.
            for (int64_t p = 0; p < kc; ++p) {
                if (n < NR) std::memset(dst + p * NR, 0, NR * sizeof(real));
                copy_run<NR>(dst + p * NR, B + (k0 + p) * ldb + c0 + s, n);
            }
        }
    }

    // The micro-kernel over NB of the sliver's NV vectors (see MicroKernel in gemm_kernels.h).
    // How the micro-kernel finds element (i, p) of the A sliver: a[p * a_k + i * a_i].
    enum class ALayout { Packed, RowPacked, Strided };  // (MR, 1), (1, kGemmKC), as given

    // How many values of k ahead the kernel asks for a transposed A's rows: about 300 cycles of
    // AVX-512 multiply-adds, a trip to memory. Only for 16-lane vectors: AVX2's 6 x 16 tile, half
    // the multiply-adds per k, is not faster with it (tutorials/12_speed/measurements.md#kernel-notes).
    static constexpr int64_t kAhead = 24;
    static constexpr bool kPrefetchRows = L >= 16;
    template <int64_t NB, ALayout layout>
    static void micro_kernel(int64_t kc, const real* a, int64_t a_k, int64_t a_i, const real* b, real alpha, real beta,
                             const real* bias, real* c, int64_t ldc, int64_t mr, int64_t nr) {
        if (layout == ALayout::Packed) a_k = MR, a_i = 1;
        if (layout == ALayout::RowPacked) a_k = 1, a_i = kGemmKC;
        // [snippet:gemm-micro-kernel]
        // The C tile, in MR * NB vector registers, cleared by a loop: GCC turns `= {}` into a
        // `rep stos` on a copy in memory at every call, slow before a loop of at most 256 steps.
        Vector acc[MR][NB];
        // Ask for the C tile now, so that the final read-modify-write does not wait for memory
        // after the kc loop (a large C, like 1024 x 1024, is out of every cache by then).
        for (int64_t i = 0; i < mr; ++i) {
            __builtin_prefetch(c + i * ldc, 1);
            __builtin_prefetch(c + i * ldc + nr - 1, 1);
        }
#pragma GCC unroll 16
        for (int64_t i = 0; i < MR; ++i)
#pragma GCC unroll 4
            for (int64_t v = 0; v < NB; ++v) acc[i][v] = Vector{};
        // A transposed A read in place has the MR values of each k on a row of their own, lda
        // apart, a stride the hardware prefetchers follow late or not at all: ask for the row
        // kAhead steps on, both of the cache lines it may straddle (the block's last row near its
        // end, to stay inside the matrix).
        const bool rows_apart = kPrefetchRows && layout == ALayout::Strided && a_i == 1;
        for (int64_t p = 0; p < kc; ++p) {
            if (rows_apart) {
                const real* ahead = a + smaller(p + kAhead, kc - 1) * a_k;
                __builtin_prefetch(ahead);
                __builtin_prefetch(ahead + MR - 1);
            }
            Vector bv[NB];  // row p of the B sliver
#pragma GCC unroll 4
            for (int64_t v = 0; v < NB; ++v) bv[v] = load<Vector>(b + p * NR + v * L);
#pragma GCC unroll 16
            for (int64_t i = 0; i < MR; ++i) {
                const Vector ai = a[p * a_k + i * a_i] - Vector{};  // one value of A in every lane
#pragma GCC unroll 4
                for (int64_t v = 0; v < NB; ++v) acc[i][v] += ai * bv[v];  // a fused multiply-add
            }
        }
        // [/snippet:gemm-micro-kernel]
        if (nr == NB * L) {  // whole vectors; a tile at the bottom edge writes only its mr rows
            for (int64_t i = 0; i < MR && i < mr; ++i)
                for (int64_t v = 0; v < NB; ++v) {
                    real* cv = c + i * ldc + v * L;
                    const Vector old = beta == 0 ? Vector{} : beta * load<Vector>(cv);
                    store(cv, acc[i][v] * alpha + old + (bias ? load<Vector>(bias + v * L) : Vector{}));
                }
            return;
        }
        real tile[MR][NB * L];  // a tile at the right edge: only part of its columns are C
        std::memcpy(tile, acc, sizeof tile);
        for (int64_t i = 0; i < mr; ++i)
            for (int64_t j = 0; j < nr; ++j)
                c[i * ldc + j] = c_update(alpha * tile[i][j], beta, c[i * ldc + j], bias, j);
    }

    template <int64_t NB, ALayout layout>
    static constexpr MicroKernel kernel() {
        if constexpr (NB <= NV)
            return &micro_kernel<NB, layout>;
        else
            return nullptr;
    }

    static constexpr GemmKernels table(Isa isa) {
        static_assert(NV >= 1 && NV <= 3, "a tile uses one to three vectors per row");
        constexpr ALayout packed = ALayout::Packed, rows = ALayout::RowPacked, strided = ALayout::Strided;
        return GemmKernels{isa,
                           MR,
                           NR,
                           L,
                           &pack_a,
                           &pack_a_rows,
                           &pack_b,
                           {kernel<1, packed>(), kernel<2, packed>(), kernel<3, packed>()},
                           {kernel<1, rows>(), kernel<2, rows>(), kernel<3, rows>()},
                           {kernel<1, strided>(), kernel<2, strided>(), kernel<3, strided>()}};
    }
};

}  // namespace
}  // namespace patchgrad
