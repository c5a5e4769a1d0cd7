// Tests for vit/pictures/image_file.cpp: PNGs of every colour type and bit depth with every
// filter (tests/data/pictures/, written by Python from vit/scripts/make_picture_fixtures.py),
// the PNG writer's files read back, PPM, the conversion to a model's input, and damaged
// files, each refused with one message naming the file.
#include "patchgrad/vit/pictures/image_file.h"

#include <string>
#include <vector>

#include "catch.h"
#include "datasets/datasets_test_util.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/vit/pictures/deflate.h"
#include "patchgrad/vit/pictures/png.h"
#include "test_util.h"
#include "vit/pictures/png_crc_fix.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

std::string fixture_path(const std::string& name) { return std::string(PATCHGRAD_TEST_DATA) + "/pictures/" + name; }
std::string fixture(const std::string& name) { return read_bytes(fixture_path(name)); }

// make_picture_fixtures.py's sample_value().
int sample_value(int x, int y, int c, int bits) { return (x * 37 + y * 91 + c * 53 + x * y * 11) % (1 << bits); }

std::string as_string(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

// A string literal with its NUL bytes ("P5 1 1 255 \x00").
template <size_t N>
std::string literal(const char (&s)[N]) {
    return std::string(s, N - 1);
}

void put_u32(std::string& s, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(v >> shift));
}

