// Tests for vit/pictures/inflate.cpp: streams Python's zlib wrote (tests/data/pictures/,
// made by vit/scripts/make_picture_fixtures.py) in each block type, the compressor of
// deflate.cpp read back, and hand-made broken streams, each refused with its own message.
#include "patchgrad/vit/pictures/inflate.h"

#include <string>
#include <vector>

#include "catch.h"
#include "datasets/datasets_test_util.h"
#include "patchgrad/vit/pictures/deflate.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

std::vector<uint8_t> fixture(const std::string& name) {
    const std::string s = read_bytes(std::string(PATCHGRAD_TEST_DATA) + "/pictures/" + name);
    REQUIRE(!s.empty());
    return {s.begin(), s.end()};
}

// make_picture_fixtures.py's zlib_fixture_data().
std::vector<uint8_t> fixture_data() {
    std::vector<uint8_t> data;
    for (int k = 0; k < 200; ++k)
        for (char c : std::string("patchgrad ")) data.push_back(static_cast<uint8_t>(c));
    for (int i = 0; i < 1000; ++i) data.push_back(static_cast<uint8_t>(97 + i * i % 251 % 16));
    return data;
}

std::vector<uint8_t> inflate(const std::vector<uint8_t>& z, InflateTrace* trace = nullptr,
                             size_t max_output = size_t(1) << 20) {
    return zlib_decompress(z.data(), z.size(), max_output, "test stream", trace);
}

// Bits packed least significant first, as DEFLATE stores them; Huffman codes go in most
// significant bit first (put_code).
struct Bits {
    // A zlib header (deflate, 32 KiB window, FCHECK right); assigned, not brace-initialised,
    // which GCC 12 wrongly reports as maybe-uninitialized.
    std::vector<uint8_t> bytes = std::vector<uint8_t>(2, 0x78);
    int used = 8;  // bits used in the last byte
    Bits() { bytes[1] = 0x01; }
    void put(uint32_t value, int count) {
        for (int i = 0; i < count; ++i) {
            if (used == 8) bytes.push_back(0), used = 0;
            bytes.back() = static_cast<uint8_t>(bytes.back() | ((value >> i) & 1) << used++);
        }
    }
    void put_code(uint32_t code, int length) {
        for (int i = length - 1; i >= 0; --i) put(code >> i & 1, 1);
    }
    // The Adler-32 of `data`, after the blocks; the zeros pad the last byte.
    std::vector<uint8_t> finish(const std::vector<uint8_t>& data) {
        std::vector<uint8_t> z = bytes;
        const uint32_t a = adler32(data.data(), data.size());
        for (int shift = 24; shift >= 0; shift -= 8) z.push_back(static_cast<uint8_t>(a >> shift));
        return z;
    }
};

TEST_CASE("inflate: zlib's stored, fixed and dynamic Huffman streams decode exactly", "[vit][inflate]") {
    const std::vector<uint8_t> data = fixture_data();
    const std::pair<const char*, int> streams[] = {{"stored.zlib", 0}, {"fixed.zlib", 1}, {"dynamic.zlib", 2}};
    for (const auto& [file, type] : streams) {
        INFO(file);
        InflateTrace trace;
        CHECK(inflate(fixture(file), &trace) == data);
        REQUIRE(!trace.block_types.empty());
        CHECK(trace.block_types.front() == type);
        if (type > 0) {
            CHECK(!trace.matches.empty());  // "patchgrad " repeats
            CHECK(trace.literals > 0);
        }
    }
}

TEST_CASE("inflate: reads back what deflate.cpp's compressor writes", "[vit][inflate]") {
    Rng rng(5);
    for (size_t size : {size_t(0), size_t(1), size_t(300), size_t(70000)}) {
        std::vector<uint8_t> data(size);
        for (size_t i = 0; i < size; ++i)
            data[i] = static_cast<uint8_t>(i % 3 == 0 ? rng.below(256) : i / 1000);  // matches and noise
        const std::vector<uint8_t> z = zlib_compress(data.data(), data.size());
        CHECK(inflate(z) == data);
    }
}

TEST_CASE("inflate: a hand-made fixed block with an overlapping match", "[vit][inflate]") {
    // Literal 'a' (fixed code 0x30 + 97, 8 bits), then length 5 (symbol 259: 7 bits 0000011)
    // at distance 1 (distance symbol 0: 5 bits 00000): "aaaaaa". A run, the match reading the
    // bytes it writes.
    Bits b;
    b.put(1, 1), b.put(1, 2);
    b.put_code(0x30 + 'a', 8);
    b.put_code(3, 7);
    b.put_code(0, 5);
    b.put_code(0, 7);  // end of block
    const std::vector<uint8_t> expected(6, 'a');
    InflateTrace trace;
    CHECK(inflate(b.finish(expected), &trace) == expected);
    CHECK(trace.matches == std::vector<std::pair<size_t, size_t>>{{5, 1}});
}

