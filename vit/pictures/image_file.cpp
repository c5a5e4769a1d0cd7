// image_file.cpp — the PNG and PPM readers and the conversion to a model's input; the
// formats are in image_file.h.
#include "patchgrad/vit/pictures/image_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "patchgrad/autograd/check.h"
#include "patchgrad/autograd/io/files.h"
#include "patchgrad/datasets/image_ops.h"
#include "patchgrad/vit/pictures/inflate.h"
#include "patchgrad/vit/pictures/png.h"

namespace patchgrad {

namespace {

constexpr char kPngSignature[] = "\x89PNG\r\n\x1a\n";

std::string hex32(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", static_cast<unsigned>(v));
    return buf;
}

const uint8_t* bytes_at(const std::string& s, size_t at) { return reinterpret_cast<const uint8_t*>(s.data()) + at; }

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

void check_size(int64_t width, int64_t height, const std::string& name) {
    check(width > 0 && height > 0, name, ": the picture is ", width, "x", height, " pixels: both must be positive");
    check(width <= kMaxPictureSide && height <= kMaxPictureSide && width * height <= kMaxPicturePixels, name,
          ": image too large: ", width, "x", height, " pixels (at most ", kMaxPictureSide, " a side and ",
          kMaxPicturePixels, " in all)");
}

// IHDR's fields (PNG specification 11.2.2).
struct Header {
    int64_t width = 0, height = 0;
    int bit_depth = 0, colour_type = 0;
    int samples() const {
        return colour_type == 0 ? 1 : colour_type == 2 ? 3 : colour_type == 3 ? 1 : colour_type == 4 ? 2 : 4;
    }
    size_t row_bytes() const { return (size_t(width) * size_t(samples()) * size_t(bit_depth) + 7) / 8; }
    // The distance to the byte of the pixel to the left (at least 1 for sub-byte pixels).
    size_t filter_stride() const { return std::max<size_t>(1, size_t(samples()) * size_t(bit_depth) / 8); }
};

Header read_header(const uint8_t* d, size_t length, const std::string& name) {
    check(length == 13, name, ": PNG chunk IHDR has ", length, " bytes, not 13");
    Header h;
    h.width = be32(d);
    h.height = be32(d + 4);
    h.bit_depth = d[8];
    h.colour_type = d[9];
    check_size(h.width, h.height, name);
    const int b = h.bit_depth;
    const bool allowed = h.colour_type == 0   ? b == 1 || b == 2 || b == 4 || b == 8 || b == 16
                         : h.colour_type == 3 ? b == 1 || b == 2 || b == 4 || b == 8
                         : h.colour_type == 2 || h.colour_type == 4 || h.colour_type == 6 ? b == 8 || b == 16
                                                                                          : false;
    check(allowed, name, ": unsupported PNG: colour type ", h.colour_type, " with bit depth ", b,
          " is not a combination the PNG standard defines");
    check(d[10] == 0 && d[11] == 0, name, ": unsupported PNG: compression method ", int(d[10]), ", filter method ",
          int(d[11]), " (only 0 and 0 exist)");
    check(d[12] != 1, name,
          ": unsupported PNG: Adam7 interlaced; re-save the picture without interlacing (\"interlaced: no\")");
    check(d[12] == 0, name, ": unsupported PNG: interlace method ", int(d[12]), " (0 or 1 exist)");
    return h;
}

// Undoes the filters in place: raw holds height rows of (filter byte, row_bytes bytes); the
// result is the rows without their filter bytes.
std::vector<uint8_t> unfilter(const std::vector<uint8_t>& raw, const Header& h, const std::string& name) {
    const size_t row = h.row_bytes(), bpp = h.filter_stride(), height = size_t(h.height);
    std::vector<uint8_t> out(row * height);
    const std::vector<uint8_t> zeros(row, 0);  // the row "above" the first one
    for (size_t y = 0; y < height; ++y) {
        const uint8_t* in = raw.data() + y * (row + 1) + 1;
        const int filter = in[-1];
        check(filter <= 4, name, ": PNG row ", y, " has filter type ", filter, " (0-4 exist)");
        uint8_t* cur = out.data() + y * row;
        const uint8_t* up = y == 0 ? zeros.data() : cur - row;
        for (size_t i = 0; i < row; ++i) {
            const int a = i >= bpp ? cur[i - bpp] : 0, b = up[i], c = i >= bpp ? up[i - bpp] : 0;
            const int prediction = filter == 0   ? 0
                                   : filter == 1 ? a
                                   : filter == 2 ? b
                                   : filter == 3 ? (a + b) / 2
                                                 : paeth_predictor(a, b, c);
            cur[i] = static_cast<uint8_t>(in[i] + prediction);
        }
    }
    return out;
}

// Sample `index` of a row of `bits`-bit samples (packed from the most significant bit), as
// 0..255; palette indexes are returned as they are.
int sample(const uint8_t* row, size_t index, int bits, bool palette_index) {
    if (bits == 8) return row[index];
    if (bits == 16) return ((int(row[2 * index]) << 8 | row[2 * index + 1]) * 255 + 32767) / 65535;
    const size_t bit = index * size_t(bits);
    const int max = (1 << bits) - 1, v = (row[bit / 8] >> (8 - bits - int(bit % 8))) & max;
    return palette_index ? v : v * 255 / max;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Picture decode_png(const std::string& bytes, const std::string& name) {
    check(bytes.size() >= 8 && bytes.compare(0, 8, kPngSignature, 8) == 0, name,
          ": not a PNG file (it does not start with the PNG signature)");
    Header h;
    bool have_header = false, have_end = false;
    std::vector<uint8_t> palette, palette_alpha;  // [entries * 3] RGB, [up to entries] alpha
    std::vector<uint8_t> idat;                    // the IDAT chunks' data: one zlib stream
    for (size_t at = 8; !have_end;) {
        check(bytes.size() - at >= 8, name, ": truncated PNG: the file ends after ", bytes.size(),
              " bytes, before its IEND chunk");
        const uint32_t length = be32(bytes_at(bytes, at));
        const std::string type = bytes.substr(at + 4, 4);
        check(std::all_of(type.begin(), type.end(),
                          [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }),
              name, ": PNG chunk at byte ", at, " has a type that is not 4 letters (a damaged file)");
        check(length <= 0x7FFFFFFFu && bytes.size() - at - 8 >= uint64_t(length) + 4, name, ": truncated PNG: chunk ",
              type, " at byte ", at, " holds ", length, " bytes, but the file ends after ", bytes.size());
        const uint8_t* data = bytes_at(bytes, at + 8);
        const uint32_t stored = be32(data + length), computed = crc32(bytes_at(bytes, at + 4), size_t(length) + 4);
        if (stored != computed)
            fail(name, ": PNG chunk ", type, " at byte ", at, ": bad CRC (stored ", hex32(stored), ", computed ",
                 hex32(computed), "): the file is damaged");
        check(have_header == (type != "IHDR"), name, ": PNG chunk ", type, " at byte ", at,
              have_header ? ": a second IHDR" : ": the first chunk must be IHDR");
        if (type == "IHDR") {
            h = read_header(data, length, name);
            have_header = true;
        } else if (type == "PLTE") {
            check(length > 0 && length % 3 == 0 && length <= 3 * 256, name, ": PNG chunk PLTE has ", length,
                  " bytes: not 1 to 256 RGB entries");
            palette.assign(data, data + length);
        } else if (type == "tRNS") {
            // A palette's alpha per entry; the colour key of gray and RGB images is not applied.
            if (h.colour_type == 3) palette_alpha.assign(data, data + length);
        } else if (type == "IDAT") {
            idat.insert(idat.end(), data, data + length);
        } else if (type == "IEND") {
            have_end = true;
        } else {
            check(type[0] >= 'a', name, ": unsupported PNG: unknown critical chunk ", type, " at byte ", at);
        }
        at += 12 + size_t(length);
    }
    check(!idat.empty(), name, ": PNG has no IDAT chunk: no pixels");
    check(h.colour_type != 3 || !palette.empty(), name, ": PNG palette image without a PLTE chunk");

    const size_t expected = size_t(h.height) * (h.row_bytes() + 1);
    const std::vector<uint8_t> raw =
        zlib_decompress(idat.data(), idat.size(), expected, name + ": PNG image data (IDAT)");
    check(raw.size() == expected, name, ": PNG image data is ", raw.size(), " bytes, but a ", h.width, "x", h.height,
          " image of colour type ", h.colour_type, " and bit depth ", h.bit_depth, " needs ", expected);
    const std::vector<uint8_t> rows = unfilter(raw, h, name);

    Picture p;
    p.width = h.width;
    p.height = h.height;
    const bool indexed = h.colour_type == 3;
    p.channels = indexed ? (palette_alpha.empty() ? 3 : 4) : h.samples();
    p.pixels.resize(size_t(p.width * p.height * p.channels));
    const size_t entries = palette.size() / 3;
    for (int64_t y = 0; y < p.height; ++y) {
        const uint8_t* row = rows.data() + size_t(y) * h.row_bytes();
        for (int64_t x = 0; x < p.width; ++x) {
            uint8_t* px = p.pixels.data() + (y * p.width + x) * p.channels;
            if (!indexed) {
                for (int s = 0; s < h.samples(); ++s)
                    px[s] = static_cast<uint8_t>(
                        sample(row, size_t(x) * size_t(h.samples()) + size_t(s), h.bit_depth, false));
                continue;
            }
            const size_t index = size_t(sample(row, size_t(x), h.bit_depth, true));
            check(index < entries, name, ": PNG pixel (", x, ", ", y, ") is palette entry ", index, ", but PLTE has ",
                  entries);
            std::copy_n(palette.data() + 3 * index, 3, px);
            if (p.channels == 4) px[3] = index < palette_alpha.size() ? palette_alpha[index] : 255;
        }
    }
    return p;
}

Picture decode_ppm(const std::string& bytes, const std::string& name) {
    check(bytes.size() >= 2 && bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '6'), name,
          ": not a binary PPM (P6) or PGM (P5) file");
    size_t at = 2;
    // The next header number, after whitespace and '#' comments.
    auto number = [&](const char* field) {
        for (;;) {
            check(at < bytes.size(), name, ": truncated PPM header: the file ends before its ", field);
            if (is_space(bytes[at])) {
                ++at;
            } else if (bytes[at] == '#') {
                while (at < bytes.size() && bytes[at] != '\n') ++at;
            } else {
                break;
            }
        }
        check(is_digit(bytes[at]), name, ": PPM header: the ", field, " at byte ", at, " is not a number");
        int64_t v = 0;
        for (; at < bytes.size() && is_digit(bytes[at]); ++at) {
            v = 10 * v + (bytes[at] - '0');
            check(v <= kMaxPicturePixels, name, ": PPM header: the ", field, " at byte ", at, " is too large");
        }
        return v;
    };
    const int64_t width = number("width"), height = number("height"), maxval = number("maxval");
    check(at < bytes.size() && is_space(bytes[at]), name,
          ": PPM header: maxval must be followed by one whitespace byte, then the pixels");
    ++at;
    check(maxval <= 255, name, ": unsupported PPM: maxval ", maxval, " (16-bit samples); only maxval 1 to 255 is read");
    check(maxval >= 1, name, ": PPM header: maxval 0");
    check_size(width, height, name);
    Picture p;
    p.width = width;
    p.height = height;
    p.channels = bytes[1] == '6' ? 3 : 1;
    const size_t need = size_t(width * height * p.channels);
    check(bytes.size() - at >= need, name, ": truncated PPM: a ", width, "x", height, " picture needs ", need,
          " bytes of pixels, the file has ", bytes.size() - at, " after its header");
    p.pixels.resize(need);
    for (size_t i = 0; i < need; ++i) {
        const int v = static_cast<uint8_t>(bytes[at + i]);
        check(v <= maxval, name, ": PPM sample ", v, " at byte ", at + i, " is above maxval ", maxval);
        p.pixels[i] = static_cast<uint8_t>((v * 255 + maxval / 2) / maxval);
    }
    return p;
}

Picture decode_picture(const std::string& bytes, const std::string& name) {
    if (bytes.compare(0, 8, kPngSignature, 8) == 0) return decode_png(bytes, name);
    if (bytes.compare(0, 2, "P6") == 0 || bytes.compare(0, 2, "P5") == 0) return decode_ppm(bytes, name);
    check(bytes.compare(0, 3, "\xFF\xD8\xFF") != 0, name,
          ": is a JPEG, which patchgrad does not read: convert it to PNG first (e.g. 'convert photo.jpg photo.png')");
    check(bytes.compare(0, 2, "P3") != 0 && bytes.compare(0, 2, "P2") != 0, name,
          ": is a plain-text PPM/PGM (P3/P2): only the binary P6/P5 forms are read");
    fail(name, ": not a PNG or binary PPM (P6/P5) file");
}

Picture read_picture(const std::string& path) {
    const std::string not_regular = not_a_regular_file(path);
    check(not_regular.empty(), path, ": ", not_regular);
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    check(!ec, path, ": cannot read its size: ", ec ? ec.message() : "");
    check(size <= (uintmax_t(1) << 30), path, ": ", size, " bytes: too large for a picture (at most 1 GiB)");
    std::ifstream in(path, std::ios::binary);
    check(!in.fail(), path, ": cannot open it for reading");
    std::string bytes;
    try {
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::ios_base::failure& e) {  // a read error (/proc/self/mem: EIO) thrown by the buffer
        fail(path, ": reading it failed: ", e.code().message());
    }
    check(!in.bad(), path, ": reading it failed");
    return decode_picture(bytes, path);
}

ImageSet picture_to_image_set(const Picture& picture, int64_t channels, int64_t height, int64_t width,
                              const std::string& class_name) {
    check(channels == 1 || channels == 3, "picture_to_image_set: a model of ", channels,
          " channels; pictures become 1 (gray) or 3 (RGB)");
    check(picture.channels >= 1 && picture.channels <= 4 &&
              picture.pixels.size() == size_t(picture.width * picture.height * picture.channels),
          "picture_to_image_set: ", picture.pixels.size(), " bytes for a ", picture.width, "x", picture.height,
          " picture of ", picture.channels, " channels (1-4)");
    const int64_t plane = picture.width * picture.height;
    const bool alpha = picture.channels % 2 == 0;  // gray + alpha, RGBA
    const int64_t colours = picture.channels - (alpha ? 1 : 0);
    std::vector<uint8_t> rgb(size_t(3 * plane));  // [3, H, W]
    for (int64_t i = 0; i < plane; ++i) {
        const uint8_t* px = picture.pixels.data() + i * picture.channels;
        const int a = alpha ? px[picture.channels - 1] : 255;
        for (int64_t c = 0; c < 3; ++c)  // over white: v a + 255 (1 - a), rounded
            rgb[size_t(c * plane + i)] =
                static_cast<uint8_t>((px[colours == 1 ? 0 : c] * a + 255 * (255 - a) + 127) / 255);
    }
    ImageView source{rgb.data(), 3, picture.height, picture.width};
    if (channels == 1) {
        color(source, 0);  // every plane becomes the luma; the first one is the gray picture
        source.channels = 1;
    }
    ImageSet set;
    set.channels = channels;
    set.height = height;
    set.width = width;
    set.pixels.resize(size_t(channels * height * width));
    set.labels = {0};
    set.class_names = {class_name};
    resize_center_crop(source, set.view(0));
    return set;
}

}  // namespace patchgrad
