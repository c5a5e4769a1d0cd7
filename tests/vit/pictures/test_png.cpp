// Tests for vit/pictures/png.cpp and deflate.cpp. Everything the writer produces is read back by
// a decoder written here from the specifications, not from the writer: an INFLATE (RFC 1951:
// stored, fixed and dynamic Huffman blocks) in the style of Mark Adler's puff.c, the zlib framing (RFC 1950)
// and the PNG chunks and filters. It also records what the stream contains (block types,
// matches), so the tests can check that the edge cases they aim at are really exercised.
// Files go to a fresh temporary directory.
#include "patchgrad/vit/pictures/png.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "catch.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/vit/pictures/chart.h"
#include "patchgrad/vit/pictures/deflate.h"
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

// ---- INFLATE (RFC 1951) ------------------------------------------------------------------

struct InflateStats {
    std::vector<int> block_types;                    // BTYPE of every block, in order
    std::vector<std::pair<size_t, size_t>> matches;  // (length, distance) of every back-reference
    size_t literals = 0;
};

// Bits from a byte vector, least significant first (3.1.1).
struct BitReader {
    const std::vector<uint8_t>& in;
    size_t at;
    uint32_t buffer = 0;
    int filled = 0;
    uint32_t bits(int n) {
        while (filled < n) {
            REQUIRE(at < in.size());
            buffer |= uint32_t(in[at++]) << filled;
            filled += 8;
        }
        const uint32_t v = buffer & ((1u << n) - 1);
        buffer >>= n;
        filled -= n;
        return v;
    }
    void align() { buffer = 0, filled = 0; }
};

// A canonical Huffman code (3.2.2) as puff.c keeps it: how many codes of each length, and
// the symbols ordered by (length, symbol).
struct Huffman {
    std::vector<int> count = std::vector<int>(16, 0);
    std::vector<int> symbols;
    bool complete = false;  // every bit string is (a prefix of) a code: what zlib requires
};

Huffman make_huffman(const std::vector<int>& lengths) {
    Huffman h;
    for (int l : lengths) ++h.count[size_t(l)];
    int left = 1;
    for (int len = 1; len <= 15; ++len) {
        left = left * 2 - h.count[size_t(len)];
        REQUIRE(left >= 0);  // over-subscribed: not a prefix code
    }
    h.complete = left == 0;
    for (int len = 1; len <= 15; ++len)
        for (size_t s = 0; s < lengths.size(); ++s)
            if (lengths[s] == len) h.symbols.push_back(int(s));
    return h;
}

