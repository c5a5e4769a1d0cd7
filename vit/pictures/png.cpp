// png.cpp — PNG encoding: per-row filters, and the zlib stream (deflate.h) and PNG framing
// around them; the file layout is in png.h.
#include "patchgrad/vit/pictures/png.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "patchgrad/autograd/check.h"
#include "patchgrad/autograd/io/atomic_file.h"
#include "patchgrad/autograd/io/files.h"
#include "patchgrad/vit/pictures/deflate.h"

namespace patchgrad {

namespace {

// ---- checksums -------------------------------------------------------------------------

// table[n] is the CRC of the single byte n, so the CRC advances a byte at a time.
constexpr std::array<uint32_t, 256> make_crc_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[n] = c;
    }
    return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

// ---- PNG filters (PNG specification, sections 9.2-9.4 and 12.8) ------------------------

// Each row is stored as the difference between its bytes and a prediction from the bytes
// already written: a = the same channel one pixel to the left, b = the one above, c = above
// and left (0 outside the image). Smooth or repetitive images turn into runs of small
// numbers, which LZ77 and Huffman codes shrink far better than the pixels themselves.
enum Filter : uint8_t { kNone = 0, kSub = 1, kUp = 2, kAverage = 3, kPaeth = 4 };

// out[i] = cur[i] - predict(a, b, c) for one row; up is the row above. The first bpp bytes
// have no left neighbour. A template, so each filter gets its own tight loop.
template <class Predict>
void filter_row(const uint8_t* cur, const uint8_t* up, size_t row, size_t bpp, uint8_t* out, Predict predict) {
    for (size_t i = 0; i < row; ++i) {
        const int a = i >= bpp ? cur[i - bpp] : 0, c = i >= bpp ? up[i - bpp] : 0;
        out[i] = static_cast<uint8_t>(cur[i] - predict(a, up[i], c));
    }
}

void filter_row(Filter filter, const uint8_t* cur, const uint8_t* up, size_t row, size_t bpp, uint8_t* out) {
    switch (filter) {
        case kNone:
            return filter_row(cur, up, row, bpp, out, [](int, int, int) { return 0; });
        case kSub:
            return filter_row(cur, up, row, bpp, out, [](int a, int, int) { return a; });
        case kUp:
            return filter_row(cur, up, row, bpp, out, [](int, int b, int) { return b; });
        case kAverage:
            return filter_row(cur, up, row, bpp, out, [](int a, int b, int) { return (a + b) / 2; });
        case kPaeth:
            return filter_row(cur, up, row, bpp, out, paeth_predictor);
    }
}

// pixels [height, row] -> [height, 1 + row]: each row's filter byte, then the row filtered.
// The filter is picked per row by the heuristic the PNG specification recommends (12.8):
// the smallest sum of |byte| with the filtered bytes read as signed, i.e. the residuals
// closest to zero. bpp is the bytes per pixel, the distance to the left neighbour.
std::vector<uint8_t> filter_rows(const std::vector<uint8_t>& pixels, size_t row, size_t height, size_t bpp) {
    std::vector<uint8_t> raw;
    raw.reserve((row + 1) * height);
    const std::vector<uint8_t> zeros(row, 0);  // the row "above" the first one
    std::vector<uint8_t> trial(row), best(row);
    for (size_t y = 0; y < height; ++y) {
        const uint8_t* cur = pixels.data() + y * row;
        const uint8_t* up = y == 0 ? zeros.data() : cur - row;
        uint64_t best_cost = UINT64_MAX;
        Filter best_filter = kNone;
        for (Filter f : {kNone, kSub, kUp, kAverage, kPaeth}) {
            filter_row(f, cur, up, row, bpp, trial.data());
            uint64_t cost = 0;
            for (uint8_t v : trial) cost += std::min(v, static_cast<uint8_t>(256 - v));
            if (cost < best_cost) {
                best_cost = cost;
                best_filter = f;
                best.swap(trial);
            }
        }
        raw.push_back(best_filter);
        raw.insert(raw.end(), best.begin(), best.end());
    }
    return raw;
}

}  // namespace

uint32_t crc32(const uint8_t* data, size_t size) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; ++i) c = kCrcTable[(c ^ data[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

namespace {

constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
constexpr size_t kMaxChunk = 0x7FFFFFFF;  // a chunk length is at most 2^31 - 1

void put_u32(std::vector<uint8_t>& out, uint32_t v) {  // PNG integers are big-endian
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

// length, type, data, CRC-32 of type + data
void put_chunk(std::vector<uint8_t>& png, const char (&type)[5], const std::vector<uint8_t>& data) {
    put_u32(png, static_cast<uint32_t>(data.size()));
    const size_t start = png.size();
    png.insert(png.end(), type, type + 4);
    png.insert(png.end(), data.begin(), data.end());
    put_u32(png, crc32(png.data() + start, png.size() - start));
}

}  // namespace

std::vector<uint8_t> encode_png(int width, int height, int channels, const std::vector<uint8_t>& pixels) {
    const std::string image = std::to_string(width) + "x" + std::to_string(height) + "x" + std::to_string(channels);
    check(width > 0 && height > 0, "encode_png: width and height must be positive, got ", image);
    check(channels == 1 || channels == 3 || channels == 4,
          "encode_png: channels must be 1 (gray), 3 (RGB) or 4 (RGBA), got ", image);
    const size_t row = static_cast<size_t>(width) * static_cast<size_t>(channels);
    const size_t expected = row * static_cast<size_t>(height);
    check(pixels.size() == expected, "encode_png: a ", image, " image needs ", expected, " pixel bytes, got ",
          pixels.size());

    const std::vector<uint8_t> raw =
        filter_rows(pixels, row, static_cast<size_t>(height), static_cast<size_t>(channels));
    const std::vector<uint8_t> idat = zlib_compress(raw.data(), raw.size());
    check(idat.size() <= kMaxChunk, "encode_png: a ", image, " image is too large for one IDAT chunk (", idat.size(),
          " bytes, at most 2^31 - 1)");

    std::vector<uint8_t> ihdr;
    put_u32(ihdr, static_cast<uint32_t>(width));
    put_u32(ihdr, static_cast<uint32_t>(height));
    const uint8_t colour_type = channels == 1 ? 0 : channels == 3 ? 2 : 6;
    // bit depth 8, colour type, compression 0 (deflate), filter method 0, no interlace
    ihdr.insert(ihdr.end(), {8, colour_type, 0, 0, 0});

    std::vector<uint8_t> png(kSignature, kSignature + 8);
    png.reserve(idat.size() + 64);
    put_chunk(png, "IHDR", ihdr);
    put_chunk(png, "IDAT", idat);
    put_chunk(png, "IEND", {});
    return png;
}

std::string png_replace_problem(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::status(path, ec).type() == std::filesystem::file_type::not_found) return "";
    const std::string not_regular = not_a_regular_file(path);
    if (!not_regular.empty()) return not_regular;
    std::ifstream in(path, std::ios::binary);
    char head[8] = {};
    in.read(head, sizeof head);
    if (in.gcount() == 8 && std::equal(head, head + 8, reinterpret_cast<const char*>(kSignature))) return "";
    return "holds something that is not a PNG";
}

void write_png(const std::string& path, int width, int height, int channels, const std::vector<uint8_t>& pixels) {
    const std::vector<uint8_t> png = encode_png(width, height, channels, pixels);
    atomic_write(path, "write_png", [&](std::ostream& out) {
        out.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
    });
}

}  // namespace patchgrad
