// gemm_bf16.cpp — the matmul precision setting, and the driver of the bf16 kernels.
#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "patchgrad/autograd/cpu/aligned_vector.h"
#include "patchgrad/autograd/cpu/bf16/bf16.h"
#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/gemm/gemm_blocks.h"
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"
#include "patchgrad/autograd/cpu/prefetch.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"

#if defined(PATCHGRAD_AMX) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace patchgrad {

// PATCHGRAD_BF16 (gemm_bf16.h): which bf16 kernel may run, read once by bf16_choice().
enum class Bf16Choice { Best, Amx, Vdpbf16ps, Bfdot, Emulated };
template <>
struct EnumNames<Bf16Choice> {
    static constexpr std::pair<Bf16Choice, const char*> table[] = {{Bf16Choice::Best, "auto"},
                                                                   {Bf16Choice::Amx, "amx"},
                                                                   {Bf16Choice::Vdpbf16ps, "vdpbf16ps"},
                                                                   {Bf16Choice::Bfdot, "bfdot"},
                                                                   {Bf16Choice::Emulated, "emulated"}};
};

namespace {

std::atomic<int>& precision_setting() {
    static std::atomic<int> precision{static_cast<int>(MatmulPrecision::Fp32)};
    return precision;
}

// The CPU's bf16 dot product, checked like the levels in cpu_isa.cpp (the OS must save the
// AVX-512 registers too, which active_isa() == avx512 already says).
bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
}

// ARM64's BF16 extension, as the operating system reports it.
bool cpu_has_arm_bf16() {
#if defined(__aarch64__) && defined(__linux__)
    constexpr unsigned long kHwcap2Bf16 = 1ul << 14;  // HWCAP2_BF16 of <asm/hwcap.h>
    return (getauxval(AT_HWCAP2) & kHwcap2Bf16) != 0;
#elif defined(__aarch64__) && defined(__APPLE__)
    int has = 0;
    size_t size = sizeof has;
    return sysctlbyname("hw.optional.arm.FEAT_BF16", &has, &size, nullptr, 0) == 0 && has != 0;
#else
    return false;
#endif
}

// Whether AMX's kernel may run: the CPU has AMX-TILE and AMX-BF16 (CPUID leaf 7: EDX bits 24
// and 22), Linux grants this process the tile registers' state (from Linux 5.16 a program must
// ask, and a kernel or hypervisor that does not offer AMX says no), and the kernel's results on
// a small product are within the bf16 error bound of float64 (bf16_kernel_check: a kernel that
// misreads its tiles fails it by far, and is set aside with the check's message).
enum class Amx { Absent, Refused, FailedCheck, Usable };
struct AmxStatus {
    Amx state;
    std::string failure;  // the first-use check's message, for failed_check
};
const AmxStatus& amx_status() {
#if defined(PATCHGRAD_AMX) && defined(__linux__) && !defined(PATCHGRAD_DOUBLE)
    static const AmxStatus status = []() -> AmxStatus {
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22)) ||
            !cpu_has_avx512_bf16())  // (its packing converts with AVX512_BF16, which AMX CPUs all have)
            return {Amx::Absent, ""};
        constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;  // <asm/prctl.h>
        if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return {Amx::Refused, ""};
        std::string failure = bf16_kernel_check(gemm_bf16_kernels_amx);
        return {failure.empty() ? Amx::Usable : Amx::FailedCheck, failure};
    }();
#else
    static const AmxStatus status{Amx::Absent, ""};
#endif
    return status;
}

// Why AMX's kernel does not run although the CPU has AMX, or "" (absent or usable).
std::string amx_refusal() {
    switch (amx_status().state) {
        case Amx::Refused:
            return "the CPU has AMX, but the operating system refused it";
        case Amx::FailedCheck:
            return "the CPU has AMX, but its kernel failed the check on first use: " + amx_status().failure;
        default:
            return "";
    }
}

Bf16Choice bf16_choice() {
    static const Bf16Choice choice = [] {
        const char* text = std::getenv("PATCHGRAD_BF16");
        return text && *text ? parse_enum<Bf16Choice>(text, "PATCHGRAD_BF16") : Bf16Choice::Best;
    }();
    return choice;
}

