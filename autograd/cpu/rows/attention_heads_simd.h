// attention_heads_simd.h — attention_heads.h's per-head kernel in float32 for AVX-512 and for
// AVX2 (attention_heads_simd_kernel.h, compiled once per level), which attention_heads.cpp calls
// at those levels where the shape fits; elsewhere its gemm-based loop runs.
#pragma once

#include <cstdint>

#include "patchgrad/autograd/cpu/rows/attention_heads.h"

#if defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE) && (defined(__GNUC__) || defined(__clang__))
#define PATCHGRAD_ATTENTION_SIMD 1
#else
#define PATCHGRAD_ATTENTION_SIMD 0
#endif

#if PATCHGRAD_ATTENTION_SIMD
namespace patchgrad {

// Whether the level's kernel takes these heads: 1 to 96 tokens and a head dimension of 16, 32
// or 64 (AVX-512) or of 16 or 32 (AVX2).
bool attention_heads_avx512_fits(const AttentionHeads& x);
bool attention_heads_avx2_fits(const AttentionHeads& x);

// attention_heads.h's functions, for a CPU with AVX-512, and with AVX2.
void attention_heads_forward_avx512(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out);
void attention_heads_forward_avx2(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out);
// [hide:attention-backward]
void attention_heads_backward_avx512(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout,
                                     float* dqkv, float beta, float* scale_parts);
void attention_heads_backward_avx2(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout,
                                   float* dqkv, float beta, float* scale_parts);
// [/hide:attention-backward]

}  // namespace patchgrad
#endif