// Reads one code bit by bit: codes of length len are the consecutive integers from `first`.
int decode_symbol(BitReader& in, const Huffman& h) {
    int code = 0, first = 0, index = 0;
    for (int len = 1; len <= 15; ++len) {
        code |= int(in.bits(1));
        const int count = h.count[size_t(len)];
        if (code - first < count) return h.symbols[size_t(index + code - first)];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    FAIL("inflate: no code matches the bits");
    return -1;
}

// The base values and extra bits of the length symbols 257..285 and distance symbols 0..29
// (3.2.5), derived from their pattern rather than copied: extra bits grow by one every 4
// (lengths) or 2 (distances) symbols; 285 is the special case 258.
struct ExtraTable {
    std::vector<int> base, extra;
};
ExtraTable length_table() {
    ExtraTable t;
    for (int i = 0, base = 3; i < 28; ++i) {
        const int extra = i < 8 ? 0 : (i - 4) / 4;
        t.base.push_back(base), t.extra.push_back(extra);
        base += 1 << extra;
    }
    t.base.push_back(258), t.extra.push_back(0);
    return t;
}
ExtraTable distance_table() {
    ExtraTable t;
    for (int i = 0, base = 1; i < 30; ++i) {
        const int extra = i < 4 ? 0 : (i - 2) / 2;
        t.base.push_back(base), t.extra.push_back(extra);
        base += 1 << extra;
    }
    return t;
}

void inflate_codes(BitReader& in, const Huffman& litlen, const Huffman& dist, std::vector<uint8_t>& out,
                   InflateStats& stats) {
    static const ExtraTable lengths = length_table(), distances = distance_table();
    for (;;) {
        const int symbol = decode_symbol(in, litlen);
        if (symbol < 256) {
            out.push_back(uint8_t(symbol));
            ++stats.literals;
            continue;
        }
        if (symbol == 256) return;
        REQUIRE(symbol <= 285);
        const size_t l = size_t(symbol - 257);
        const size_t length = size_t(lengths.base[l]) + in.bits(lengths.extra[l]);
        const int d = decode_symbol(in, dist);
        REQUIRE(d < 30);
        const size_t distance = size_t(distances.base[size_t(d)]) + in.bits(distances.extra[size_t(d)]);
        REQUIRE(distance <= out.size());  // no reference before the start of the stream
        for (size_t k = 0; k < length; ++k) out.push_back(out[out.size() - distance]);  // may overlap itself
        stats.matches.push_back({length, distance});
    }
}

// The dynamic block's code table (3.2.7). Both codes must be complete, as zlib demands.
std::pair<Huffman, Huffman> read_dynamic_codes(BitReader& in) {
    const size_t nlen = in.bits(5) + 257, ndist = in.bits(5) + 1, ncode = in.bits(4) + 4;
    REQUIRE(nlen <= 286);
    REQUIRE(ndist <= 30);
    const int order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    std::vector<int> cl_lengths(19, 0);
    for (size_t i = 0; i < ncode; ++i) cl_lengths[size_t(order[i])] = int(in.bits(3));
    const Huffman cl = make_huffman(cl_lengths);
    REQUIRE(cl.complete);
    std::vector<int> lengths;
    while (lengths.size() < nlen + ndist) {
        const int symbol = decode_symbol(in, cl);
        if (symbol < 16) {
            lengths.push_back(symbol);
            continue;
        }
        int value = 0;
        size_t repeat = 0;
        if (symbol == 16) {
            REQUIRE(!lengths.empty());
            value = lengths.back();
            repeat = 3 + in.bits(2);
        } else {
            repeat = symbol == 17 ? 3 + in.bits(3) : 11 + in.bits(7);
        }
        REQUIRE(lengths.size() + repeat <= nlen + ndist);
        lengths.insert(lengths.end(), repeat, value);
    }
    REQUIRE(lengths[256] > 0);  // the end-of-block code
    const Huffman litlen = make_huffman({lengths.begin(), lengths.begin() + long(nlen)});
    const Huffman dist = make_huffman({lengths.begin() + long(nlen), lengths.end()});
    CHECK(litlen.complete);
    CHECK(dist.complete);
    return {litlen, dist};
}

// A zlib stream (RFC 1950): header, DEFLATE blocks, Adler-32 of the output, nothing after.
std::vector<uint8_t> zlib_decompress(const std::vector<uint8_t>& z, InflateStats& stats) {
    REQUIRE(z.size() >= 6);
    REQUIRE((z[0] & 0x0F) == 8);                       // CM = deflate
    REQUIRE((z[0] >> 4) <= 7);                         // window at most 32 KiB
    REQUIRE((uint32_t(z[0]) * 256 + z[1]) % 31 == 0);  // FCHECK
    REQUIRE((z[1] & 0x20) == 0);                       // no preset dictionary
    std::vector<int> fixed_litlen(288, 8), fixed_dist(30, 5);
    std::fill(fixed_litlen.begin() + 144, fixed_litlen.begin() + 256, 9);
    std::fill(fixed_litlen.begin() + 256, fixed_litlen.begin() + 280, 7);
    std::vector<uint8_t> out;
    BitReader in{z, 2};
    for (bool final_block = false; !final_block;) {
        final_block = in.bits(1);
        const int type = int(in.bits(2));
        stats.block_types.push_back(type);
        if (type == 0) {  // stored: LEN and NLEN on a byte boundary, then LEN bytes
            in.align();
            const size_t len = in.bits(16), nlen = in.bits(16);
            REQUIRE((len ^ nlen) == 0xFFFF);
            REQUIRE(in.at + len <= z.size());
            out.insert(out.end(), z.begin() + long(in.at), z.begin() + long(in.at + len));
            in.at += len;
        } else if (type == 1) {
            inflate_codes(in, make_huffman(fixed_litlen), make_huffman(fixed_dist), out, stats);
        } else {
            REQUIRE(type == 2);
            const auto [litlen, dist] = read_dynamic_codes(in);
            inflate_codes(in, litlen, dist, out, stats);
        }
    }
    REQUIRE(in.at + 4 == z.size());  // the bits left in the last byte are padding
    CHECK(be32(z, in.at) == adler32(out.data(), out.size()));
    return out;
}

std::vector<uint8_t> inflate_zlib(const std::vector<uint8_t>& z) {
    InflateStats stats;
    return zlib_decompress(z, stats);
}

// ---- PNG -----------------------------------------------------------------------------------

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
    std::vector<int> filters;  // the filter type of every row
    InflateStats stats;
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
    const std::vector<uint8_t> raw = zlib_decompress(z, d.stats);

    // Undo the filters (9.2): each byte was stored minus a prediction from a (left),
    // b (above) and c (above-left), taken from the already reconstructed pixels.
    const size_t row = size_t(d.width) * size_t(d.channels), bpp = size_t(d.channels);
    REQUIRE(raw.size() == (row + 1) * size_t(d.height));
    d.pixels.resize(row * size_t(d.height));
    for (size_t y = 0; y < size_t(d.height); ++y) {
        const int filter = raw[y * (row + 1)];
        REQUIRE(filter <= 4);
        d.filters.push_back(filter);
        for (size_t i = 0; i < row; ++i) {
            const int a = i >= bpp ? d.pixels[y * row + i - bpp] : 0;
            const int b = y > 0 ? d.pixels[(y - 1) * row + i] : 0;
            const int c = i >= bpp && y > 0 ? d.pixels[(y - 1) * row + i - bpp] : 0;
            const int prediction = filter == 0   ? 0
                                   : filter == 1 ? a
                                   : filter == 2 ? b
                                   : filter == 3 ? (a + b) / 2
                                                 : paeth_predictor(a, b, c);
            d.pixels[y * row + i] = uint8_t(raw[y * (row + 1) + 1 + i] + prediction);
        }
    }
    return d;
}

