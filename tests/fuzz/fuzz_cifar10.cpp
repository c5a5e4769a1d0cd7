// fuzz_cifar10.cpp — a libFuzzer entry point for the CIFAR-10 reader (datasets/cifar10.h).
// Built and run like tests/fuzz/fuzz_safetensors.cpp (see the top of that file):
//
//   cmake --build build-fuzz --target fuzz_cifar10
//   mkdir -p corpus-cifar && build-fuzz/tests/fuzz_cifar10 -max_total_time=60 -max_len=16384 corpus-cifar
//
// (-max_len 16384 lets inputs grow to five 3,073-byte records.) Every input must load or
// throw std::invalid_argument; anything else is a finding. The [fuzz] test in
// tests/datasets/test_cifar10.cpp runs a few thousand fixed mutations in every test run.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "patchgrad/datasets/cifar10.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        patchgrad::parse_cifar10(std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
    } catch (const std::invalid_argument&) {
        // A refused file: the expected outcome for most inputs.
    }
    return 0;
}