// The native kernels `choice` allows on this CPU at the active instruction-set level (for
// `best`, the fastest of them), or null.
const Bf16Kernels* allowed_kernels(Bf16Choice choice) {
    // Whether `choice` lets `kernel` run: it names that kernel, or asks for the best.
    const auto allows = [choice](Bf16Choice kernel) { return choice == Bf16Choice::Best || choice == kernel; };
#if defined(__x86_64__) && !defined(PATCHGRAD_DOUBLE)
    static const bool has = cpu_has_avx512_bf16();
    if (active_isa() != Isa::Avx512) return nullptr;
#ifdef PATCHGRAD_AMX
    if (allows(Bf16Choice::Amx) && amx_status().state == Amx::Usable) return &gemm_bf16_kernels_amx;
#endif
    return has && allows(Bf16Choice::Vdpbf16ps) ? &gemm_bf16_kernels_avx512 : nullptr;
#elif defined(PATCHGRAD_NEON_BF16) && !defined(PATCHGRAD_DOUBLE)
    static const bool has = cpu_has_arm_bf16();
    return has && allows(Bf16Choice::Bfdot) ? &gemm_bf16_kernels_neon : nullptr;
#else
    (void)allows;
    return nullptr;
#endif
}

// The native kernels for this CPU at the active instruction-set level, or null where the
// product is emulated. A kernel PATCHGRAD_BF16 names that cannot run here is an error, never
// a quiet fallback: a measurement of it would measure something else.
const Bf16Kernels* native_kernels() {
    const Bf16Choice choice = bf16_choice();
    if (choice == Bf16Choice::Emulated) return nullptr;
    const Bf16Kernels* kernels = allowed_kernels(choice);
    if (!kernels && choice != Bf16Choice::Best) {
        std::string why = amx_refusal();
        if (cpu_has_avx512_bf16() && active_isa() != Isa::Avx512 && choice != Bf16Choice::Bfdot)
            why = "PATCHGRAD_ISA is below avx512";
        else if (choice == Bf16Choice::Vdpbf16ps)
            why = "this CPU has no AVX512_BF16";
        else if (choice == Bf16Choice::Bfdot)
            why = "this CPU has no ARM BF16, or this build's compiler does not target it";
        else if (why.empty())
            why = "this CPU has no AMX-BF16, or this build's compiler does not know AMX";
        throw std::invalid_argument("PATCHGRAD_BF16=" + enum_name(choice) + ": that kernel cannot run here (" + why +
                                    ")");
    }
    return kernels;
}

}  // namespace

MatmulPrecision matmul_precision() { return static_cast<MatmulPrecision>(precision_setting().load()); }

void set_matmul_precision(MatmulPrecision precision) {
#ifdef PATCHGRAD_DOUBLE
    if (precision != MatmulPrecision::Fp32)
        throw std::invalid_argument(
            "set_matmul_precision: bf16 products exist in the float32 build only (this is the float64 build)");
#endif
    precision_setting().store(static_cast<int>(precision));
}

bool bf16_native() { return native_kernels() != nullptr; }

void check_bf16_setting() { bf16_choice(); }

double gemm_bf16_sum_roundoff() {
    const Bf16Kernels* kernels = native_kernels();
    return kernels ? kernels->sum_roundoff : std::ldexp(1.0, -24);
}

bool gemm_bf16_is_amx() {
#if defined(PATCHGRAD_AMX) && !defined(PATCHGRAD_DOUBLE)
    return native_kernels() == &gemm_bf16_kernels_amx;
#else
    return false;
#endif
}

std::string gemm_bf16_description() {
    if (const Bf16Kernels* k = native_kernels()) {
        const std::string note =
            bf16_choice() != Bf16Choice::Best ? "PATCHGRAD_BF16=" + enum_name(bf16_choice()) : amx_refusal();
        return std::string("bf16 ") + k->name + ", tile " + std::to_string(k->mr) + " x " + std::to_string(k->nr) +
               (note.empty() ? "" : " (" + note + ")") +
               (gemm_bf16_is_amx() ? "; attention's heads on tiles of their own" : "");
    }
    std::string why = "this CPU has no bf16 instructions";
    if (bf16_choice() == Bf16Choice::Emulated)
        why = "PATCHGRAD_BF16=emulated";
    else if (cpu_has_avx512_bf16())
        why = "PATCHGRAD_ISA is below avx512";
    else if (cpu_has_arm_bf16())
        why = "this build's compiler does not target ARM's BF16";
    return "bf16 emulated in float32 (" + why + ": not faster than fp32)";
}

#ifndef PATCHGRAD_DOUBLE

void gemm_bf16_emulated(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                        int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const float* bias,
                        const GemmRowsDone* rows_done, const GemmSources* sources) {
    if (M <= 0 || N <= 0) return;
    GemmOperands o;  // (a computed operand written whole first)
    gemm_operands(trans_a, trans_b, M, N, K, A, lda, B, ldb, sources, o);
    // Dense rounded copies of op(A) [M, K] and op(B) [K, N]; a bf16 value is a float whose low
    // 16 bits are zero, so the float32 kernel multiplies exactly the bf16 inputs.
    std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N));
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k)
            a[i * K + k] = bf16_to_float(round_to_bf16(trans_a ? o.A[k * o.lda + i] : o.A[i * o.lda + k]));
    for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j)
            b[k * N + j] = bf16_to_float(round_to_bf16(trans_b ? o.B[j * o.ldb + k] : o.B[k * o.ldb + j]));
    gemm_blocked(false, false, M, N, K, alpha, a.data(), K, b.data(), N, beta, C, ldc, bias, rows_done);
}

