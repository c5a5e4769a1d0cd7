// fuzz_safetensors.cpp — a libFuzzer entry point for the safetensors reader
// (autograd/io/safetensors.h), for clang users who want to fuzz it for longer than the tests do.
//
// Build it in a build directory of its own (the libraries get coverage instrumentation and
// the sanitizers, which turn silent memory errors into findings):
//
//   apt-get install -y --no-install-recommends clang libclang-rt-14-dev   # Debian 12, if missing
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DPATCHGRAD_FUZZ=ON -DPATCHGRAD_SANITIZE=ON \
//         -DPATCHGRAD_BUILD_TUTORIALS=OFF
//   cmake --build build-fuzz --target fuzz_safetensors
//
// and run it, with tests/data's checkpoints as the first inputs (new ones go to corpus/):
//
//   mkdir -p corpus && build-fuzz/tests/fuzz_safetensors -max_total_time=60 -timeout=5 corpus tests/data
//
// Every input must load or throw std::invalid_argument, the reader's documented refusal.
// A crash, a sanitizer report, any other exception (std::bad_alloc included) or an input
// that takes longer than -timeout seconds is a finding; libFuzzer saves it as crash-<hash>
// or timeout-<hash>, and `build-fuzz/tests/fuzz_safetensors crash-<hash>` replays it.
// Every test run covers a few thousand fixed mutations of the same reader: the [fuzz] test
// in tests/autograd/io/test_safetensors.cpp.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "patchgrad/autograd/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        patchgrad::parse_safetensors(std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
    } catch (const std::invalid_argument&) {
        // A refused file: the expected outcome for most inputs.
    }
    return 0;
}