// ---- fixtures ------------------------------------------------------------------------------

// Bytes that change from each pixel and channel to the next, so a swapped or shifted row or
// channel cannot go unnoticed.
std::vector<uint8_t> pattern(int width, int height, int channels) {
    std::vector<uint8_t> p(size_t(width) * size_t(height) * size_t(channels));
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7 + i / 251);
    return p;
}

std::vector<uint8_t> random_bytes(size_t n, Rng& rng, int alphabet = 256) {
    std::vector<uint8_t> b(n);
    for (uint8_t& v : b) v = static_cast<uint8_t>(rng.below(uint64_t(alphabet)));
    return b;
}

std::vector<uint8_t> compress(const std::vector<uint8_t>& data) { return zlib_compress(data.data(), data.size()); }

// A 800x500 training-curve chart like the one `patchgrad train` writes.
Image loss_chart() {
    Series train{"train", {}, {}}, val{"validation", {}, {}};
    for (int e = 1; e <= 100; ++e) {
        train.x.push_back(e), val.x.push_back(e);
        train.y.push_back(2.3 * std::exp(-e / 25.0) + 0.3 + 0.02 * std::sin(e * 1.7));
        val.y.push_back(2.3 * std::exp(-e / 30.0) + 0.45 + 0.03 * std::cos(e * 2.3));
    }
    return line_chart("loss", "epoch", "cross-entropy", {train, val}, 800, 500);
}

// ---- tests ---------------------------------------------------------------------------------

TEST_CASE("png: crc32 and adler32 match the known check values", "[vit][png]") {
    CHECK(crc_of("123456789") == 0xCBF43926u);
    CHECK(crc_of("") == 0u);
    CHECK(crc_of("IEND") == 0xAE426082u);  // the CRC every PNG ends with
    CHECK(adler_of("Wikipedia") == 0x11E60398u);
    CHECK(adler_of("") == 1u);
    // Past the modulus and past adler32's 5552-byte stretches between reductions: 70,000
    // bytes of 0xFF wrap both sums around 65521.
    const std::string ff(70000, '\xFF');
    uint64_t a = 1, b = 0;
    for (size_t i = 0; i < ff.size(); ++i) {
        a = (a + 0xFF) % 65521;
        b = (b + a) % 65521;
    }
    CHECK(adler_of(ff) == uint32_t(b << 16 | a));
}

