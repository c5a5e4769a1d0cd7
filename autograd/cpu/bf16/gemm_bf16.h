// gemm_bf16.h — matrix products with bf16 inputs and float32 accumulation (mixed precision).
//
//     C[M, N] = alpha * bf16(op(A)) @ bf16(op(B)) + beta * C (+ bias),  every sum in float32
//
// What `--precision bf16` changes, and only this: each input of a matrix product is rounded
// to bfloat16 (bf16.h) before it is multiplied; the products (exact in float32) and their
// sums, C, the bias, and everything outside matrix products stay float32. It is PyTorch's
// `torch.autocast("cpu", dtype=torch.bfloat16)` for a model whose only low-precision ops are
// matmul and linear. Why the rest stays float32 is in chapter 12: sums of thousands of terms
// lose everything below 2^-8 of their size in bf16, and so would weights receiving updates
// a thousand times smaller than themselves. With AMX's kernel, attention's heads have a tile
// kernel of their own (autograd/cpu/rows/attention_heads_amx.h: its products in bf16 too, for
// heads of 8 to 64); the small products gemm_small (gemm.h) is given stay float32 there,
// where gemm's tiles do not pay.
//
// Where the CPU has a bf16 dot-product instruction (x86-64 AVX512_BF16: vdpbf16ps, two
// multiply-adds per float32 lane per instruction, twice float32's FMA; Intel Xeon since Cooper
// Lake, AMD Zen 4 and later), the native kernel runs (gemm_bf16_avx512.cpp); on ARM64 with the
// BF16 extension (Apple M2 and later, Neoverse V1/N2) BFDOT does the same (gemm_bf16_neon.cpp). Twice the work
// per instruction is not twice the speed: on an Intel Xeon of CPU family 6 model 207 the
// instruction issues at a quarter of the FMA's rate, so bf16 is half as fast there; on an AMD
// EPYC Zen 5 it issues at the FMA's rate, twice float32's peak (chapter 12.9; `patchgrad bench
// matmul` prints both peaks). Elsewhere, and when PATCHGRAD_ISA asks
// for less than avx512, the product is *emulated*: the inputs are rounded to bf16 and
// multiplied by the float32 gemm. The emulation gives the same numbers within float32
// rounding of the sums (and for inputs below 1.2e-38, which the native conversion flushes to
// zero) but is no faster than float32 (a little slower: it copies both inputs), so it exists
// for testing and for checking accuracy, and says so in its name.
//
// Where the CPU has Intel's AMX tiles (Xeon since Sapphire Rapids) and Linux grants this
// process their state, a kernel of tdpbf16ps runs instead (gemm_bf16_amx_tile.h: 8,192
// multiply-adds per instruction, its blocks packed by gemm_bf16_avx512.cpp's conversions, its
// A packed one 32-row sliver at a time, which stays in L1, where tile loads are fast, for its
// whole row of C); its results on a small product are checked against float64
// the first time bf16 is used, and a kernel that fails is set aside (the description says so,
// naming the shape, the transposes and the worst element). Its packing, K loop and edges are
// tested on every CPU through an emulation of the tile instructions, and on AMX hardware by the
// test "amx: the native kernel ..." (skipped elsewhere).
//
// The environment variable PATCHGRAD_BF16 (auto, amx, vdpbf16ps, bfdot, emulated; read once)
// names the kernel instead of the best one, as PATCHGRAD_ISA does for float32: an AMX machine
// can then measure what a CPU with AVX512_BF16 alone gets (vdpbf16ps), or the emulation. A
// kernel this CPU, its operating system or PATCHGRAD_ISA does not allow is an error naming
// why, never a quiet fallback.
//
// Like float32 gemm, the result depends on M, N, K, the transposes and the kernel, never on
// the thread count.
#pragma once

#include <cstdint>
#include <string>

#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"  // GemmRowsDone
#include "patchgrad/autograd/precision.h"              // MatmulPrecision, set_matmul_precision

namespace patchgrad {

// Whether this CPU, at the active instruction-set level (cpu_isa.h), has a native bf16 kernel.
bool bf16_native();

// Reads PATCHGRAD_BF16 if it has not been read, and throws std::invalid_argument if it names
// no kernel. The patchgrad program calls it before every command, so a misspelt value is an
// error in a float32 run too, not only once a bf16 product reads it.
void check_bf16_setting();

// The relative error bound of one addition in the sums of gemm_bf16 now: 2^-24 (float32's unit
// roundoff, round to nearest) for the emulation and x86's vdpbf16ps, 2^-23 for ARM's BFDOT,
// which rounds to odd. A sum of K products of bf16 values is then within
// gamma = K s / (1 - K s) of its exact value, relative to the sum of their magnitudes.
double gemm_bf16_sum_roundoff();

// Whether the bf16 kernel in use is AMX's (gemm_small, gemm.h, keeps small products float32 then).
bool gemm_bf16_is_amx();

// The kernel a bf16 product uses now, e.g. "bf16 avx512_bf16 (vdpbf16ps), tile 12 x 32",
// "bf16 amx (tdpbf16ps), tile 32 x 32; attention's heads on tiles of their own" or
// "bf16 emulated in float32 (this CPU has no bf16 instructions: not faster than fp32)".
std::string gemm_bf16_description();

// The bf16 product by the native kernel where bf16_native(), by the emulation otherwise.
// Arguments as in gemm() (gemm.h).
void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const float* bias = nullptr,
               const GemmRowsDone* rows_done = nullptr, const GemmSources* sources = nullptr);

// Always the emulation: inputs rounded to bf16, multiplied by the float32 gemm_blocked.
void gemm_bf16_emulated(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                        int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                        const float* bias = nullptr, const GemmRowsDone* rows_done = nullptr,
                        const GemmSources* sources = nullptr);

}  // namespace patchgrad
