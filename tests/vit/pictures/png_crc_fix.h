// png_crc_fix.h — what lets mutated PNGs get past the chunk CRCs, so that fuzzing reaches
// the header checks, inflate and the filters behind them: shared by the [fuzz] test in
// test_image_file.cpp and the libFuzzer target tests/fuzz/fuzz_png.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "patchgrad/vit/pictures/png.h"

namespace patchgrad::test {

// `png` with the CRC of every whole chunk recomputed, up to the first chunk that does not
// fit in the bytes; anything that is not a PNG is returned as it is.
inline std::string with_correct_crcs(std::string png) {
    if (png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return png;
    auto byte = [&png](size_t at) { return uint32_t(static_cast<uint8_t>(png[at])); };
    for (size_t at = 8; png.size() - at >= 12;) {
        const uint32_t length = byte(at) << 24 | byte(at + 1) << 16 | byte(at + 2) << 8 | byte(at + 3);
        if (png.size() - at - 12 < length) break;
        const uint32_t crc = crc32(reinterpret_cast<const uint8_t*>(png.data()) + at + 4, size_t(length) + 4);
        for (int k = 0; k < 4; ++k) png[at + 8 + length + size_t(k)] = static_cast<char>(crc >> (24 - 8 * k));
        at += 12 + size_t(length);
    }
    return png;
}

}  // namespace patchgrad::test
