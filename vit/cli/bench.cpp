// `patchgrad bench`: how fast patchgrad trains a ViT on this machine, and how fast its matmul
// kernels are. It prints numbers; it checks nothing (the tests do that).
//
//   patchgrad bench [--config NAME] [--dim D] [--depth L] [--heads H] [--mlp M] [--patch P]
//                   [--pool NAME] [--patch-dropout P] [--batch B] [--steps S] [--warmup W] [--threads T]
//   patchgrad bench matmul [M N K] [--repeats R] [--threads T]
//   patchgrad bench memory [--mib M] [--repeats R] [--threads T]   (bench_memory.cpp)
//
// The first times full training steps on one random batch: forward, cross-entropy,
// backward, AdamW step, zero_grad, exactly what a training loop does minus the data loading.
// vit/scripts/bench_torch.py runs the same step in PyTorch and compares.
#include <sys/resource.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/optim/optimizer.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/storage.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/summary.h"
#include "patchgrad/vit/train/step_sample.h"
#include "patchgrad/vit/train/thread_choice.h"
#include "patchgrad/vit/train/train_options.h"
#include "patchgrad/vit/vision_transformer.h"

#ifdef PATCHGRAD_USE_OPENBLAS
#include <cblas.h>
#endif

namespace patchgrad::cli {

namespace {

using Clock = std::chrono::steady_clock;

void print_help() {
    std::cout << "usage: patchgrad bench [--config NAME] [--dim D] [--depth L] [--heads H] [--mlp M] [--patch P]\n"
                 "                       [--pool NAME] [--patch-dropout P]\n"
                 "                       [--batch B] [--steps S] [--warmup W] [--threads T] [--precision P]\n"
                 "                       [--paired on|off] [--explain]\n"
                 "       patchgrad bench matmul [M N K] [--repeats R] [--threads T]\n"
                 "       patchgrad bench memory [--mib M] [--repeats R] [--threads T]\n"
                 "\n"
                 "Times full training steps of a Vision Transformer on one random batch (forward,\n"
                 "cross-entropy, backward, AdamW step, zero_grad) and prints images per second, ms per\n"
                 "step, the achieved GFLOP/s (matmul multiply-adds only) and the memory in use; then\n"
                 "that rate as a share of the machine's own 1024^3 gemm rate, both for the mean step\n"
                 "against the best gemm after all steps and for each step against a gemm run right\n"
                 "after it (on a host whose speed drifts, the paired figure is the steadier one); then\n"
                 "the share of one more step spent outside matrix products, timed.\n"
                 "\n"
                 "  --config NAME   one of:";
    for (const std::string& name : vit_config_names()) std::cout << " " << name;
    std::cout << " (default: cifar-tiny)\n"
                 "  --dim D, --depth L, --heads H, --mlp M, --patch P\n"
                 "                  override the configuration's hidden size, blocks, heads, MLP size, patch size\n"
                 "  --pool NAME     cls (the default), mean or seq, as patchgrad train's --pool\n"
                 "  --patch-dropout P\n"
                 "                  fraction of patch tokens each image drops (default: 0), as patchgrad train's:\n"
                 "                  times a preset's step (the default preset: --pool seq --patch-dropout 0.5)\n"
                 "  --batch B       images per step (default: 128)\n"
                 "  --steps S       measured steps (default: 10)\n"
                 "  --warmup W      steps run first and not measured (default: 2)\n"
                 "  --threads T     threads for patchgrad's ops, or auto (the default): the fewest that run a\n"
                 "                  sample of the step's work fastest here, measured first; results are\n"
                 "                  identical for any T\n"
                 "                  (a build with OpenBLAS also runs OpenBLAS's own threads, set by the\n"
                 "                  environment variable OPENBLAS_NUM_THREADS)\n"
                 "  --precision P   fp32 (the default) or bf16: matrix products with bf16 inputs and float32\n"
                 "                  sums, everything else in float32 (on a CPU with AMX, attention's per-head\n"
                 "                  products too: autograd/cpu/bf16/gemm_bf16.h); with a native bf16 kernel\n"
                 "                  the header first says how a sample of the step compared with float32\n"
                 "                  here, or warns that float32 is faster\n"
                 "  --paired on|off the gemm run after each step for the paired figure (default: on); off\n"
                 "                  for a profiler, which would count that gemm's samples with the steps'\n"
                 "                  (the gemm runs after the last step, for the mean's share, remain)\n"
                 "  --explain       after the steps, every parallel loop of one step: where it is written,\n"
                 "                  what it did, its time, the tasks it offers and its largest chunk's share\n"
                 "                  of the work at 2 to 32 threads\n"
                 "  -h, --help      show this help\n"
                 "\n"
                 "'matmul M N K' times C[M, N] = A[M, K] @ B[K, N], and the transposed forms linear uses,\n"
                 "(without sizes: 1024^3, then the products of cifar-tiny's linear layers at batch 128, 8320\n"
                 "token rows: forward A @ B^T and input gradient A @ B at M = 8320, weight gradient A^T @ B at\n"
                 "K = 8320),\n"
                 "with patchgrad's gemm_blocked, gemm_reference (when M*N*K <= 2^26), cblas_sgemm (when\n"
                 "built with PATCHGRAD_USE_OPENBLAS) and gemm_bf16 (bf16 inputs, float32 sums); best of R\n"
                 "runs after one warm-up (default R: 5), on T threads (default 1, one core against one-thread\n"
                 "BLAS; auto picks as above). With OpenBLAS, gemm_blocked and cblas_sgemm run in turn and\n"
                 "'ours/BLAS' is the median, over the R pairs, of cblas_sgemm's time over gemm_blocked's\n"
                 "(above 1: gemm_blocked is faster). First it prints one core's peak: the rate of\n"
                 "independent multiply-adds with no memory traffic (float32 FMA; bf16 where the CPU has it).\n"
                 "\n"
                 "'memory' times reading, writing and copying tensors far larger than the caches: the\n"
                 "bytes per second that bound a pass over a step's tensors ('bench memory --help').\n";
}

// ---- what the machine and the build are ----------------------------------------------------

// The widest vector instructions this binary was compiled for (PATCHGRAD_NATIVE=ON gives
// the machine's own; the portable default is SSE2 on x86-64).
const char* compiled_isa() {
#if defined(__AVX512F__)
    return "AVX-512";
#elif defined(__AVX2__)
    return "AVX2";
#elif defined(__AVX__)
    return "AVX";
#elif defined(__SSE2__)
    return "SSE2";
#elif defined(__ARM_NEON)
    return "NEON";
#else
    return "scalar";
#endif
}

const char* matmul_backend() {
#ifdef PATCHGRAD_USE_OPENBLAS
    return "OpenBLAS cblas_sgemm";
#else
    return "gemm_blocked (built-in)";
#endif
}

struct Memory {
    double rss_mib = 0;   // resident now (VmRSS)
    double peak_mib = 0;  // the most ever resident (VmHWM)
};

// From /proc/self/status on Linux; elsewhere only the peak, from getrusage (whose ru_maxrss
// is in KiB on Linux and in bytes on macOS).
Memory memory_now() {
    Memory m;
    std::ifstream status("/proc/self/status");
    std::string key;
    double kib;
    while (status >> key) {
        if (key == "VmRSS:" && status >> kib) m.rss_mib = kib / 1024;
        if (key == "VmHWM:" && status >> kib) m.peak_mib = kib / 1024;
    }
    if (m.peak_mib == 0) {
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
#ifdef __APPLE__
        m.peak_mib = double(usage.ru_maxrss) / (1024 * 1024);
#else
        m.peak_mib = double(usage.ru_maxrss) / 1024;
#endif
    }
    return m;
}

// ---- timing ----------------------------------------------------------------------------------

double seconds_of(const std::function<void()>& run) {
    const auto t0 = Clock::now();
    run();
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The middle value of a sorted, non-empty list (the mean of the two middle ones for an even count).
double median_of_sorted(const std::vector<double>& v) {
    const size_t half = v.size() / 2;
    return v.size() % 2 ? v[half] : (v[half - 1] + v[half]) / 2;
}

}  // namespace

// cli.h: the fastest of `repeats` runs, after one warm-up run (bench and bench memory).
double best_seconds(int64_t repeats, const std::function<void()>& run) {
    run();
    double best = 1e30;
    for (int64_t r = 0; r < repeats; ++r) best = std::min(best, seconds_of(run));
    return best;
}

namespace {

#ifdef PATCHGRAD_USE_OPENBLAS
// Two ways to compute the same product, run in turn `repeats` times after one warm-up each.
// On a host whose speed swings from one moment to the next (a shared VM's can, by 2x within
// seconds), two bests taken one after the other can each come from a fast or a slow spell;
// a ratio of two runs next to each other in time shares the spell, so the median of those
// ratios is the steadier comparison.
struct Alternation {
    double best_first = 1e30, best_second = 1e30;  // seconds
    double median_speedup = 0;                     // of the first over the second: their time over its time
};

Alternation alternate(int64_t repeats, const std::function<void()>& first, const std::function<void()>& second) {
    first();
    second();
    Alternation result;
    std::vector<double> speedups;
    for (int64_t r = 0; r < repeats; ++r) {
        const double a = seconds_of(first), b = seconds_of(second);
        result.best_first = std::min(result.best_first, a);
        result.best_second = std::min(result.best_second, b);
        speedups.push_back(b / a);
    }
    std::sort(speedups.begin(), speedups.end());
    result.median_speedup = median_of_sorted(speedups);
    return result;
}
#endif

// ---- the core's own ceiling -----------------------------------------------------------------
//
// How fast one core can multiply-add at all: 24 independent accumulators (more than the
// instruction's latency times its issue rate, so only the issue rate limits), each updated
// kPeakSteps times, no memory traffic. A kernel's GFLOP/s means more beside this number, and
// the bf16 one says whether bf16 products can pay on this CPU (chapter 12.9: on an Intel Xeon
// that has AVX512_BF16 they run at half the float32 rate).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
constexpr int64_t kPeakSteps = 20000000;

double peak_gflops(Clock::time_point start, double flops_per_instruction) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return 24.0 * double(kPeakSteps) * flops_per_instruction / seconds * 1e-9;
}

// Each loop: 24 accumulators, one instruction each per step. The empty asm says `a` may change
// at every step, so the compiler can neither hoist nor fold the work; the sum of the
// accumulators goes to a volatile so that it is computed at all. (The loop is written out per
// instruction set: a function's target attribute does not reach a template or lambda it calls,
// which then could not use the intrinsics.)
volatile float peak_sink;

__attribute__((target("avx512f,fma"))) double avx512_fma_peak() {
    __m512 a = _mm512_set1_ps(0.999f), acc[24];
    const __m512 b = _mm512_set1_ps(1e-3f);
    for (__m512& c : acc) c = _mm512_setzero_ps();
    const auto start = Clock::now();
    for (int64_t n = 0; n < kPeakSteps; ++n) {
        __asm__ volatile("" : "+v"(a));
#pragma GCC unroll 24
        for (int i = 0; i < 24; ++i) acc[i] = _mm512_fmadd_ps(a, b, acc[i]);
    }
    const double rate = peak_gflops(start, 2 * 16);
    float lanes[16];
    for (const __m512& c : acc) {
        _mm512_storeu_ps(lanes, c);
        peak_sink = peak_sink + lanes[0];
    }
    return rate;
}

__attribute__((target("avx2,fma"))) double avx2_fma_peak() {
    __m256 a = _mm256_set1_ps(0.999f), acc[24];
    const __m256 b = _mm256_set1_ps(1e-3f);
    for (__m256& c : acc) c = _mm256_setzero_ps();
    const auto start = Clock::now();
    for (int64_t n = 0; n < kPeakSteps; ++n) {
        __asm__ volatile("" : "+v"(a));
#pragma GCC unroll 24
        for (int i = 0; i < 24; ++i) acc[i] = _mm256_fmadd_ps(a, b, acc[i]);
    }
    const double rate = peak_gflops(start, 2 * 8);
    float lanes[8];
    for (const __m256& c : acc) {
        _mm256_storeu_ps(lanes, c);
        peak_sink = peak_sink + lanes[0];
    }
    return rate;
}

__attribute__((target("avx512f,avx512bf16"))) double avx512_bf16_peak() {
    __m512i a = _mm512_set1_epi32(0x3f803f80);  // pairs of bf16 ones
    const __m512bh b = (__m512bh)_mm512_set1_epi32(0x3a833a83);
    __m512 acc[24];
    for (__m512& c : acc) c = _mm512_setzero_ps();
    const auto start = Clock::now();
    for (int64_t n = 0; n < kPeakSteps; ++n) {
        __asm__ volatile("" : "+v"(a));
#pragma GCC unroll 24
        for (int i = 0; i < 24; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)a, b);
    }
    const double rate = peak_gflops(start, 2 * 32);
    float lanes[16];
    for (const __m512& c : acc) {
        _mm512_storeu_ps(lanes, c);
        peak_sink = peak_sink + lanes[0];
    }
    return rate;
}

// "float32 FMA 176.0 GFLOP/s (avx512), bf16 vdpbf16ps 86.1" for the levels active now.
std::string peak_rates() {
    char text[160];
    const Isa isa = active_isa();
    if (isa == Isa::Baseline) return "not measured below AVX2";
    const double fma = isa == Isa::Avx512 ? avx512_fma_peak() : avx2_fma_peak();
    std::snprintf(text, sizeof text, "float32 FMA %.1f GFLOP/s (%s)", fma, isa_name(isa));
    std::string out = text;
    if (bf16_native()) {
        std::snprintf(text, sizeof text, ", bf16 vdpbf16ps %.1f GFLOP/s", avx512_bf16_peak());
        out += text;
    }
    return out;
}
#else
std::string peak_rates() { return "not measured on this architecture"; }
#endif

// The yardstick for a training step: how fast this machine multiplies big matrices, gemm on
// C[1024, 1024] = A @ B with the same kernel, threads and precision.
class SgemmProbe {
public:
    SgemmProbe() : a_(n * n), b_(n * n), c_(n * n) {
        Rng rng(0);
        for (real& v : a_) v = static_cast<real>(rng.uniform(-1, 1));
        for (real& v : b_) v = static_cast<real>(rng.uniform(-1, 1));
    }
    // GFLOP/s, the best of `repeats` runs after a warm-up run.
    double rate(int64_t repeats) {
        const double seconds =
            best_seconds(repeats, [&] { gemm(false, false, n, n, n, 1, a_.data(), n, b_.data(), n, 0, c_.data(), n); });
        return 2.0 * double(n) * double(n) * double(n) * 1e-9 / seconds;
    }

private:
    static constexpr int64_t n = 1024;
    std::vector<real> a_, b_, c_;
};

// ---- the training benchmark ------------------------------------------------------------------

// The path of a loop's file from the repository's top folder (__builtin_FILE gives whatever
// path the compiler was handed).
std::string repository_path(const std::string& file) {
    for (const char* top : {"/autograd/", "/layers/", "/vit/", "/datasets/"}) {
        const size_t at = file.rfind(top);
        if (at != std::string::npos) return file.substr(at + 1);
    }
    return file;
}

// bench --explain: every parallel loop of the recorded step, grouped by where it is written,
// what it did and its size, the most time first: the tasks it offers (loop_tasks: how many
// threads it can keep busy) and, at 2 to 32 threads, the share of its work in its largest
// chunk (1/threads when it splits evenly).
void print_loops(const std::vector<LoopRecord>& loops, double step_seconds) {
    struct Group {
        const LoopRecord* first;
        int64_t calls = 0;
        double seconds = 0;
    };
    std::vector<Group> groups;
    for (const LoopRecord& r : loops) {
        const auto same = [&](const Group& g) {
            return g.first->file == r.file && g.first->line == r.line && g.first->label == r.label &&
                   g.first->n == r.n && g.first->grain == r.grain;
        };
        auto it = std::find_if(groups.begin(), groups.end(), same);
        if (it == groups.end()) it = groups.insert(groups.end(), Group{&r});
        ++it->calls;
        it->seconds += r.seconds;
    }
    std::sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) { return a.seconds > b.seconds; });
    const int counts[] = {2, 4, 8, 16, 32};
    std::printf("\nparallel loops of the recorded step (at %d threads), the most time first:\n", num_threads());
    std::printf("  %-34s %-28s %5s %8s %7s  %s\n", "where", "what", "calls", "ms", "tasks",
                "largest chunk's share of the work at 2 / 4 / 8 / 16 / 32 threads");
    // The loops below 16 tasks, by why: one chunk by design (grain == n), too little work for 16
    // chunks of the grain (waking a thread costs more than such a chunk saves), or a shape that
    // has fewer than 16 indices of a grain of one each.
    double few_seconds = 0, all_seconds = 0;
    int64_t few = 0, serial = 0, small = 0;
    std::string cut_by_shape;
    for (const Group& g : groups) {
        const LoopRecord& r = *g.first;
        const int64_t tasks = loop_tasks(r.n, r.grain);
        const std::string where = repository_path(r.file) + ":" + std::to_string(r.line);
        std::printf("  %-34s %-28s %5lld %8.2f %7lld ", where.c_str(), r.label.empty() ? "-" : r.label.c_str(),
                    static_cast<long long>(g.calls), 1e3 * g.seconds, static_cast<long long>(tasks));
        for (int threads : counts) {
            const int64_t chunks = std::min<int64_t>(threads, tasks);
            const int64_t chunk = (r.n + chunks - 1) / chunks;
            std::printf(" %5.1f%%", 100.0 * double(chunk) / double(r.n));
        }
        std::printf("\n");
        all_seconds += g.seconds;
        if (tasks < 16) {
            ++few;
            few_seconds += g.seconds;
            if (r.grain == r.n && r.n > 1)  // the op asked for one chunk
                ++serial;
            else if (r.grain > 1 || r.n >= 16)
                ++small;
            else
                cut_by_shape += " " + where + (r.label.empty() ? "" : " (" + r.label + ")");
        }
    }
    std::printf("%lld of %zu loops offer fewer than 16 tasks: %.1f of the %.1f ms in loops (the step: %.1f ms);\n",
                static_cast<long long>(few), groups.size(), 1e3 * few_seconds, 1e3 * all_seconds, 1e3 * step_seconds);
    std::printf(
        "  %lld run on one thread by design, %lld have less work than 16 chunks of their grain, %lld have "
        "fewer than 16 indices (their shape)%s%s\n",
        static_cast<long long>(serial), static_cast<long long>(small), static_cast<long long>(few - serial - small),
        cut_by_shape.empty() ? "" : ":", cut_by_shape.c_str());
}