TEST_CASE("png: zlib_compress round-trips empty, tiny and text-like inputs", "[vit][png][deflate]") {
    for (const std::string& s : {std::string(), std::string("a"), std::string("ab"), std::string("abc"),
                                 std::string("abcabcabcabcabcabcabc"), std::string(1000, 'x')}) {
        INFO("'" << s.substr(0, 30) << "' (" << s.size() << " bytes)");
        const std::vector<uint8_t> data(s.begin(), s.end());
        const std::vector<uint8_t> z = compress(data);
        CHECK(z[0] == 0x78);
        CHECK(z[1] == 0x9C);
        CHECK(inflate_zlib(z) == data);
    }
    std::string text;
    for (int i = 0; i < 2000; ++i)
        text += "epoch " + std::to_string(i % 37) + ", loss " + std::to_string(i * 7 % 101) + "\n";
    const std::vector<uint8_t> data(text.begin(), text.end());
    InflateStats stats;
    const std::vector<uint8_t> z = compress(data);
    CHECK(zlib_decompress(z, stats) == data);
    CHECK(z.size() < data.size() / 4);
    CHECK(stats.block_types == std::vector<int>(stats.block_types.size(), 2));  // dynamic codes pay here
}

TEST_CASE("png: random bytes fall back to stored blocks and barely grow", "[vit][png][deflate]") {
    Rng rng(1);
    for (size_t n : {size_t(1), size_t(100), size_t(65535), size_t(65536), size_t(200000)}) {
        INFO(n << " random bytes");
        const std::vector<uint8_t> data = random_bytes(n, rng);
        InflateStats stats;
        const std::vector<uint8_t> z = compress(data);
        CHECK(zlib_decompress(z, stats) == data);
        CHECK(z.size() <= n + n / 1000 + 16);  // 5 bytes per stored block of up to 65,535
        if (n >= 100) CHECK(std::set<int>(stats.block_types.begin(), stats.block_types.end()) == std::set<int>{0});
    }
}

TEST_CASE("png: long runs become matches of the maximum length 258", "[vit][png][deflate]") {
    for (size_t n : {size_t(258), size_t(259), size_t(262), size_t(1000000)}) {
        INFO("a run of " << n << " bytes");
        const std::vector<uint8_t> data(n, 0xAB);
        InflateStats stats;
        const std::vector<uint8_t> z = compress(data);
        CHECK(zlib_decompress(z, stats) == data);
        CHECK(stats.literals == 1);  // the first byte, then distance-1 matches copy it
        size_t longest = 0;
        for (const auto& m : stats.matches) longest = std::max(longest, m.first);
        CHECK(longest == std::min<size_t>(258, n - 1));
    }
    CHECK(compress(std::vector<uint8_t>(1000000, 0)).size() < 2500);  // 3,876 matches of 258 bytes
}

TEST_CASE("png: every match length from 3 to 258 round-trips", "[vit][png][deflate]") {
    // For every L, a random string t of L bytes below 128, twice, each copy followed by a
    // different byte from 128 up: "t x t y". The second t is one match of exactly L bytes: x
    // and y end it, and they are not in t. (Bytes x, y differ between most L, so no 3 bytes
    // around them repeat by chance and steal the start of the match.)
    Rng rng(2);
    std::vector<uint8_t> data;
    for (size_t len = 3; len <= 258; ++len) {
        const std::vector<uint8_t> t = random_bytes(len, rng, 128);
        for (size_t end : {128 + 2 * (len % 64), 129 + 2 * (len % 64)}) {
            data.insert(data.end(), t.begin(), t.end());
            data.push_back(uint8_t(end));
        }
    }
    InflateStats stats;
    CHECK(zlib_decompress(compress(data), stats) == data);
    std::set<size_t> lengths;
    for (const auto& m : stats.matches) lengths.insert(m.first);
    for (size_t len = 3; len <= 258; ++len) {
        INFO("length " << len);
        CHECK(lengths.count(len) == 1);
    }
}

