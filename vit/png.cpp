// png.cpp — PNG encoding with stored (uncompressed) deflate blocks; the layout is in png.h.
#include "vit/png.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace patchgrad {

namespace {

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

constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
constexpr size_t kMaxStoredBlock = 65535;       // LEN is 16 bits
constexpr size_t kMaxChunk = 0x7FFFFFFF;        // a chunk length is at most 2^31 - 1

void put_u32(std::vector<uint8_t>& out, uint32_t v) {  // PNG and zlib integers are big-endian
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

// zlib stream of `raw`: header, stored deflate blocks, Adler-32.
std::vector<uint8_t> zlib_stored(const std::vector<uint8_t>& raw) {
    // CMF 0x78: deflate with a 32 KiB window; FLG 0x01 makes 0x7801 a multiple of 31 (FCHECK).
    std::vector<uint8_t> z = {0x78, 0x01};
    z.reserve(raw.size() + raw.size() / kMaxStoredBlock * 5 + 16);
    size_t at = 0;
    do {
        const size_t n = std::min(kMaxStoredBlock, raw.size() - at);
        const bool final_block = at + n == raw.size();
        // BFINAL in bit 0, BTYPE 00 (stored) in bits 1-2; a stored block then skips to the byte
        // boundary, so the header is one whole byte, then LEN and its one's complement NLEN,
        // little-endian.
        z.push_back(final_block ? 1 : 0);
        const uint16_t len = static_cast<uint16_t>(n), nlen = static_cast<uint16_t>(~len);
        z.insert(z.end(), {static_cast<uint8_t>(len & 0xFF), static_cast<uint8_t>(len >> 8),
                           static_cast<uint8_t>(nlen & 0xFF), static_cast<uint8_t>(nlen >> 8)});
        z.insert(z.end(), raw.begin() + static_cast<std::ptrdiff_t>(at),
                 raw.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
    } while (at < raw.size());
    put_u32(z, adler32(raw.data(), raw.size()));
    return z;
}

}  // namespace

uint32_t crc32(const uint8_t* data, size_t size) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; ++i) c = kCrcTable[(c ^ data[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t adler32(const uint8_t* data, size_t size) {
    constexpr uint32_t kMod = 65521;  // the largest prime below 2^16
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < size; ++i) {
        a = (a + data[i]) % kMod;
        b = (b + a) % kMod;
    }
    return (b << 16) | a;
}

std::vector<uint8_t> encode_png(int width, int height, int channels, const std::vector<uint8_t>& pixels) {
    const std::string image = std::to_string(width) + "x" + std::to_string(height) + "x" + std::to_string(channels);
    if (width <= 0 || height <= 0)
        throw std::invalid_argument("encode_png: width and height must be positive, got " + image);
    if (channels != 1 && channels != 3 && channels != 4)
        throw std::invalid_argument("encode_png: channels must be 1 (gray), 3 (RGB) or 4 (RGBA), got " + image);
    const size_t row = static_cast<size_t>(width) * static_cast<size_t>(channels);
    const size_t expected = row * static_cast<size_t>(height);
    if (pixels.size() != expected)
        throw std::invalid_argument("encode_png: a " + image + " image needs " + std::to_string(expected) +
                                    " pixel bytes, got " + std::to_string(pixels.size()));

    // Rows with their filter byte: [height, 1 + width * channels].
    std::vector<uint8_t> raw;
    raw.reserve((row + 1) * static_cast<size_t>(height));
    for (size_t y = 0; y < static_cast<size_t>(height); ++y) {
        raw.push_back(0);  // filter type 0: the row's bytes as they are
        raw.insert(raw.end(), pixels.begin() + static_cast<std::ptrdiff_t>(y * row),
                   pixels.begin() + static_cast<std::ptrdiff_t>((y + 1) * row));
    }
    const std::vector<uint8_t> idat = zlib_stored(raw);
    if (idat.size() > kMaxChunk)
        throw std::invalid_argument("encode_png: a " + image + " image is too large for one IDAT chunk (" +
                                    std::to_string(idat.size()) + " bytes, at most 2^31 - 1)");

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

void write_png(const std::string& path, int width, int height, int channels, const std::vector<uint8_t>& pixels) {
    const std::vector<uint8_t> png = encode_png(width, height, channels, pixels);
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) {
            const std::string reason = std::error_code(errno, std::generic_category()).message();
            throw std::runtime_error("write_png: cannot open '" + tmp + "' to write '" + path + "': " + reason);
        }
        out.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
        out.close();
        if (!out) {
            std::remove(tmp.c_str());
            throw std::runtime_error("write_png: writing '" + tmp + "' for '" + path + "' failed (disk full?)");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string reason = std::error_code(errno, std::generic_category()).message();
        std::remove(tmp.c_str());
        throw std::runtime_error("write_png: cannot rename '" + tmp + "' to '" + path + "': " + reason);
    }
}

}  // namespace patchgrad