TEST_CASE("inflate: several stored blocks, an empty one last", "[vit][inflate]") {
    Bits b;
    const std::vector<uint8_t> data = {'h', 'i', '!'};
    b.put(0, 1), b.put(0, 2), b.used = 8;  // BFINAL 0, stored; then to the byte boundary
    b.bytes.insert(b.bytes.end(), {3, 0, 0xFC, 0xFF, 'h', 'i', '!'});
    b.put(1, 1), b.put(0, 2), b.used = 8;
    b.bytes.insert(b.bytes.end(), {0, 0, 0xFF, 0xFF});
    InflateTrace trace;
    CHECK(inflate(b.finish(data), &trace) == data);
    CHECK(trace.block_types == std::vector<int>{0, 0});
}

TEST_CASE("inflate: every broken stream is refused with what is wrong", "[vit][inflate][errors]") {
    const std::vector<uint8_t> good = fixture("dynamic.zlib"), data = fixture_data();
    auto with = [&](size_t at, uint8_t value) {
        std::vector<uint8_t> z = good;
        z[at] = value;
        return z;
    };
    require_error([&] { inflate(with(0, 0x79)); }, {"test stream", "not a zlib stream"});
    require_error([&] { inflate(with(1, 0xDB)); }, {"test stream", "header check failed"});
    require_error([&] { inflate({0x78, 0xBB, 0, 0, 0, 0, 0}); }, {"preset dictionary"});
    require_error([&] { inflate(with(good.size() - 1, good.back() ^ 1)); }, {"Adler-32 mismatch"});
    require_error([&] { inflate(good, nullptr, 100); }, {"decompresses to more than 100 bytes"});
    require_error([&] { inflate({0x78, 0x01}); }, {"truncated"});

    Bits reserved;
    reserved.put(1, 1), reserved.put(3, 2);
    require_error([&] { inflate(reserved.finish({})); }, {"reserved type 3"});

    Bits nlen;
    nlen.put(1, 1), nlen.put(0, 2), nlen.used = 8;
    nlen.bytes.insert(nlen.bytes.end(), {3, 0, 0xFC, 0xFE, 'h', 'i', '!'});
    require_error([&] { inflate(nlen.finish({'h', 'i', '!'})); }, {"LEN 3 and NLEN", "complement"});

    Bits far;  // a match before any byte was written: length 3 (257), distance 1
    far.put(1, 1), far.put(1, 2);
    far.put_code(1, 7), far.put_code(0, 5);
    require_error([&] { inflate(far.finish({})); }, {"reaches 1 bytes back, but only 0 bytes came before it"});

    Bits length286;  // fixed code 11000110
    length286.put(1, 1), length286.put(1, 2);
    length286.put_code(0xC6, 8);
    require_error([&] { inflate(length286.finish({})); }, {"length symbol 286", "does not exist"});

    Bits distance30;  // 'a', then length 3 at distance symbol 30 (fixed code 11110)
    distance30.put(1, 1), distance30.put(1, 2);
    distance30.put_code(0x30 + 'a', 8), distance30.put_code(1, 7), distance30.put_code(30, 5);
    require_error([&] { inflate(distance30.finish({})); }, {"distance symbol 30", "does not exist"});

    Bits oversubscribed;  // a dynamic block whose code-length code gives 19 symbols 1 bit each
    oversubscribed.put(1, 1), oversubscribed.put(2, 2);
    oversubscribed.put(0, 5), oversubscribed.put(0, 5), oversubscribed.put(15, 4);
    for (int i = 0; i < 19; ++i) oversubscribed.put(1, 3);
    require_error([&] { inflate(oversubscribed.finish({})); }, {"code-length code is over-subscribed"});

    Bits no_code;  // the code-length code has one code, "0" for symbol 18; the bits say "1"
    no_code.put(1, 1), no_code.put(2, 2);
    no_code.put(0, 5), no_code.put(0, 5), no_code.put(0, 4);
    no_code.put(0, 3), no_code.put(0, 3), no_code.put(1, 3), no_code.put(0, 3);  // symbols 16, 17, 18, 0
    no_code.put(1, 1);
    require_error([&] { inflate(no_code.finish({})); }, {"bad Huffman code in the code-length code"});
}

TEST_CASE("inflate: a stream cut anywhere is refused, never read past", "[vit][inflate][errors]") {
    for (const char* file : {"stored.zlib", "fixed.zlib", "dynamic.zlib"}) {
        const std::vector<uint8_t> z = fixture(file);
        for (size_t n = 0; n < z.size(); ++n) {
            INFO(file << " cut to " << n << " bytes");
            // A copy of exactly n bytes, so that a read past them is a sanitizer error.
            const std::vector<uint8_t> cut(z.begin(), z.begin() + long(n));
            CHECK_THROWS_AS(inflate(cut), std::invalid_argument);
        }
    }
}

}  // namespace
}  // namespace patchgrad