int run_training(const Flags& flags, bool explain) {
    const std::string name = flags.value_or("--config", "cifar-tiny");
    ViTConfig config = config_from_flag(name);
    for (const auto& [flag, field] : {std::pair<const char*, int64_t*>{"--dim", &config.dim},
                                      {"--depth", &config.depth},
                                      {"--heads", &config.heads},
                                      {"--mlp", &config.mlp_dim},
                                      {"--patch", &config.patch_size}})
        if (flags.given(flag)) *field = parse_positive_int(flag, flags.values.at(flag));
    try {
        config.pool = parse_enum_flag<Pool>("--pool", flags.value_or("--pool", enum_name(config.pool)));
        config.patch_dropout =
            static_cast<real>(parse_number("--patch-dropout", flags.value_or("--patch-dropout", "0")));
        check_memory(config, 4);  // validates it; weights, gradients and AdamW's two moments
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    const int64_t batch = parse_positive_int("--batch", flags.value_or("--batch", "128"));
    const int64_t steps = parse_positive_int("--steps", flags.value_or("--steps", "10"));
    const int64_t warmup = parse_count("--warmup", flags.value_or("--warmup", "2"));
    const int threads = parse_threads(flags.value_or("--threads", "auto"));
    const MatmulPrecision precision =
        parse_enum_flag<MatmulPrecision>("--precision", flags.value_or("--precision", "fp32"));
    const std::string paired_flag = flags.value_or("--paired", "on");
    if (paired_flag != "on" && paired_flag != "off")
        throw UsageError("--paired takes on or off, got '" + paired_flag + "'");
    const bool paired = paired_flag == "on";

    VisionTransformer model(config, 0);
    AdamW optimizer(split_weight_decay(model.named_parameters()), 1e-3, {0.9, 0.999}, 1e-8, 0.05);
    Rng rng(1);
    const Tensor images = Tensor::normal({batch, config.channels, config.image_height, config.image_width}, 0, 1, rng);
    std::vector<int64_t> labels(batch);
    for (int64_t& label : labels) label = static_cast<int64_t>(rng.below(config.num_classes));

    const double train_gflop_per_image = training_gflop_per_image(config);
    std::printf("patchgrad bench: %s, %lld parameters\n", describe(config).c_str(),
                static_cast<long long>(model.num_parameters()));
    if (config.patch_dropout > 0)
        std::printf("patch dropout %g: each image keeps %lld of its %lld patch tokens in the step\n",
                    double(config.patch_dropout),
                    static_cast<long long>(patch_dropout_kept(config.patch_dropout, config.num_patches())),
                    static_cast<long long>(config.num_patches()));
    std::printf(
        "batch %lld, %lld warm-up + %lld measured steps of forward, cross-entropy, backward, AdamW, "
        "zero_grad\n",
        static_cast<long long>(batch), static_cast<long long>(warmup), static_cast<long long>(steps));
    std::printf("cpu: %s\n", cpu_model().c_str());
    std::printf("build: %s, kernels %s, other code compiled for %s, matmul by %s\n",
                sizeof(real) == 4 ? "float32" : "float64", gemm_kernel_description().c_str(), compiled_isa(),
                matmul_backend());
    if (threads == 0) {
        const ThreadChoice choice = choose_thread_count(kMaxThreads);
        set_num_threads(choice.threads);
        std::printf("threads: %d (auto: the fastest of 1..%d ran %.2fx one thread's speed; --threads N sets it)\n",
                    choice.threads, choice.candidates, choice.best_speedup);
    } else {
        set_num_threads(threads);
        std::printf("threads: %d\n", num_threads());
    }
    set_matmul_precision(precision);
    std::printf("precision: %s\n", matmul_precision_description(precision).c_str());
    std::printf("%s", bf16_header_note(precision).c_str());
#ifdef PATCHGRAD_USE_OPENBLAS
    const char* blas_threads = std::getenv("OPENBLAS_NUM_THREADS");
    std::printf("         (OpenBLAS runs its own threads: OPENBLAS_NUM_THREADS=%s)\n",
                blas_threads ? blas_threads : "unset, i.e. all cores");
#endif
    std::printf(
        "work: %.2f M multiply-adds per image forward -> %.4f GFLOP per image per training step "
        "(2 FLOPs per multiply-add, training = 3 x forward)\n\n",
        forward_multiply_adds(config, true) * 1e-6, train_gflop_per_image);

    // A gemm runs after each measured step (below); its 12 MiB of matrices exist from here on.
    SgemmProbe sgemm;
    const Memory before = memory_now();  // model, optimiser and the batch, before any step
    // "tensors" is what the step's tensors held at their peak (autograd/storage.h), "cached"
    // the freed blocks kept for the next step.
    std::printf("  %-9s %10s %10s %10s %13s %11s\n", "step", "ms", "loss", "RSS MiB", "tensors MiB", "cached MiB");
    std::vector<double> ms;
    std::vector<double> rss;
    std::vector<double> paired_sgemm;  // GFLOP/s of the gemm right after each measured step
    int64_t peak_tensor_bytes = 0;
    for (int64_t s = 0; s < warmup + steps; ++s) {
        reset_peak_memory();
        const auto t0 = Clock::now();
        Tensor loss = cross_entropy(model.forward(images), labels);
        loss.backward();
        optimizer.step();
        optimizer.zero_grad();
        const double elapsed = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        const Memory mem = memory_now();
        const MemoryStats tensors = memory_stats();
        peak_tensor_bytes = std::max(peak_tensor_bytes, tensors.peak_in_use);
        const bool measured = s >= warmup;
        const std::string label = measured ? std::to_string(s - warmup + 1) : "warm-up " + std::to_string(s + 1);
        std::printf("  %-9s %10.1f %10.4f %10.1f %13.1f %11.1f\n", label.c_str(), elapsed, double(loss.item()),
                    mem.rss_mib, double(tensors.peak_in_use) / (1 << 20), double(tensors.cached) / (1 << 20));
        std::fflush(stdout);
        if (measured) {
            ms.push_back(elapsed);
            rss.push_back(mem.rss_mib);
            if (paired) paired_sgemm.push_back(sgemm.rate(2));
        }
    }

    const double mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / double(ms.size());
    const double min_ms = *std::min_element(ms.begin(), ms.end());
    const Memory mem = memory_now();
    const double step_gflop = train_gflop_per_image * double(batch);
    std::printf("\n");
    std::printf("img/s            %.1f\n", double(batch) / (mean_ms * 1e-3));
    std::printf("ms per step      mean %.1f, min %.1f over %zu steps\n", mean_ms, min_ms, ms.size());
    std::printf("GFLOP/s          %.1f (mean step), %.1f (fastest step)\n", step_gflop / (mean_ms * 1e-3),
                step_gflop / (min_ms * 1e-3));
    std::printf("peak RSS         %.1f MiB (VmHWM); %.1f MiB before the first step\n", mem.peak_mib, before.rss_mib);
    std::printf("peak tensors     %.1f MiB (largest sum of live tensor data and gradients in a step)\n",
                double(peak_tensor_bytes) / (1 << 20));
    if (mem.rss_mib > 0)
        std::printf("RSS per step     %.1f MiB after the first measured step, %.1f after the last: %+.1f MiB\n",
                    rss.front(), rss.back(), rss.back() - rss.front());
    // The step against gemm (in bf16 the bf16 product: gemm follows the precision), twice. Once
    // as the mean step against the best of three gemm runs after all steps; once paired, each
    // step against the gemm run right after it, so that a host whose speed drifts (a CPU shared
    // with other machines' work, or throttled) moves both sides of each ratio alike.
    const double best_sgemm = sgemm.rate(3);
    const char* yardstick = precision == MatmulPrecision::Fp32 ? "sgemm rate" : "bf16 gemm rate";
    std::printf(
        "%-16s %.1f GFLOP/s (gemm, 1024 x 1024 x 1024, same threads, best of 3): the mean step runs at "
        "%.0f%% of it\n",
        yardstick, best_sgemm, 100 * step_gflop / (mean_ms * 1e-3) / best_sgemm);
    if (!paired) {
        std::printf("%-16s not measured (--paired off)\n", "paired");
    } else {
        std::vector<double> shares;
        for (size_t i = 0; i < ms.size(); ++i) shares.push_back(100 * step_gflop / (ms[i] * 1e-3) / paired_sgemm[i]);
        std::sort(shares.begin(), shares.end());
        const double median = median_of_sorted(shares);
        std::printf(
            "%-16s each step against a gemm run right after it (%.1f-%.1f GFLOP/s): %.0f%% to %.0f%%, "
            "median %.0f%%\n",
            "paired", *std::min_element(paired_sgemm.begin(), paired_sgemm.end()),
            *std::max_element(paired_sgemm.begin(), paired_sgemm.end()), shares.front(), shares.back(), median);
    }

    // One more step, its loops and products timed (LoopRecorder, parallel.h): how much of the
    // step is not matrix products, and with --explain how each parallel loop splits.
    const LoopRecorder recorder;
    const auto t0 = Clock::now();
    Tensor loss = cross_entropy(model.forward(images), labels);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    const double step_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const double products = std::min(recorder.product_seconds(), step_seconds);
    std::printf(
        "%-16s %.0f%% of a step (%.1f of %.1f ms, timed in one more step: the rest is products; "
        "attention's head kernel counts as one, softmax included, and the MLP's GELU runs inside its "
        "products)\n",
        "outside products", 100 * (1 - products / step_seconds), 1e3 * (step_seconds - products), 1e3 * step_seconds);
    if (explain) print_loops(recorder.loops(), step_seconds);
    return 0;
}

int run_one_matmul(int64_t M, int64_t N, int64_t K, int64_t repeats);

int run_matmul(const std::vector<std::string>& args) {
    // The sizes are the words before the first flag.
    auto first_flag = std::find_if(args.begin(), args.end(), [](const std::string& a) { return a.rfind("-", 0) == 0; });
    const std::vector<std::string> sizes(args.begin(), first_flag);
    const Flags flags = parse_flags(std::vector<std::string>(first_flag, args.end()), {"--repeats", "--threads"});
    if (flags.help) {
        print_help();
        return 0;
    }
    if (!sizes.empty() && sizes.size() != 3)
        throw UsageError(
            "matmul takes three sizes M N K (e.g. 'bench matmul 1024 1024 1024'), or none for the "
            "standard set");
    const int64_t repeats = parse_positive_int("--repeats", flags.value_or("--repeats", "5"));
    use_threads(parse_threads(flags.value_or("--threads", "1")));
    std::printf("cpu: %s; gemm kernels %s; float%d; %d thread%s; best of %lld runs, GFLOP/s\n", cpu_model().c_str(),
                gemm_kernel_description().c_str(), int(8 * sizeof(real)), num_threads(), num_threads() == 1 ? "" : "s",
                static_cast<long long>(repeats));
    std::printf("gemm_bf16: %s\n", gemm_bf16_description().c_str());
    std::printf("one core's peak: %s\n", peak_rates().c_str());
    if (!sizes.empty())
        return run_one_matmul(parse_positive_int("M", sizes[0]), parse_positive_int("N", sizes[1]),
                              parse_positive_int("K", sizes[2]), repeats);
    // The standard set: the big square product BLAS libraries are judged by, then the products
    // of cifar-tiny's linear layers at batch 128 (8320 token rows; qkv 128 -> 384, proj 128 ->
    // 128, fc1 128 -> 256, fc2 256 -> 128): the forward x W^T [8320, out] is A @ B^T at
    // 8320 x out x in, the input gradient dOut W [8320, in] is A @ B at 8320 x in x out, and the
    // weight gradient dOut^T x [out, in] is A^T @ B at out x in x 8320 (each size's other forms
    // are printed too, for comparison).
    for (const auto& [M, N, K] : {std::array<int64_t, 3>{1024, 1024, 1024},
                                  {8320, 384, 128},
                                  {8320, 128, 128},
                                  {8320, 256, 128},
                                  {8320, 128, 256},
                                  {8320, 128, 384},
                                  {384, 128, 8320},
                                  {128, 128, 8320},
                                  {256, 128, 8320},
                                  {128, 256, 8320}})
        run_one_matmul(M, N, K, repeats);
    return 0;
}

// One size: every form linear uses, with each kernel this build has.
int run_one_matmul(int64_t M, int64_t N, int64_t K, int64_t repeats) {
    // A is read as [M, K] or [K, M], B as [K, N] or [N, K]: the same numbers serve every form.
    // Their sizes are checked before anything is allocated: 2^32 x 2^32 wraps around to 0.
    int64_t size_a = 0, size_b = 0, size_c = 0;
    try {
        size_a = checked_mul(M, K, "matmul: A [M, K]");
        size_b = checked_mul(K, N, "matmul: B [K, N]");
        size_c = checked_mul(M, N, "matmul: C [M, N]");
        check_fits_in_memory(checked_add(checked_add(size_a, size_b, "matmul: A + B"), size_c, "matmul: A + B + C"));
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    Rng rng(0);
    std::vector<real> A(size_a), B(size_b), C(size_c);
    for (real& v : A) v = static_cast<real>(rng.uniform(-1, 1));
    for (real& v : B) v = static_cast<real>(rng.uniform(-1, 1));
    const double gflop = 2.0 * double(M) * double(N) * double(K) * 1e-9;
    const bool small = double(M) * double(N) * double(K) <= double(1 << 26);

    std::printf("\nM=%lld N=%lld K=%lld\n", static_cast<long long>(M), static_cast<long long>(N),
                static_cast<long long>(K));
    std::printf("%-22s %12s %12s", "", "gemm_blocked", small ? "reference" : "");
#ifdef PATCHGRAD_USE_OPENBLAS
    std::printf(" %12s", "cblas_sgemm");
#endif
    std::printf(" %12s", "gemm_bf16");
#ifdef PATCHGRAD_USE_OPENBLAS
    std::printf(" %12s", "ours/BLAS");
#endif
    std::printf("\n");
    struct Form {
        const char* name;
        bool trans_a, trans_b;
    };
    for (const Form& f : {Form{"A @ B", false, false}, Form{"A @ B^T (linear fwd)", false, true},
                          Form{"A^T @ B (weight grad)", true, false}}) {
        const int64_t lda = f.trans_a ? M : K, ldb = f.trans_b ? K : N;
        std::printf("%-22s", f.name);
        const auto ours = [&] {
            gemm_blocked(f.trans_a, f.trans_b, M, N, K, 1, A.data(), lda, B.data(), ldb, 0, C.data(), N);
        };
#ifdef PATCHGRAD_USE_OPENBLAS
        const Alternation against_blas = alternate(repeats, ours, [&] {
            cblas_sgemm(CblasRowMajor, f.trans_a ? CblasTrans : CblasNoTrans, f.trans_b ? CblasTrans : CblasNoTrans,
                        static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1, A.data(),
                        static_cast<int>(lda), B.data(), static_cast<int>(ldb), 0, C.data(), static_cast<int>(N));
        });
        const double blocked = against_blas.best_first;
#else
        const double blocked = best_seconds(repeats, ours);
#endif
        std::printf(" %12.1f", gflop / blocked);
        if (small) {
            const double reference = best_seconds(std::min<int64_t>(repeats, 2), [&] {
                gemm_reference(f.trans_a, f.trans_b, M, N, K, 1, A.data(), lda, B.data(), ldb, 0, C.data(), N);
            });
            std::printf(" %12.1f", gflop / reference);
        } else {
            std::printf(" %12s", "");
        }
#ifdef PATCHGRAD_USE_OPENBLAS
        std::printf(" %12.1f", gflop / against_blas.best_second);
#endif
        const double bf16 = best_seconds(repeats, [&] {
            gemm_bf16(f.trans_a, f.trans_b, M, N, K, 1, A.data(), lda, B.data(), ldb, 0, C.data(), N);
        });
        std::printf(" %12.1f", gflop / bf16);
#ifdef PATCHGRAD_USE_OPENBLAS
        std::printf(" %12.2f", against_blas.median_speedup);
#endif
        std::printf("\n");
    }
    return 0;
}

}  // namespace

int bench_command(const std::vector<std::string>& args) {
    if (!args.empty() && args[0] == "matmul") return run_matmul(std::vector<std::string>(args.begin() + 1, args.end()));
    if (!args.empty() && args[0] == "memory")
        return bench_memory_command(std::vector<std::string>(args.begin() + 1, args.end()));
    // --explain is a switch: the only flag of bench without a value.
    std::vector<std::string> rest;
    bool explain = false;
    for (const std::string& arg : args) {
        if (arg != "--explain")
            rest.push_back(arg);
        else if (explain)
            throw UsageError("--explain is given twice");
        else
            explain = true;
    }
    const Flags flags =
        parse_flags(rest, {"--config", "--dim", "--depth", "--heads", "--mlp", "--patch", "--pool", "--patch-dropout",
                           "--batch", "--steps", "--warmup", "--threads", "--precision", "--paired"});
    if (flags.help) {
        print_help();
        return 0;
    }
    return run_training(flags, explain);
}

}  // namespace patchgrad::cli