// gemm_blocked's loops (gemm.cpp explains the blocking) with every block packed as bf16 pairs:
// A always packed (the float32 driver's in-place reading of A has nothing to read, since A must be
// rounded anyway). Threads split the rows of C, so the result does not depend on them, and
// share the panels of B as gemm_blocks.h says.
void gemm_bf16_with(const Bf16Kernels& kernels, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                    float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                    int64_t ldc, const float* bias, const GemmRowsDone* rows_done, const GemmSources* sources) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0)
        return gemm_bf16_emulated(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done);
    const GemmOperandSource* a_source = sources ? sources->a : nullptr;
    const GemmOperandSource* b_source = sources ? sources->b : nullptr;
    if (kernels.transpose_wide_weight_gradients && trans_a && !trans_b && M > N && !bias && !rows_done) {
        // C^T = B^T A [N, M] into this thread's buffer, then C = C^T's transpose + beta C.
        thread_local AlignedVector<float> c_transposed;
        c_transposed.resize(static_cast<size_t>(M * N));
        const float* p = c_transposed.data();
        const GemmSources swapped{b_source, a_source};
        gemm_bf16_with(kernels, true, false, N, M, K, alpha, B, ldb, A, lda, 0, c_transposed.data(), M, nullptr,
                       nullptr, &swapped);
        parallel_for(M, grain_for_elements(N), [=](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i)
                for (int64_t j = 0; j < N; ++j)
                    C[i * ldc + j] = p[j * M + i] + (beta == 0 ? 0.0f : beta * C[i * ldc + j]);
        });
        return;
    }
    constexpr int64_t NC = 1536;
    const int64_t KC = kernels.kc, MR = kernels.mr, NR = kernels.nr, V = kernels.vector, PB = kernels.pair_block,
                  MC = kernels.mc;
    const auto column_words = [PB](int64_t kc) { return bf16_pairs(kc, PB); };
    const auto pack_panel = [&](int64_t pc, int64_t kc, int64_t c0, int64_t cols, uint32_t* Bp) {
        if (!b_source) return kernels.pack_b(trans_b, B, ldb, pc, c0, kc, cols, Bp);
        thread_local AlignedVector<float> block;  // the panel's block of B, computed
        int64_t ld;
        const float* b = source_block(*b_source, !trans_b, c0, cols, pc, kc, block, ld);
        kernels.pack_b(trans_b, b, ld, 0, 0, kc, cols, Bp);
    };
    const Bf16MicroKernel* micro = trans_a ? kernels.micro : kernels.micro_rows;
    // C's slivers [s0, s1) += their block of op(A) @ the panel Bp, for K block pc.
    const auto multiply = [&](int64_t pc, int64_t kc, int64_t jc, int64_t nc, int64_t s0, int64_t s1,
                              const uint32_t* Bp, GemmTarget<float> target) {
        const int64_t pairs = bf16_pairs(kc, PB);
        const float beta_block = target.first ? (target.partial ? 0.0f : beta) : 1.0f;
        const float* bias_block = target.first && !target.partial && bias ? bias + jc : nullptr;
        float* const C = target.c;
        const int64_t ldc = target.ldc;
        thread_local AlignedVector<uint32_t> a_pack;
        a_pack.resize(static_cast<size_t>(bf16_pairs(KC, PB) * MC));
        uint32_t* Ap = a_pack.data();
        const int64_t row_end = std::min(M, s1 * MR);
        for (int64_t ic = s0 * MR; ic < row_end; ic += MC) {
            const int64_t mc = std::min(MC, row_end - ic);
            if (a_source) {  // the block that A's source computes
                thread_local AlignedVector<float> block;
                int64_t ld;
                const float* a = source_block(*a_source, trans_a, ic, mc, pc, kc, block, ld);
                kernels.pack_a(trans_a, a, ld, 0, 0, mc, kc, Ap);
            } else {
                kernels.pack_a(trans_a, A, lda, ic, pc, mc, kc, Ap);
            }
            // (Into L2: the next block is packed a block later, which L2 is near enough for.)
            BlockPrefetch<float, 2> next = A ? BlockPrefetch<float, 2>::after(trans_a, A, lda, ic, MC, row_end, pc, kc)
                                             : BlockPrefetch<float, 2>();
            const int64_t calls = (mc + MR - 1) / MR * ((nc + NR - 1) / NR);
            const int64_t lines_per_call = next.lines() / calls + 1;
            for (int64_t jr = 0; jr < nc; jr += NR) {
                const int64_t nr = std::min(NR, nc - jr);
                const float* bias_tile = bias_block ? bias_block + jr : nullptr;
                for (int64_t ir = 0; ir < mc; ir += MR, next.fetch(lines_per_call))
                    micro[(nr + V - 1) / V - 1](pairs, Ap + ir * pairs, Bp + jr * pairs, alpha, beta_block, bias_tile,
                                                C + (ic + ir) * ldc + jc + jr, ldc, std::min(MR, mc - ir), nr);
            }
            if (target.rows_done) (*target.rows_done)(ic, ic + mc);
        }
    };
    for_each_gemm_block<uint32_t>(M, N, K, MR, NR, NC, KC, C, ldc, column_words, pack_panel, multiply, rows_done);
}

