// cpu_isa.h — which vector instructions this CPU has, and which the kernels use.
//
// One binary runs on every CPU of its architecture. The hot kernels (gemm's micro-kernel and
// packing, see gemm_kernels.h) are compiled several times, once per instruction-set level,
// each in its own file with its own compiler flags; at run time the best level the CPU
// supports is chosen once. So the ordinary build is as fast as a -march=native one where it
// counts, and an AVX2 laptop and an AVX-512 server run the same file.
//
//   level      x86-64                          ARM64                  vector registers
//   baseline   SSE2 (every x86-64 CPU)         NEON (every ARM64 CPU) 16 bytes
//   avx2       AVX2 + FMA (Haswell, Zen 1+)    -                      16 x 32 bytes
//   avx512     AVX-512 F/BW/DQ/VL (Skylake-SP, Zen 4+)                32 x 64 bytes
//
// The environment variable PATCHGRAD_ISA (baseline, sse2, neon, avx2, avx512) forces a
// lower level, so that the AVX2 laptop's kernel can be measured and tested on an AVX-512
// server; asking for a level the CPU lacks is an error, never a crash. set_isa() does the
// same from code (the tests run the kernels at every level). Like the thread count, the level
// changes speed and, within float rounding, nothing else: each level is deterministic and
// bit-identical across thread counts, but two levels may differ in the last bits (a fused
// multiply-add rounds once, a multiply then an add twice).
#pragma once

#include <string>
#include <vector>

namespace patchgrad {

enum class Isa { Baseline = 0, Avx2 = 1, Avx512 = 2 };

// "sse2" or "neon" (or "generic" elsewhere) for baseline, "avx2", "avx512".
const char* isa_name(Isa isa);

// The levels this CPU supports, lowest first (always starting with baseline).
std::vector<Isa> supported_isas();

// The level the kernels use now: the best supported one, or PATCHGRAD_ISA's if set (read on
// first use). Throws std::invalid_argument for an unknown PATCHGRAD_ISA value or a level the
// CPU lacks, naming the variable, the value and what this CPU has.
Isa active_isa();

// Uses `isa` from now on. Throws std::invalid_argument if the CPU does not support it.
void set_isa(Isa isa);

// The CPU's name as the OS reports it ("Intel(R) Xeon(R) Processor"), for benchmark and
// training logs: a speed means little without it. "unknown CPU" where it cannot be read.
std::string cpu_model();

// "avx2" -> Isa::Avx2, also "sse2" / "neon" / "baseline" for the baseline; `what` names the
// source of the text (a flag or variable) in the error for anything else.
Isa parse_isa(const std::string& text, const std::string& what);

}  // namespace patchgrad

// ---- one loop, compiled for every level -------------------------------------------------------
//
// gemm's kernels have files of their own. The other hot loops (softmax's rows in rows/, GELU's
// and LayerNorm's and the row backwards in their op's file, next to the formula) are compiled
// several times in place: the loop is written as an always-inline function NAME_loop, and
//
//     PATCHGRAD_MULTIVERSION(NAME, (const real* x, real* y, int64_t n), (x, y, n))
//
// defines NAME(const real* x, real* y, int64_t n), which calls a copy of NAME_loop compiled
// with the target attribute of the active level (the compiler inlines the loop into each
// copy and vectorises it at that level's width). Only the float32 build is multiversioned:
// the float64 build exists for gradient checks, where speed matters little, and GCC 12
// miscompiles some float64 loops with AVX-512 (CMakeLists.txt, PATCHGRAD_NATIVE).
#define PATCHGRAD_ALWAYS_INLINE inline __attribute__((always_inline))
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PATCHGRAD_DOUBLE)
#define PATCHGRAD_MULTIVERSION(name, params, args)                                                     \
    __attribute__((target("avx2,fma"))) void name##_avx2 params { name##_loop args; }                  \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void name##_avx512 params { \
        name##_loop args;                                                                              \
    }                                                                                                  \
    void name params {                                                                                 \
        switch (::patchgrad::active_isa()) {                                                           \
            case ::patchgrad::Isa::Avx512:                                                             \
                return name##_avx512 args;                                                             \
            case ::patchgrad::Isa::Avx2:                                                               \
                return name##_avx2 args;                                                               \
            default:                                                                                   \
                return name##_loop args;                                                               \
        }                                                                                              \
    }
#else
#define PATCHGRAD_MULTIVERSION(name, params, args) \
    void name params { name##_loop args; }
#endif