TEST_CASE("png: matches reach exactly 32 KiB back, no farther", "[vit][png][deflate]") {
    // A random 600-byte string A, filler from a 16-letter alphabet (cheap for Huffman codes,
    // so the blocks are not stored) and A again, `gap` bytes after its first copy.
    Rng rng(3);
    const std::vector<uint8_t> a = random_bytes(600, rng);
    for (size_t gap : {size_t(32767), size_t(32768), size_t(32769)}) {
        INFO("the copy " << gap << " bytes back");
        std::vector<uint8_t> data = a;
        const std::vector<uint8_t> filler = random_bytes(gap - a.size(), rng, 16);
        data.insert(data.end(), filler.begin(), filler.end());
        data.insert(data.end(), a.begin(), a.end());
        InflateStats stats;
        CHECK(zlib_decompress(compress(data), stats) == data);
        size_t copied = 0, farthest = 0;  // long matches can only come from the copy of A
        for (const auto& m : stats.matches) {
            if (m.first > 20) copied += m.first;
            farthest = std::max(farthest, m.second);
        }
        CHECK(farthest <= 32768);
        if (gap <= 32768) {
            CHECK(copied >= 590);
            CHECK(std::count(stats.matches.begin(), stats.matches.end(), std::pair<size_t, size_t>{258, gap}) == 2);
        } else {
            CHECK(copied == 0);  // A's first copy has left the window
        }
    }
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
    Rng rng(4);
    for (int channels : {1, 3, 4})
        for (auto [w, h] : {std::pair{1, 1}, std::pair{5, 3}, std::pair{17, 9}, std::pair{2, 40}, std::pair{1, 33},
                            std::pair{257, 3}, std::pair{131, 77}}) {
            INFO(w << "x" << h << "x" << channels);
            const std::vector<uint8_t> pixels = pattern(w, h, channels);
            const Decoded d = decode(encode_png(w, h, channels, pixels));
            CHECK(d.width == w);
            CHECK(d.height == h);
            CHECK(d.channels == channels);
            CHECK(d.pixels == pixels);
            const std::vector<uint8_t> noise = random_bytes(pixels.size(), rng);
            CHECK(decode(encode_png(w, h, channels, noise)).pixels == noise);
            const std::vector<uint8_t> zeros(pixels.size(), 0);
            CHECK(decode(encode_png(w, h, channels, zeros)).pixels == zeros);
        }
}

TEST_CASE("png: each row gets the filter that leaves the smallest residuals", "[vit][png]") {
    // A horizontal ramp: the first row is best predicted from the left (Sub: all residuals 3),
    // every later row from the row above (Up: all 0).
    std::vector<uint8_t> ramp;
    for (int y = 0; y < 6; ++y)
        for (int x = 0; x < 40; ++x) ramp.push_back(uint8_t(3 * x));
    const Decoded r = decode(encode_png(40, 6, 1, ramp));
    CHECK(r.pixels == ramp);
    CHECK(r.filters == std::vector<int>{1, 2, 2, 2, 2, 2});
    // g(x) + h(y), steep in x on the left and flat on the right, rising 2 per row. Paeth
    // predicts from whichever neighbour is closer to a + b - c (here: the exact value), so it
    // takes the left neighbour on the right half and the one above on the left half, and
    // beats both Sub and Up from the second row on. (In the first row it ties with Sub, and
    // ties go to the lower filter type.)
    std::vector<uint8_t> plane;
    for (int y = 0; y < 6; ++y)
        for (int x = 0; x < 40; ++x) plane.push_back(uint8_t(std::min(x, 20) * 6 + 2 * y));
    const Decoded p = decode(encode_png(40, 6, 1, plane));
    CHECK(p.pixels == plane);
    CHECK(p.filters == std::vector<int>{1, 4, 4, 4, 4, 4});
    // A second row that is, pixel by pixel, the mean of its left and upper neighbours:
    // Average predicts it exactly.
    std::vector<uint8_t> avg;
    for (int x = 0; x < 40; ++x) avg.push_back(uint8_t(100 + 2 * x));
    for (int x = 0; x < 40; ++x) avg.push_back(uint8_t(((x > 0 ? avg[size_t(40 + x - 1)] : 0) + avg[size_t(x)]) / 2));
    const Decoded a = decode(encode_png(40, 2, 1, avg));
    CHECK(a.pixels == avg);
    CHECK(a.filters == std::vector<int>{1, 3});
}

TEST_CASE("png: a 800x500 training chart compresses about 100-fold and decodes exactly", "[vit][png]") {
    const Image chart = loss_chart();
    const std::vector<uint8_t> png = encode_png(chart.width, chart.height, 3, chart.rgb);
    const Decoded d = decode(png);
    CHECK(d.width == 800);
    CHECK(d.height == 500);
    CHECK(d.pixels == chart.rgb);
    CHECK(png.size() < 16000);  // 1.2 MB of pixels; 8.4 KB when written
    const std::set<int> filters(d.filters.begin(), d.filters.end());
    CHECK(filters.size() >= 3);
    CHECK(std::count(d.stats.block_types.begin(), d.stats.block_types.end(), 2) >= 1);

    const std::vector<double> v = [] {
        std::vector<double> values(64 * 64);
        for (size_t i = 0; i < values.size(); ++i)
            values[i] = std::sin(double(i % 64) * 0.3) * std::cos(double(i / 64) * 0.2);
        return values;
    }();
    const Image heat =
        hconcat({heatmap(v, 64, 64, 7, -1, 1, Colormap::Diverging), colorbar(Colormap::Diverging, -1, 1, 448)}, 8);
    const std::vector<uint8_t> heat_png = encode_png(heat.width, heat.height, 3, heat.rgb);
    CHECK(decode(heat_png).pixels == heat.rgb);
    CHECK(heat_png.size() < heat.rgb.size() / 20);
}

