// attention_heads_avx512.h — attention_heads.h's per-head kernel for AVX-512 in float32
// (attention_heads_avx512.cpp), which attention_heads.cpp calls at that level where the
// shape fits; elsewhere its gemm-based loop runs.
#pragma once

#include <cstdint>

#include "patchgrad/autograd/cpu/rows/attention_heads.h"

#if defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE) && (defined(__GNUC__) || defined(__clang__))
#define PATCHGRAD_ATTENTION_AVX512 1
#else
#define PATCHGRAD_ATTENTION_AVX512 0
#endif

#if PATCHGRAD_ATTENTION_AVX512
namespace patchgrad {

// Whether the kernel takes these heads: 1 to 96 tokens, a head dimension of 16, 32 or 64.
bool attention_heads_avx512_fits(const AttentionHeads& x);

// attention_heads.h's functions, for a CPU with AVX-512.
void attention_heads_forward_avx512(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out);
// [hide:attention-backward]
void attention_heads_backward_avx512(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout,
                                     float* dqkv, float beta, float* scale_parts);
// [/hide:attention-backward]

}  // namespace patchgrad
#endif
