// Tests for vit/png.cpp. The PNGs are read back by a decoder written here from the PNG and
// zlib/deflate specifications (RFC 1950, 1951), for the subset the writer produces: one IDAT
// chunk or several, stored deflate blocks, filter type 0. Files go to a fresh temporary
// directory.
#include "vit/png.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

#include "catch.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;
namespace fs = std::filesystem;

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string s = ss.str();
    return {s.begin(), s.end()};
}

uint32_t crc_of(const std::string& s) { return crc32(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }
uint32_t adler_of(const std::string& s) { return adler32(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
    return uint32_t(b.at(at)) << 24 | uint32_t(b.at(at + 1)) << 16 | uint32_t(b.at(at + 2)) << 8 | b.at(at + 3);
}

struct Chunk {
    std::string type;
    std::vector<uint8_t> data;
};

// Splits a PNG into its chunks, requiring the signature and every chunk's CRC.
std::vector<Chunk> read_chunks(const std::vector<uint8_t>& png) {
    const std::vector<uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    REQUIRE(png.size() >= 8);
    REQUIRE(std::vector<uint8_t>(png.begin(), png.begin() + 8) == signature);
    std::vector<Chunk> chunks;
    size_t at = 8;
    while (at < png.size()) {
        REQUIRE(at + 12 <= png.size());
        const uint32_t length = be32(png, at);
        REQUIRE(at + 12 + length <= png.size());
        Chunk c{std::string(png.begin() + long(at) + 4, png.begin() + long(at) + 8),
                std::vector<uint8_t>(png.begin() + long(at) + 8, png.begin() + long(at) + 8 + long(length))};
        INFO("chunk " << c.type);
        CHECK(be32(png, at + 8 + length) == crc32(png.data() + at + 4, 4 + length));  // CRC of type + data
        chunks.push_back(std::move(c));
        at += 12 + length;
    }
    REQUIRE(at == png.size());
    return chunks;
}

struct Decoded {
    int width = 0, height = 0, channels = 0;
    std::vector<uint8_t> pixels;
    std::vector<size_t> block_lengths;  // LEN of every stored deflate block, in order
};

Decoded decode(const std::vector<uint8_t>& png) {
    const std::vector<Chunk> chunks = read_chunks(png);
    REQUIRE(chunks.size() >= 3);
    REQUIRE(chunks.front().type == "IHDR");
    REQUIRE(chunks.back().type == "IEND");
    REQUIRE(chunks.back().data.empty());
    const std::vector<uint8_t>& ihdr = chunks.front().data;
    REQUIRE(ihdr.size() == 13);
    Decoded d;
    d.width = static_cast<int>(be32(ihdr, 0));
    d.height = static_cast<int>(be32(ihdr, 4));
    REQUIRE(ihdr[8] == 8);  // bit depth
    const int colour_type = ihdr[9];
    REQUIRE((colour_type == 0 || colour_type == 2 || colour_type == 6));
    d.channels = colour_type == 0 ? 1 : colour_type == 2 ? 3 : 4;
    REQUIRE(ihdr[10] == 0);  // compression: deflate
    REQUIRE(ihdr[11] == 0);  // filter method 0
    REQUIRE(ihdr[12] == 0);  // no interlace

    std::vector<uint8_t> z;  // the IDAT chunks, concatenated, are one zlib stream
    for (size_t i = 1; i + 1 < chunks.size(); ++i) {
        REQUIRE(chunks[i].type == "IDAT");
        z.insert(z.end(), chunks[i].data.begin(), chunks[i].data.end());
    }
    REQUIRE(z.size() >= 6);
    REQUIRE((z[0] & 0x0F) == 8);                       // CM = deflate
    REQUIRE((z[0] >> 4) <= 7);                         // window at most 32 KiB
    REQUIRE((uint32_t(z[0]) * 256 + z[1]) % 31 == 0);  // FCHECK
    REQUIRE((z[1] & 0x20) == 0);                       // no preset dictionary
    std::vector<uint8_t> raw;
    size_t at = 2;
    for (bool final_block = false; !final_block;) {
        REQUIRE(at + 5 <= z.size());
        final_block = z[at] & 1;
        REQUIRE((z[at] >> 1 & 3) == 0);  // BTYPE 00: stored
        const size_t len = z[at + 1] | size_t(z[at + 2]) << 8, nlen = z[at + 3] | size_t(z[at + 4]) << 8;
        REQUIRE((len ^ nlen) == 0xFFFF);
        REQUIRE(at + 5 + len <= z.size());
        raw.insert(raw.end(), z.begin() + long(at) + 5, z.begin() + long(at + 5 + len));
        d.block_lengths.push_back(len);
        at += 5 + len;
    }
    REQUIRE(at + 4 == z.size());
    CHECK(be32(z, at) == adler32(raw.data(), raw.size()));

    const size_t row = size_t(d.width) * size_t(d.channels);
    REQUIRE(raw.size() == (row + 1) * size_t(d.height));
    for (int y = 0; y < d.height; ++y) {
        const size_t start = size_t(y) * (row + 1);
        REQUIRE(raw[start] == 0);  // filter type None
        d.pixels.insert(d.pixels.end(), raw.begin() + long(start) + 1, raw.begin() + long(start + 1 + row));
    }
    return d;
}

// Bytes that change from each pixel and channel to the next, so a swapped or shifted row or
// channel cannot go unnoticed.
std::vector<uint8_t> pattern(int width, int height, int channels) {
    std::vector<uint8_t> p(size_t(width) * size_t(height) * size_t(channels));
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7 + i / 251);
    return p;
}

TEST_CASE("png: crc32 and adler32 match the known check values", "[vit][png]") {
    CHECK(crc_of("123456789") == 0xCBF43926u);
    CHECK(crc_of("") == 0u);
    CHECK(crc_of("IEND") == 0xAE426082u);  // the CRC every PNG ends with
    CHECK(adler_of("Wikipedia") == 0x11E60398u);
    CHECK(adler_of("") == 1u);
    // Past the modulus: 70,000 bytes of 0xFF wrap both sums around 65521.
    const std::string ff(70000, '\xFF');
    uint64_t a = 1, b = 0;
    for (size_t i = 0; i < ff.size(); ++i) {
        a = (a + 0xFF) % 65521;
        b = (b + a) % 65521;
    }
    CHECK(adler_of(ff) == uint32_t(b << 16 | a));
}

TEST_CASE("png: signature, IHDR fields and chunk CRCs", "[vit][png]") {
    const std::vector<uint8_t> png = encode_png(3, 2, 3, pattern(3, 2, 3));
    const std::vector<Chunk> chunks = read_chunks(png);
    REQUIRE(chunks.size() == 3);
    CHECK(chunks[0].type == "IHDR");
    CHECK(chunks[1].type == "IDAT");
    CHECK(chunks[2].type == "IEND");
    CHECK(chunks[0].data == std::vector<uint8_t>{0, 0, 0, 3, 0, 0, 0, 2, 8, 2, 0, 0, 0});
    CHECK(std::vector<uint8_t>(png.end() - 4, png.end()) == std::vector<uint8_t>{0xAE, 0x42, 0x60, 0x82});
}

TEST_CASE("png: decoding gives back exactly the pixels written, gray, RGB and RGBA", "[vit][png]") {
    for (int channels : {1, 3, 4})
        for (auto [w, h] : {std::pair{1, 1}, std::pair{5, 3}, std::pair{17, 9}, std::pair{2, 40}}) {
            INFO(w << "x" << h << "x" << channels);
            const std::vector<uint8_t> pixels = pattern(w, h, channels);
            const Decoded d = decode(encode_png(w, h, channels, pixels));
            CHECK(d.width == w);
            CHECK(d.height == h);
            CHECK(d.channels == channels);
            CHECK(d.pixels == pixels);
            CHECK(d.block_lengths.size() == 1);
        }
}

TEST_CASE("png: rows longer than one stored block are split into blocks of 65,535 bytes", "[vit][png]") {
    // 200 x 150 RGB: 150 rows of 1 + 600 bytes = 90,150 bytes = 65,535 + 24,615.
    const std::vector<uint8_t> big = pattern(200, 150, 3);
    const Decoded d = decode(encode_png(200, 150, 3, big));
    CHECK(d.pixels == big);
    CHECK(d.block_lengths == std::vector<size_t>{65535, 24615});
    // The edges: exactly one full block (257 rows of 1 + 254), and one byte more (1 row of 1 + 65,535).
    CHECK(decode(encode_png(254, 257, 1, pattern(254, 257, 1))).block_lengths == std::vector<size_t>{65535});
    const Decoded wide = decode(encode_png(21845, 1, 3, pattern(21845, 1, 3)));
    CHECK(wide.block_lengths == std::vector<size_t>{65535, 1});
    CHECK(wide.pixels == pattern(21845, 1, 3));
}

TEST_CASE("png: write_png writes encode_png's bytes and replaces an existing file", "[vit][png]") {
    TempDir dir;
    const std::string path = dir.file("picture.png");
    write_png(path, 4, 3, 4, pattern(4, 3, 4));
    CHECK(read_bytes(path) == encode_png(4, 3, 4, pattern(4, 3, 4)));
    write_png(path, 2, 2, 1, {0, 85, 170, 255});
    CHECK(decode(read_bytes(path)).pixels == std::vector<uint8_t>{0, 85, 170, 255});
    CHECK_FALSE(fs::exists(path + ".tmp"));
}

TEST_CASE("png: bad sizes are rejected with the sizes in the message", "[vit][png][errors]") {
    require_error([] { encode_png(0, 3, 3, {}); }, {"encode_png", "0x3x3", "positive"});
    require_error([] { encode_png(4, -1, 3, {}); }, {"encode_png", "4x-1x3", "positive"});
    require_error([] { encode_png(2, 2, 2, std::vector<uint8_t>(8)); }, {"encode_png", "2x2x2", "1 (gray), 3 (RGB) or 4"});
    require_error([] { encode_png(4, 3, 3, std::vector<uint8_t>(35)); }, {"encode_png", "4x3x3", "36", "got 35"});
    CHECK_THROWS_AS(encode_png(4, 3, 3, std::vector<uint8_t>(37)), std::invalid_argument);
    TempDir dir;
    const std::string path = dir.file("bad.png");
    CHECK_THROWS_AS(write_png(path, 4, 3, 3, std::vector<uint8_t>(5)), std::invalid_argument);
    CHECK_FALSE(fs::exists(path));
    CHECK_FALSE(fs::exists(path + ".tmp"));
}

TEST_CASE("png: a failed write names the path and leaves the old file untouched", "[vit][png][errors]") {
    TempDir dir;
    const std::vector<uint8_t> pixels = pattern(2, 2, 3);

    const std::string missing = dir.file("no_such_dir/out.png");
    CHECK_THROWS_AS(write_png(missing, 2, 2, 3, pixels), std::runtime_error);
    require_error([&] { write_png(missing, 2, 2, 3, pixels); }, {"write_png", missing, "cannot open"});

    // The temporary file cannot be created (a directory is in its way): the old picture stays.
    const std::string old_path = dir.file("old.png");
    write_png(old_path, 1, 1, 1, {42});
    const std::vector<uint8_t> old_bytes = read_bytes(old_path);
    fs::create_directory(old_path + ".tmp");
    require_error([&] { write_png(old_path, 2, 2, 3, pixels); }, {"write_png", old_path});
    CHECK(read_bytes(old_path) == old_bytes);
    CHECK(fs::is_directory(old_path + ".tmp"));  // not ours to remove

    // The rename fails (the path is a directory): the temporary file is cleaned up.
    const std::string dir_path = dir.file("a_directory");
    fs::create_directory(dir_path);
    CHECK_THROWS_AS(write_png(dir_path, 2, 2, 3, pixels), std::runtime_error);
    require_error([&] { write_png(dir_path, 2, 2, 3, pixels); }, {"write_png", "cannot rename", dir_path});
    CHECK(fs::is_directory(dir_path));
    CHECK_FALSE(fs::exists(dir_path + ".tmp"));
}

}  // namespace
}  // namespace patchgrad
