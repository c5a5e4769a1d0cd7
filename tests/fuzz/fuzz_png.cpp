// fuzz_png.cpp — a libFuzzer entry point for the picture readers (vit/pictures/image_file.h:
// PNG with its inflate, and PPM). Built and run like tests/fuzz/fuzz_safetensors.cpp (see
// the top of that file), with the PNGs the tests write as first inputs:
//
//   cmake --build build-fuzz --target fuzz_png
//   mkdir -p corpus-png && build-fuzz/tests/fuzz_png -max_total_time=60 -max_len=4096 corpus-png
//
// Every input must decode or throw std::invalid_argument; anything else is a finding. Each
// input is read twice: as it is, and with its chunk CRCs made right, without which nearly
// every mutation would stop at the first CRC and never reach inflate or the filters. The
// [fuzz] test in tests/vit/pictures/test_image_file.cpp runs a few thousand fixed mutations
// in every test run.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "patchgrad/vit/pictures/image_file.h"
#include "tests/vit/pictures/png_crc_fix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    for (const std::string& input : {bytes, patchgrad::test::with_correct_crcs(bytes)}) {
        try {
            patchgrad::decode_picture(input, "fuzz input");
        } catch (const std::invalid_argument&) {
            // A refused file: the expected outcome for most inputs.
        }
    }
    return 0;
}
