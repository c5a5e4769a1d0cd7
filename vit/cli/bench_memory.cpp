// `patchgrad bench memory`: how many bytes per second this machine's memory moves for a pass
// over tensors far larger than its caches, on patchgrad's own threads. A pass that reads r
// bytes and writes w bytes cannot take less than about (r + w) / the copy rate, however its
// arithmetic is written: its memory floor (chapter 12.10). It prints numbers; it checks nothing.
//
//   patchgrad bench memory [--mib M] [--repeats R] [--threads T]
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/storage.h"
#include "patchgrad/autograd/tensor.h"
#include "patchgrad/vit/cli/cli.h"

namespace patchgrad::cli {

namespace {

// Numbers per chunk at least: a thread's share is megabytes, as the step's passes over
// [8320, 128] tensors are.
constexpr int64_t kGrain = 1 << 16;

// The three passes, compiled for the active instruction-set level as the step's row loops are
// (cpu_isa.h). The copy adds +0, which is not the identity for -0, so the loop stays a loop: a
// plain copy may become memcpy, whose large copies skip reading the destination first on many
// CPUs, which the step's loops (LayerNorm, the residual add) do not.
using Bits = std::conditional_t<sizeof(real) == 8, uint64_t, uint32_t>;  // a number's bits
PATCHGRAD_ALWAYS_INLINE void read_pass_loop(const real* x, int64_t n, Bits* fold) {
    Bits f = 0;  // xor of every number's bits: associative, so the compiler may vectorise it
    for (int64_t i = 0; i < n; ++i) {
        Bits bits;
        std::memcpy(&bits, x + i, sizeof bits);
        f ^= bits;
    }
    *fold = f;
}
PATCHGRAD_MULTIVERSION(read_pass, (const real* x, int64_t n, Bits* fold), (x, n, fold))
PATCHGRAD_ALWAYS_INLINE void write_pass_loop(real* y, int64_t n, real value) {
    for (int64_t i = 0; i < n; ++i) y[i] = value;
}
PATCHGRAD_MULTIVERSION(write_pass, (real * y, int64_t n, real value), (y, n, value))
PATCHGRAD_ALWAYS_INLINE void copy_pass_loop(const real* x, real* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] + real(0);
}
PATCHGRAD_MULTIVERSION(copy_pass, (const real* x, real* y, int64_t n), (x, y, n))

void print_help() {
    std::printf(
        "usage: patchgrad bench memory [--mib M] [--repeats R] [--threads T]\n"
        "\n"
        "Times three passes over two tensors of M MiB each (default 256: far beyond the caches,\n"
        "as a training step's are), split over T threads as patchgrad's loops are\n"
        "(default 1; auto picks as 'patchgrad bench' does), and prints the best of R runs after one\n"
        "warm-up (default R: 5) in GB/s (10^9 bytes per second):\n"
        "  read    every number of one tensor read (bit patterns combined, so nothing is skipped)\n"
        "  write   every number of one tensor written (a constant)\n"
        "  copy    one tensor into the other: bytes read plus bytes written\n"
        "A pass that reads r bytes and writes w bytes takes at least about (r + w) / copy rate:\n"
        "its memory floor (chapter 12.10).\n");
}

}  // namespace

int bench_memory_command(const std::vector<std::string>& args) {
    const Flags flags = parse_flags(args, {"--mib", "--repeats", "--threads"});
    if (flags.help) {
        print_help();
        return 0;
    }
    const int64_t mib = parse_positive_int("--mib", flags.value_or("--mib", "256"), int64_t(1) << 20);
    const int64_t repeats = parse_positive_int("--repeats", flags.value_or("--repeats", "5"));
    use_threads(parse_threads(flags.value_or("--threads", "1")));
    const int64_t n = mib * (int64_t(1) << 20) / int64_t(sizeof(real));
    try {  // both tensors at once: each alone might fit where the two do not
        check_fits_in_memory(2 * n);
    } catch (const std::exception& e) {
        throw UsageError("bench memory: two tensors of --mib " + std::to_string(mib) + " MiB: " + e.what());
    }
    // Tensors, so that the numbers live where the step's do (huge pages: autograd/storage.cpp).
    Tensor a = Tensor::empty({n}), b = Tensor::empty({n});
    real* const x = a.data();
    real* const y = b.data();
    // Each thread first touches the pages it will read, as a step's threads do.
    parallel_for(n, kGrain, [=](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) x[i] = real(i & 1023), y[i] = 0;
    });

    std::vector<Bits> folded(static_cast<size_t>(n / kGrain + 1), 0);  // one per chunk
    const double read = best_seconds(repeats, [&] {
        Bits* out = folded.data();
        parallel_for(n, kGrain, [=](int64_t i0, int64_t i1) { read_pass(x + i0, i1 - i0, out + i0 / kGrain); });
    });
    const double write = best_seconds(repeats, [&] {
        parallel_for(n, kGrain, [=](int64_t i0, int64_t i1) { write_pass(y + i0, i1 - i0, real(1.5)); });
    });
    const double copy = best_seconds(
        repeats, [&] { parallel_for(n, kGrain, [=](int64_t i0, int64_t i1) { copy_pass(x + i0, y + i0, i1 - i0); }); });
    volatile Bits sink = 0;  // the reads' result has a use, so no compiler drops them
    for (Bits f : folded) sink = sink ^ f;

    const double bytes = double(n) * sizeof(real);
    std::printf("cpu: %s; %d thread%s; two tensors of %lld MiB; best of %lld runs\n", cpu_model().c_str(),
                num_threads(), num_threads() == 1 ? "" : "s", static_cast<long long>(mib),
                static_cast<long long>(repeats));
    std::printf("read   %8.1f GB/s\n", bytes / read * 1e-9);
    std::printf("write  %8.1f GB/s\n", bytes / write * 1e-9);
    std::printf("copy   %8.1f GB/s (read + written)\n", 2 * bytes / copy * 1e-9);
    return 0;
}

}  // namespace patchgrad::cli