// One PNG chunk with its right CRC.
std::string chunk(const std::string& type, const std::string& data) {
    std::string c;
    put_u32(c, static_cast<uint32_t>(data.size()));
    const std::string body = type + data;
    c += body;
    put_u32(c, crc32(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
    return c;
}

std::string ihdr(uint32_t width, uint32_t height, int bits, int colour_type, int interlace = 0) {
    std::string d;
    put_u32(d, width);
    put_u32(d, height);
    d += {char(bits), char(colour_type), 0, 0, char(interlace)};
    return chunk("IHDR", d);
}

const std::string kSignature = "\x89PNG\r\n\x1a\n";

// A PNG of `rows` (filter byte + row each) made by hand, with `before_idat` chunks after IHDR.
std::string hand_png(const std::string& header, const std::string& rows, const std::string& before_idat = "") {
    const std::vector<uint8_t> z = zlib_compress(reinterpret_cast<const uint8_t*>(rows.data()), rows.size());
    return kSignature + header + before_idat + chunk("IDAT", as_string(z)) + chunk("IEND", "");
}

TEST_CASE("image_file: PNGs of every colour type and bit depth, every filter", "[vit][image_file]") {
    struct Kind {
        const char* file;
        int bits, samples, channels;  // channels: of the Picture
    };
    const Kind kinds[] = {{"gray1.png", 1, 1, 1},  {"gray2.png", 2, 1, 1},       {"gray4.png", 4, 1, 1},
                          {"gray8.png", 8, 1, 1},  {"gray16.png", 16, 1, 1},     {"rgb8.png", 8, 3, 3},
                          {"rgb16.png", 16, 3, 3}, {"gray_alpha8.png", 8, 2, 2}, {"gray_alpha16.png", 16, 2, 2},
                          {"rgba8.png", 8, 4, 4},  {"rgba16.png", 16, 4, 4}};
    for (const Kind& k : kinds) {
        INFO(k.file);
        const Picture p = decode_png(fixture(k.file), k.file);
        REQUIRE(p.width == 7);
        REQUIRE(p.height == 5);
        REQUIRE(p.channels == k.channels);
        const int max = (1 << k.bits) - 1;
        for (int y = 0; y < 5; ++y)
            for (int x = 0; x < 7; ++x)
                for (int c = 0; c < k.samples; ++c) {
                    const int v = sample_value(x, y, c, k.bits);
                    const int expected = k.bits == 16 ? (v * 255 + 32767) / 65535 : v * 255 / max;
                    INFO("pixel (" << x << ", " << y << ") sample " << c);
                    CHECK(int(p.pixels[size_t((y * 7 + x) * k.channels + c)]) == expected);
                }
    }
}

TEST_CASE("image_file: palette PNGs become RGB, with tRNS RGBA", "[vit][image_file]") {
    for (int bits : {1, 2, 4, 8}) {
        const std::string file = "palette" + std::to_string(bits) + ".png";
        INFO(file);
        const Picture p = decode_png(fixture(file), file);
        REQUIRE(p.channels == 3);
        for (int y = 0; y < 5; ++y)
            for (int x = 0; x < 7; ++x) {
                const int i = sample_value(x, y, 0, bits);
                const uint8_t* px = p.pixels.data() + (y * 7 + x) * 3;
                CHECK(std::vector<int>{px[0], px[1], px[2]} == std::vector<int>{i * 5 % 256, 255 - i, i * 3 % 256});
            }
    }
    const Picture p = decode_png(fixture("palette8_trns.png"), "trns");
    REQUIRE(p.channels == 4);
    for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 7; ++x) {
            const int i = sample_value(x, y, 0, 8);
            CHECK(int(p.pixels[size_t((y * 7 + x) * 4 + 3)]) == (i < 10 ? i * 25 : 255));
        }
}

TEST_CASE("image_file: what encode_png writes reads back exactly, gray, RGB and RGBA", "[vit][image_file]") {
    Rng rng(11);
    for (int channels : {1, 3, 4})
        for (auto [w, h] : std::vector<std::pair<int, int>>{{1, 1}, {37, 23}, {64, 3}}) {
            INFO(w << "x" << h << "x" << channels);
            std::vector<uint8_t> pixels(size_t(w * h * channels));
            // Smooth with noise: the writer then picks different filters for different rows.
            for (size_t i = 0; i < pixels.size(); ++i)
                pixels[i] = static_cast<uint8_t>(i / 5 + (i % 7 == 0 ? rng.below(256) : 0));
            const Picture p = decode_png(as_string(encode_png(w, h, channels, pixels)), "written.png");
            CHECK(p.width == w);
            CHECK(p.height == h);
            CHECK(p.channels == channels);
            CHECK(p.pixels == pixels);
        }
}

TEST_CASE("image_file: every damaged or unsupported PNG names the file and the fault", "[vit][image_file][errors]") {
    const std::string good = fixture("rgb8.png");
    const std::string rows(1 + 3 * 2, '\0');  // one 2x1 RGB row, filter None
    require_error([&] { decode_png("GIF89a", "a.gif"); }, {"a.gif", "not a PNG file"});
    std::string bad_crc = good;
    bad_crc[kSignature.size() + 8 + 3] ^= 1;  // a byte of IHDR's width
    require_error([&] { decode_png(bad_crc, "x.png"); }, {"x.png", "chunk IHDR at byte 8", "bad CRC"});
    require_error([&] { decode_png(kSignature + chunk("IDAT", "") + ihdr(2, 1, 8, 2), "x.png"); },
                  {"first chunk must be IHDR"});
    require_error([&] { decode_png(hand_png(ihdr(2, 1, 16, 3), rows), "x.png"); }, {"colour type 3 with bit depth 16"});
    require_error([&] { decode_png(hand_png(ihdr(2, 1, 8, 2, 1), rows), "i.png"); }, {"i.png", "Adam7 interlaced"});
    require_error([&] { decode_png(hand_png(ihdr(100000, 100000, 8, 2), rows), "big.png"); },
                  {"big.png", "image too large: 100000x100000"});
    require_error([&] { decode_png(hand_png(ihdr(0, 1, 8, 2), rows), "x.png"); }, {"0x1 pixels"});
    require_error([&] { decode_png(hand_png(ihdr(2, 1, 8, 2), rows, chunk("ABCD", "")), "x.png"); },
                  {"unknown critical chunk ABCD"});
    CHECK(decode_png(hand_png(ihdr(2, 1, 8, 2), rows, chunk("abCD", "x")), "x.png").pixels.size() == 6);
    require_error([&] { decode_png(hand_png(ihdr(2, 1, 8, 2), std::string(1, '\5') + rows.substr(1)), "x.png"); },
                  {"row 0 has filter type 5"});
    require_error([&] { decode_png(hand_png(ihdr(2, 1, 8, 2), rows + rows), "x.png"); },
                  {"x.png: PNG image data (IDAT)", "decompresses to more than 7 bytes"});
    require_error([&] { decode_png(hand_png(ihdr(2, 2, 8, 2), rows), "x.png"); }, {"is 7 bytes", "needs 14"});
    require_error([&] { decode_png(hand_png(ihdr(2, 1, 8, 3), std::string(3, '\0')), "x.png"); },
                  {"palette image without a PLTE chunk"});
    require_error(
        [&] {
            decode_png(hand_png(ihdr(2, 1, 8, 3), {0, 0, 7}, chunk("PLTE", "abcdef")), "x.png");
        },
        {"pixel (1, 0) is palette entry 7, but PLTE has 2"});
    require_error([&] { decode_png(kSignature + ihdr(2, 1, 8, 2) + chunk("IEND", ""), "x.png"); }, {"no IDAT chunk"});
}

TEST_CASE("image_file: a PNG cut anywhere is refused, never read past", "[vit][image_file][errors]") {
    for (const char* file : {"rgb8.png", "palette2.png", "rgba16.png"}) {
        const std::string png = fixture(file);
        for (size_t n = 0; n < png.size(); ++n) {
            INFO(file << " cut to " << n << " bytes");
            require_error([&] { decode_png(png.substr(0, n), "cut.png"); }, {"cut.png"});
        }
    }
}

TEST_CASE("image_file: binary PPM and PGM, comments and maxval", "[vit][image_file][ppm]") {
    const Picture rgb = decode_ppm("P6\n# a comment\n2 1\n255\n\x01\x02\x03\xfa\xfb\xfc", "a.ppm");
    CHECK(rgb.width == 2);
    CHECK(rgb.height == 1);
    CHECK(rgb.channels == 3);
    CHECK(rgb.pixels == std::vector<uint8_t>{1, 2, 3, 250, 251, 252});
    const Picture gray = decode_picture(literal("P5 3 1 15 \x00\x0f\x07"), "g.pgm");
    CHECK(gray.channels == 1);
    CHECK(gray.pixels == std::vector<uint8_t>{0, 255, 119});  // 7 * 255 / 15 = 119
    require_error([] { decode_ppm("P6 2 1 65535\n", "w.ppm"); }, {"w.ppm", "maxval 65535 (16-bit samples)"});
    require_error([] { decode_ppm("P6 2 1 255\n\x01\x02", "t.ppm"); },
                  {"t.ppm", "truncated PPM", "needs 6 bytes", "has 2"});
    require_error([] { decode_ppm("P5 2 1 9\n\x01\x0a", "m.pgm"); }, {"sample 10", "above maxval 9"});
    require_error([] { decode_ppm("P6 2 x 255\n", "h.ppm"); }, {"height", "not a number"});
    require_error([] { decode_ppm("P6 99999999999 1 255\n", "h.ppm"); }, {"width", "too large"});
    const std::string ppm = "P6\n2 1\n255\n\x01\x02\x03\xfa\xfb\xfc";
    for (size_t n = 0; n < ppm.size(); ++n)
        require_error([&] { decode_ppm(ppm.substr(0, n), "cut.ppm"); }, {"cut.ppm"});
}

TEST_CASE("image_file: formats are told apart by their first bytes", "[vit][image_file][errors]") {
    CHECK(decode_picture(fixture("gray8.png"), "g").channels == 1);
    require_error([] { decode_picture("\xFF\xD8\xFF\xE0rest", "photo.jpg"); }, {"photo.jpg", "JPEG", "convert"});
    require_error([] { decode_picture("P3 1 1 255 0 0 0", "p.ppm"); }, {"plain-text PPM"});
    require_error([] { decode_picture("", "empty"); }, {"empty: not a PNG or binary PPM"});
    TempDir dir;
    require_error([&] { read_picture(dir.file("missing.png")); }, {"missing.png", "no such file"});
    write_bytes(dir.file("g.png"), fixture("gray8.png"));
    CHECK(read_picture(dir.file("g.png")).width == 7);
}

// A few thousand inputs a few mutations away from valid files, as they are and with their
// chunk CRCs made right, so that the mutations reach inflate and the filters
// (tests/fuzz/fuzz_png.cpp runs the same under libFuzzer).
TEST_CASE("image_file: fuzzed pictures decode or are refused naming the file, nothing else",
          "[vit][image_file][fuzz]") {
    const std::vector<std::string> seeds = {fixture("rgb8.png"), fixture("palette8_trns.png"), fixture("gray2.png"),
                                            fixture("rgba16.png"), "P6\n2 1\n255\n\x01\x02\x03\xfa\xfb\xfc"};
    for (bool fix_crcs : {false, true}) {
        INFO((fix_crcs ? "CRCs made right" : "as mutated"));
        const int64_t loaded =
            fuzz<std::invalid_argument>(seeds, 3000, 25, [fix_crcs](const std::string& bytes, const std::string& name) {
                decode_picture(fix_crcs ? with_correct_crcs(bytes) : bytes, name);
            });
        CHECK(loaded > 0);
        CHECK(loaded < 3000);
    }
}

TEST_CASE("image_file: to the model's input: alpha over white, gray to RGB, RGB to luma", "[vit][image_file]") {
    Picture p;
    p.width = 2;
    p.height = 1;
    p.channels = 4;
    p.pixels = {10, 20, 30, 255, 0, 0, 0, 0};  // opaque, and fully transparent black
    ImageSet set = picture_to_image_set(p, 3, 1, 2, "x");
    CHECK(set.pixels == std::vector<uint8_t>{10, 255, 20, 255, 30, 255});  // [C, H, W]
    CHECK(set.labels == std::vector<int64_t>{0});
    CHECK(set.class_names == std::vector<std::string>{"x"});

    p.channels = 2;
    p.pixels = {100, 255, 0, 128};  // gray + alpha: half-transparent black is mid gray
    set = picture_to_image_set(p, 3, 1, 2, "x");
    CHECK(set.pixels == std::vector<uint8_t>{100, 127, 100, 127, 100, 127});

    p.channels = 3;
    p.pixels = {255, 0, 0, 0, 0, 255};
    set = picture_to_image_set(p, 1, 1, 2, "x");
    CHECK(set.pixels == std::vector<uint8_t>{76, 29});  // ITU-R 601 luma of red and blue

    p.width = p.height = 64;
    p.pixels.assign(64 * 64 * 3, 77);
    set = picture_to_image_set(p, 3, 32, 32, "x");
    CHECK(set.pixels == std::vector<uint8_t>(3 * 32 * 32, 77));
    require_error([&] { picture_to_image_set(p, 2, 32, 32, "x"); }, {"2 channels"});
}

}  // namespace
}  // namespace patchgrad