TEST_CASE("png: write_png writes encode_png's bytes and replaces an existing file", "[vit][png]") {
    TempDir dir;
    const std::string path = dir.file("picture.png");
    write_png(path, 4, 3, 4, pattern(4, 3, 4));
    CHECK(read_bytes(path) == encode_png(4, 3, 4, pattern(4, 3, 4)));
    write_png(path, 2, 2, 1, {0, 85, 170, 255});
    CHECK(decode(read_bytes(path)).pixels == std::vector<uint8_t>{0, 85, 170, 255});
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());
}

// `compare --out R/best.safetensors` replaced the checkpoint with a chart.
TEST_CASE("png: only nothing or a PNG may be replaced by a picture", "[vit][png][errors]") {
    TempDir dir;
    const std::string png = dir.file("chart.png"), other = dir.file("best.safetensors");
    CHECK(png_replace_problem(png) == "");
    write_png(png, 1, 1, 1, {7});
    CHECK(png_replace_problem(png) == "");
    std::ofstream(other) << "\x89PNG but not quite";
    CHECK(png_replace_problem(other) == "holds something that is not a PNG");
    std::ofstream(dir.file("empty.png")).close();
    CHECK(png_replace_problem(dir.file("empty.png")) == "holds something that is not a PNG");
    CHECK(png_replace_problem(dir.path.string()) == "is a directory, not a regular file");
}

TEST_CASE("png: bad sizes are rejected with the sizes in the message", "[vit][png][errors]") {
    require_error([] { encode_png(0, 3, 3, {}); }, {"encode_png", "0x3x3", "positive"});
    require_error([] { encode_png(4, -1, 3, {}); }, {"encode_png", "4x-1x3", "positive"});
    require_error([] { encode_png(2, 2, 2, std::vector<uint8_t>(8)); },
                  {"encode_png", "2x2x2", "1 (gray), 3 (RGB) or 4"});
    require_error([] { encode_png(4, 3, 3, std::vector<uint8_t>(35)); }, {"encode_png", "4x3x3", "36", "got 35"});
    CHECK_THROWS_AS(encode_png(4, 3, 3, std::vector<uint8_t>(37)), std::invalid_argument);
    TempDir dir;
    const std::string path = dir.file("bad.png");
    CHECK_THROWS_AS(write_png(path, 4, 3, 3, std::vector<uint8_t>(5)), std::invalid_argument);
    CHECK_FALSE(fs::exists(path));
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());
}

TEST_CASE("png: a failed write names the path and leaves the old file untouched", "[vit][png][errors]") {
    TempDir dir;
    const std::vector<uint8_t> pixels = pattern(2, 2, 3);

    const std::string missing = dir.file("no_such_dir/out.png");
    CHECK_THROWS_AS(write_png(missing, 2, 2, 3, pixels), std::runtime_error);
    require_error([&] { write_png(missing, 2, 2, 3, pixels); }, {"write_png", missing, "cannot open"});

    // The disk is full: the old picture stays, and no temporary file.
    const std::string old_path = dir.file("old.png");
    write_png(old_path, 1, 1, 1, {42});
    const std::vector<uint8_t> old_bytes = read_bytes(old_path);
    std::string message;
    {
        FileSizeLimit full(0);
        try {
            write_png(old_path, 2, 2, 3, pixels);
        } catch (const std::runtime_error& e) {
            message = e.what();
        }
    }
    INFO(message);
    CHECK(message.find("write_png") != std::string::npos);
    CHECK(message.find(old_path) != std::string::npos);
    CHECK(read_bytes(old_path) == old_bytes);

    // The rename fails (the path is a directory): the temporary file is cleaned up.
    const std::string dir_path = dir.file("a_directory");
    fs::create_directory(dir_path);
    CHECK_THROWS_AS(write_png(dir_path, 2, 2, 3, pixels), std::runtime_error);
    require_error([&] { write_png(dir_path, 2, 2, 3, pixels); }, {"write_png", "cannot rename", dir_path});
    CHECK(fs::is_directory(dir_path));
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());
}

}  // namespace
}  // namespace patchgrad
