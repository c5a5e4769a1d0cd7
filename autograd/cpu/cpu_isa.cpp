// cpu_isa.cpp — detecting the CPU's vector instructions once, and PATCHGRAD_ISA.
#include "patchgrad/autograd/cpu/cpu_isa.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#ifdef __APPLE__
#include <sys/sysctl.h>
#endif

namespace patchgrad {

namespace {

// What the CPU and the operating system support. GCC's and clang's __builtin_cpu_supports
// also check that the OS saves the wide registers (XGETBV), not just the CPUID bits.
bool cpu_has(Isa isa) {
    switch (isa) {
        case Isa::Baseline:
            return true;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        case Isa::Avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case Isa::Avx512:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
        default:
            return false;
    }
}

std::string supported_list() {
    std::string list;
    for (Isa isa : supported_isas()) list += std::string(list.empty() ? "" : ", ") + isa_name(isa);
    return list;
}

Isa checked(Isa isa, const std::string& what) {
    if (!cpu_has(isa))
        throw std::invalid_argument(what + ": this CPU does not support " + isa_name(isa) +
                                    " (it has: " + supported_list() + ")");
    return isa;
}

Isa initial_isa() {
    if (const char* forced = std::getenv("PATCHGRAD_ISA"); forced && *forced) {
        const std::string what = std::string("PATCHGRAD_ISA=") + forced;
        return checked(parse_isa(forced, what), what);
    }
    return supported_isas().back();
}

// The chosen level, like the thread count one of the library's settings. -1: not read yet.
std::atomic<int>& chosen() {
    static std::atomic<int> isa{-1};
    return isa;
}

}  // namespace

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Avx2:
            return "avx2";
        case Isa::Avx512:
            return "avx512";
        default:
#if defined(__x86_64__)
            return "sse2";
#elif defined(__aarch64__)
            return "neon";
#else
            return "generic";
#endif
    }
}

std::vector<Isa> supported_isas() {
    std::vector<Isa> isas;
    for (Isa isa : {Isa::Baseline, Isa::Avx2, Isa::Avx512})
        if (cpu_has(isa)) isas.push_back(isa);
    return isas;
}

Isa parse_isa(const std::string& text, const std::string& what) {
    if (text == "baseline" || text == "sse2" || text == "neon" || text == "generic") return Isa::Baseline;
    if (text == "avx2") return Isa::Avx2;
    if (text == "avx512") return Isa::Avx512;
    throw std::invalid_argument(what + ": unknown instruction set '" + text +
                                "' (one of: baseline, sse2, neon, avx2, avx512)");
}

Isa active_isa() {
    int isa = chosen().load(std::memory_order_relaxed);
    if (isa < 0) {
        isa = static_cast<int>(initial_isa());
        chosen().store(isa, std::memory_order_relaxed);
    }
    return static_cast<Isa>(isa);
}

std::string cpu_model() {
#ifdef __APPLE__
    char name[256] = {};
    size_t size = sizeof name - 1;
    if (sysctlbyname("machdep.cpu.brand_string", name, &size, nullptr, 0) == 0 && name[0]) return name;
#else
    // x86 Linux says "model name : ...", ARM64 Linux often only "CPU part : 0xd0c".
    std::ifstream info("/proc/cpuinfo");
    std::string line;
    while (std::getline(info, line))
        if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
        }
#endif
    return "unknown CPU";
}

void set_isa(Isa isa) { chosen().store(static_cast<int>(checked(isa, "set_isa")), std::memory_order_relaxed); }

}  // namespace patchgrad
