// attention_heads_amx.h — attention_heads.h's per-head kernel with its products on AMX tiles,
// for the bf16 precision where gemm_bf16's kernel is AMX's (attention_heads.cpp chooses it).
// Compiled where the compiler knows AMX (CMakeLists.txt then defines PATCHGRAD_AMX); run only
// after gemm_bf16 has found AMX usable (gemm_bf16_is_amx()).
#pragma once

#include <cstdint>

#include "patchgrad/autograd/cpu/rows/attention_heads.h"

// Whether this file's kernel is built here: the float32 build, by a compiler that knows AMX.
#if defined(PATCHGRAD_AMX) && !defined(PATCHGRAD_DOUBLE)
#define PATCHGRAD_ATTENTION_AMX 1
#else
#define PATCHGRAD_ATTENTION_AMX 0
#endif

#if defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE)
namespace patchgrad {

// Whether the tiles take these heads: 1 to 96 tokens and a head dimension of 8 to 64, a
// multiple of 8 (false where the compiler does not know AMX). A dimension that does not fill
// whole tiles (cifar-micro's 24) is padded with zeros in the tiles and masked in memory.
bool attention_heads_amx_fits(const AttentionHeads& x);

#if PATCHGRAD_ATTENTION_AMX

// attention_heads.h's functions with q k^T, A v and the backward's four products in bf16 (inputs
// rounded to bf16, sums in float32, as gemm_bf16); the softmax and dS in float32.
void attention_heads_forward_amx(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out);
// [hide:attention-backward]
void attention_heads_backward_amx(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout,
                                  float* dqkv, float beta, float* scale_parts);
// [/hide:attention-backward]
#endif

}  // namespace patchgrad
#endif
