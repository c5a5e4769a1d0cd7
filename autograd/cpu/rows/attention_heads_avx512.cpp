// attention_heads_avx512.cpp — attention_heads_simd_kernel.h's kernel for AVX-512, over the
// vector operations of attention_heads_avx512_ops.h. Compiled with -march=x86-64-v4
// (CMakeLists.txt) and called only at the AVX-512 level.
#include "patchgrad/autograd/cpu/rows/attention_heads_simd.h"

#if PATCHGRAD_ATTENTION_SIMD

#include "patchgrad/autograd/cpu/rows/attention_heads_avx512_ops.h"
#include "patchgrad/autograd/cpu/rows/attention_heads_simd_kernel.h"

namespace patchgrad {

bool attention_heads_avx512_fits(const AttentionHeads& x) { return fits<Avx512>(x); }

void attention_heads_forward_avx512(const AttentionHeads& x, int64_t t0, int64_t t1, float* a, float* out) {
    forward<Avx512>(x, t0, t1, a, out);
}

// [hide:attention-backward]
void attention_heads_backward_avx512(const AttentionHeads& x, int64_t t0, int64_t t1, const float* a, const float* dout,
                                     float* dqkv, float beta, float* scale_parts) {
    backward<Avx512>(x, t0, t1, a, dout, dqkv, beta, scale_parts);
}
// [/hide:attention-backward]

}  // namespace patchgrad

#endif  // PATCHGRAD_ATTENTION_SIMD