// AMX's check on first use (amx_status): four small products, one per transpose pair, with a
// K block that ends in a partial tile (70 = 2 tiles of 32 + 6) and C edges in both directions
// (40 = 32 + 8), each element within 8 times the float32 summation bound of the float64 product
// of the rounded inputs. The tests hold the emulated kernel to the bound itself; here the point
// is to catch a gross fault (a misread tile is off by the size of the result), not the last bit.
std::string bf16_kernel_check(const Bf16Kernels& kernels) {
    constexpr int64_t M = 40, N = 40, K = 70;
    std::vector<float> A(M * K), B(K * N), C(M * N);
    uint32_t state = 12345;
    for (std::vector<float>* v : {&A, &B})
        for (float& x : *v) {
            state = state * 1664525u + 1013904223u;  // any spread of values in [-1, 1) will do
            x = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
        }
    const double gamma = K * 0x1p-24 / (1 - K * 0x1p-24);
    for (bool trans_a : {false, true})
        for (bool trans_b : {false, true}) {
            const int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
            gemm_bf16_with(kernels, trans_a, trans_b, M, N, K, 1, A.data(), lda, B.data(), ldb, 0, C.data(), N);
            // The element furthest outside its bound (a NaN counts as infinitely far).
            double worst = 0, worst_exact = 0, worst_bound = 0;
            int64_t worst_i = -1, worst_j = -1;
            for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                    double exact = 0, magnitude = 0;
                    for (int64_t k = 0; k < K; ++k) {
                        const double a = bf16_to_float(round_to_bf16(trans_a ? A[k * lda + i] : A[i * lda + k]));
                        const double b = bf16_to_float(round_to_bf16(trans_b ? B[j * ldb + k] : B[k * ldb + j]));
                        exact += a * b;
                        magnitude += std::abs(a * b);
                    }
                    const double bound = 8 * gamma * magnitude, error = std::abs(C[i * N + j] - exact);
                    const double excess = std::isnan(error) ? HUGE_VAL : error / bound;
                    if (excess > 1 && excess > worst) {
                        worst = excess, worst_exact = exact, worst_bound = bound;
                        worst_i = i, worst_j = j;
                    }
                }
            if (worst_i >= 0) {
                char text[320];
                std::snprintf(text, sizeof text,
                              "%s, %lld x %lld x %lld with op(A) = %s and op(B) = %s: C[%lld][%lld] = %.9g where "
                              "the float64 product of the bf16 inputs is %.9g (allowed error %.3g)",
                              kernels.name, (long long)M, (long long)N, (long long)K, trans_a ? "A^T" : "A",
                              trans_b ? "B^T" : "B", (long long)worst_i, (long long)worst_j,
                              double(C[worst_i * N + worst_j]), worst_exact, worst_bound);
                return text;
            }
        }
    return "";
}

const Bf16Kernels* amx_kernels_on_this_cpu(std::string& why_not) {
    const Amx state = amx_status().state;
#ifdef PATCHGRAD_AMX
    if (state == Amx::Usable || state == Amx::FailedCheck) return &gemm_bf16_kernels_amx;
    why_not = state == Amx::Refused ? "the operating system refused AMX's tile state" : "this CPU has no AMX-BF16";
#else
    (void)state;
    why_not = "this build's compiler does not know AMX";
#endif
    return nullptr;
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const float* bias,
               const GemmRowsDone* rows_done, const GemmSources* sources) {
    const Bf16Kernels* kernels = native_kernels();
    if (kernels)
        return gemm_bf16_with(*kernels, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done,
                              sources);
    gemm_bf16_emulated(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, rows_done, sources);
}

#endif  // PATCHGRAD_DOUBLE

}  // namespace patchgrad
