// canvas.cpp — pixels, shapes, the bitmap font, colour maps and composition; see canvas.h.
#include "patchgrad/vit/pictures/canvas.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

#include "patchgrad/autograd/check.h"
#include "patchgrad/vit/pictures/png.h"

namespace patchgrad {

namespace {

constexpr int kGlyphRows = 8;
constexpr int kSpaceWidth = 3;  // a space is 3 empty columns, plus the gap after every glyph

// kFont[c - 32] is printable ASCII character c: 8 rows, top first, of 5 bits each, bit 4 the
// leftmost column. Rows 0-6 hold capitals and digits (baseline at row 6), row 7 descenders.
constexpr uint8_t kFont[95][kGlyphRows] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // ' '
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04, 0x00},  // '!'
    {0x0A, 0x0A, 0x0A, 0x00, 0x00, 0x00, 0x00, 0x00},  // '"'
    {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A, 0x00},  // '#'
    {0x04, 0x0F, 0x14, 0x0E, 0x05, 0x1E, 0x04, 0x00},  // '$'
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03, 0x00},  // '%'
    {0x0C, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0D, 0x00},  // '&'
    {0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00},  // "'"
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02, 0x00},  // '('
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08, 0x00},  // ')'
    {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00, 0x00},  // '*'
    {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00, 0x00},  // '+'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08},  // ','
    {0x00, 0x00, 0x00, 0x1E, 0x00, 0x00, 0x00, 0x00},  // '-'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C, 0x00},  // '.'
    {0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10, 0x00},  // '/'
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E, 0x00},  // '0'
    {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E, 0x00},  // '1'
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F, 0x00},  // '2'
    {0x0E, 0x11, 0x01, 0x06, 0x01, 0x11, 0x0E, 0x00},  // '3'
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02, 0x00},  // '4'
    {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E, 0x00},  // '5'
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E, 0x00},  // '6'
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08, 0x00},  // '7'
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E, 0x00},  // '8'
    {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C, 0x00},  // '9'
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00, 0x00},  // ':'
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x04, 0x08},  // ';'
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02, 0x00},  // '<'
    {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00, 0x00},  // '='
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08, 0x00},  // '>'
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04, 0x00},  // '?'
    {0x0E, 0x11, 0x17, 0x15, 0x17, 0x10, 0x0E, 0x00},  // '@'
    {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11, 0x00},  // 'A'
    {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E, 0x00},  // 'B'
    {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E, 0x00},  // 'C'
    {0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E, 0x00},  // 'D'
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F, 0x00},  // 'E'
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10, 0x00},  // 'F'
    {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F, 0x00},  // 'G'
    {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11, 0x00},  // 'H'
    {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E, 0x00},  // 'I'
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C, 0x00},  // 'J'
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11, 0x00},  // 'K'
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F, 0x00},  // 'L'
    {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11, 0x00},  // 'M'
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11, 0x00},  // 'N'
    {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E, 0x00},  // 'O'
    {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10, 0x00},  // 'P'
    {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D, 0x00},  // 'Q'
    {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11, 0x00},  // 'R'
    {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E, 0x00},  // 'S'
    {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x00},  // 'T'
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E, 0x00},  // 'U'
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04, 0x00},  // 'V'
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A, 0x00},  // 'W'
    {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11, 0x00},  // 'X'
    {0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04, 0x00},  // 'Y'
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F, 0x00},  // 'Z'
    {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E, 0x00},  // '['
    {0x10, 0x10, 0x08, 0x04, 0x02, 0x01, 0x01, 0x00},  // backslash
    {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E, 0x00},  // ']'
    {0x04, 0x0A, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00},  // '^'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F},  // '_'
    {0x08, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // '`'
    {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F, 0x00},  // 'a'
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E, 0x00},  // 'b'
    {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E, 0x00},  // 'c'
    {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F, 0x00},  // 'd'
    {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E, 0x00},  // 'e'
    {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08, 0x00},  // 'f'
    {0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // 'g'
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11, 0x00},  // 'h'
    {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E, 0x00},  // 'i'
    {0x02, 0x00, 0x06, 0x02, 0x02, 0x02, 0x12, 0x0C},  // 'j'
    {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12, 0x00},  // 'k'
    {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E, 0x00},  // 'l'
    {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11, 0x00},  // 'm'
    {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11, 0x00},  // 'n'
    {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E, 0x00},  // 'o'
    {0x00, 0x00, 0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10},  // 'p'
    {0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x01},  // 'q'
    {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10, 0x00},  // 'r'
    {0x00, 0x00, 0x0F, 0x10, 0x0E, 0x01, 0x1E, 0x00},  // 's'
    {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06, 0x00},  // 't'
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D, 0x00},  // 'u'
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04, 0x00},  // 'v'
    {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A, 0x00},  // 'w'
    {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x00},  // 'x'
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // 'y'
    {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F, 0x00},  // 'z'
    {0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02, 0x00},  // '{'
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x00},  // '|'
    {0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08, 0x00},  // '}'
    {0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00, 0x00},  // '~'
};
// What any byte outside 32-126 is drawn as.
constexpr uint8_t kBox[kGlyphRows] = {0x1F, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1F, 0x00};

// matplotlib's viridis (_cm_listed.py, 256 entries) sampled at t = k / 32, k = 0..32; linear
// interpolation between these anchors stays within 2/255 of the full table.
constexpr Rgb kViridis[] = {
    {68, 1, 84},    {71, 13, 96},   {72, 24, 106},  {72, 35, 116},  {71, 45, 123},  {69, 54, 129},  {66, 64, 134},
    {63, 73, 137},  {59, 82, 139},  {55, 90, 141},  {51, 99, 141},  {47, 106, 142}, {44, 114, 142}, {41, 122, 142},
    {38, 129, 142}, {35, 137, 142}, {33, 144, 140}, {31, 152, 139}, {31, 159, 136}, {33, 166, 133}, {40, 174, 128},
    {49, 181, 123}, {62, 188, 116}, {76, 194, 108}, {93, 201, 99},  {110, 206, 88}, {130, 211, 76}, {150, 216, 63},
    {171, 220, 50}, {192, 223, 36}, {213, 226, 26}, {234, 229, 26}, {253, 231, 37},
};
// ColorBrewer's 11-class RdBu, reversed so that low values are blue: #053061 ... #f7f7f7 ... #67001f.
constexpr Rgb kDiverging[] = {
    {5, 48, 97},     {33, 102, 172},  {67, 147, 195}, {146, 197, 222}, {209, 229, 240}, {247, 247, 247},
    {253, 219, 199}, {244, 165, 130}, {214, 96, 77},  {178, 24, 43},   {103, 0, 31},
};

// Drawing calls accept any image whose buffer matches its size (an empty 0 x 0 one too), so a
// hand-built Image with a wrong buffer is an error here rather than an out-of-bounds write.
void check_image(const Image& image, const char* where) {
    check(image.width >= 0 && image.height >= 0 &&
              image.rgb.size() == static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3,
          where, ": image ", image.width, "x", image.height, " needs ",
          std::max<int64_t>(0, image.width) * std::max<int64_t>(0, image.height) * 3, " RGB bytes, has ",
          image.rgb.size());
}

void check_positive(int value, const char* where, const char* what) {
    check(value > 0, where, ": ", what, " must be positive, got ", value);
}

// set_pixel without the image check: the inner loop of every drawing call.
void plot(Image& image, int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= image.width || y >= image.height) return;
    uint8_t* p = &image.rgb[(static_cast<size_t>(y) * static_cast<size_t>(image.width) + static_cast<size_t>(x)) * 3];
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
}

// fill_rect without the image check, clipped to the image.
void fill(Image& image, int x, int y, int width, int height, Rgb c) {
    const int64_t x0 = std::max<int64_t>(x, 0), y0 = std::max<int64_t>(y, 0);
    const int64_t x1 = std::min<int64_t>(int64_t(x) + width, image.width);
    const int64_t y1 = std::min<int64_t>(int64_t(y) + height, image.height);
    for (int64_t yy = y0; yy < y1; ++yy)
        for (int64_t xx = x0; xx < x1; ++xx) plot(image, static_cast<int>(xx), static_cast<int>(yy), c);
}

// A glyph's ink is in columns [first, first + width) of its 5; a blank glyph is a space.
struct Glyph {
    const uint8_t* rows;
    int first, width;
};

Glyph glyph(unsigned char c) {
    const uint8_t* rows = (c >= 32 && c <= 126) ? kFont[c - 32] : kBox;
    int used = 0;
    for (int r = 0; r < kGlyphRows; ++r) used |= rows[r];
    if (used == 0) return {rows, 0, kSpaceWidth};
    int first = 0, last = 4;
    while (!(used >> (4 - first) & 1)) ++first;
    while (!(used >> (4 - last) & 1)) --last;
    return {rows, first, last - first + 1};
}

// Calls put(u, v) for every ink pixel of `text` at `scale`, u along the text, v down from its top.
template <class Put>
void render_text(const std::string& text, int scale, Put put) {
    int u = 0;
    for (unsigned char c : text) {
        const Glyph g = glyph(c);
        for (int row = 0; row < kGlyphRows; ++row)
            for (int col = 0; col < g.width; ++col)
                if (g.rows[row] >> (4 - g.first - col) & 1)
                    for (int dv = 0; dv < scale; ++dv)
                        for (int du = 0; du < scale; ++du) put(u + col * scale + du, row * scale + dv);
        u += (g.width + 1) * scale;
    }
}

// Three significant digits: colour-bar labels such as "-1", "0.5", "0.0123", "1.2e+03".
std::string format_label(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

}  // namespace

Image make_image(int width, int height, Rgb fill_colour) {
    check(width > 0 && height > 0, "make_image: width and height must be positive, got ", width, "x", height);
    Image image{width, height, {}};
    image.rgb.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
    for (size_t i = 0; i < image.rgb.size(); i += 3) {
        image.rgb[i] = fill_colour.r;
        image.rgb[i + 1] = fill_colour.g;
        image.rgb[i + 2] = fill_colour.b;
    }
    return image;
}

void set_pixel(Image& image, int x, int y, Rgb colour) {
    check_image(image, "set_pixel");
    plot(image, x, y, colour);
}

Rgb get_pixel(const Image& image, int x, int y) {
    check_image(image, "get_pixel");
    check(x >= 0 && y >= 0 && x < image.width && y < image.height, "get_pixel: (", x, ", ", y, ") is outside the ",
          image.width, "x", image.height, " image");
    const uint8_t* p =
        &image.rgb[(static_cast<size_t>(y) * static_cast<size_t>(image.width) + static_cast<size_t>(x)) * 3];
    return {p[0], p[1], p[2]};
}

void fill_rect(Image& image, int x, int y, int width, int height, Rgb colour) {
    check_image(image, "fill_rect");
    fill(image, x, y, width, height, colour);
}

void draw_rect(Image& image, int x, int y, int width, int height, Rgb colour, int thickness) {
    check_image(image, "draw_rect");
    check_positive(thickness, "draw_rect", "thickness");
    if (width <= 0 || height <= 0) return;
    const int t = std::min({thickness, width, height});
    fill(image, x, y, width, t, colour);               // top
    fill(image, x, y + height - t, width, t, colour);  // bottom
    fill(image, x, y, t, height, colour);              // left
    fill(image, x + width - t, y, t, height, colour);  // right
}

void draw_line(Image& image, int x0, int y0, int x1, int y1, Rgb colour, int thickness) {
    check_image(image, "draw_line");
    check_positive(thickness, "draw_line", "thickness");
    // 64-bit error terms: the differences of two ints can overflow an int.
    const int64_t dx = std::llabs(int64_t(x1) - x0), dy = -std::llabs(int64_t(y1) - y0);
    const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    const int offset = (thickness - 1) / 2;
    int64_t err = dx + dy;
    int x = x0, y = y0;
    for (;;) {
        if (thickness == 1)
            plot(image, x, y, colour);
        else
            fill(image, x - offset, y - offset, thickness, thickness, colour);
        if (x == x1 && y == y1) break;
        const int64_t e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y += sy;
        }
    }
}

void fill_circle(Image& image, int cx, int cy, int radius, Rgb colour) {
    check_image(image, "fill_circle");
    check(radius >= 0, "fill_circle: radius must be >= 0, got ", radius);
    // d^2 <= r^2 + r, about (r + 1/2)^2: a round disc without single-pixel bumps at its four ends.
    const int64_t limit = int64_t(radius) * radius + radius;
    for (int dy = -radius; dy <= radius; ++dy)
        for (int dx = -radius; dx <= radius; ++dx)
            if (int64_t(dx) * dx + int64_t(dy) * dy <= limit) plot(image, cx + dx, cy + dy, colour);
}

void blit(Image& target, const Image& source, int x, int y, int scale) {
    check_image(target, "blit");
    check_image(source, "blit");
    check_positive(scale, "blit", "scale");
    for (int sy = 0; sy < source.height; ++sy)
        for (int sx = 0; sx < source.width; ++sx) {
            const uint8_t* p =
                &source
                     .rgb[(static_cast<size_t>(sy) * static_cast<size_t>(source.width) + static_cast<size_t>(sx)) * 3];
            fill(target, x + sx * scale, y + sy * scale, scale, scale, {p[0], p[1], p[2]});
        }
}

Image pad(const Image& image, int margin, Rgb fill) {
    check_image(image, "pad");
    check(margin >= 0, "pad: margin must be >= 0, got ", margin);
    Image out = make_image(image.width + 2 * margin, image.height + 2 * margin, fill);
    blit(out, image, margin, margin);
    return out;
}

int text_width(const std::string& text, int scale) {
    check_positive(scale, "text_width", "scale");
    if (text.empty()) return 0;
    int columns = -1;  // no gap after the last glyph
    for (unsigned char c : text) columns += glyph(c).width + 1;
    return columns * scale;
}

int text_height(int scale) {
    check_positive(scale, "text_height", "scale");
    return kGlyphRows * scale;
}

void draw_text(Image& image, int x, int y, const std::string& text, Rgb colour, int scale) {
    check_image(image, "draw_text");
    check_positive(scale, "draw_text", "scale");
    render_text(text, scale, [&](int u, int v) { plot(image, x + u, y + v, colour); });
}

void draw_text_vertical(Image& image, int x, int y, const std::string& text, Rgb colour, int scale) {
    check_image(image, "draw_text_vertical");
    const int length = text_width(text, scale);
    // Turning counter-clockwise sends the start of the text to the bottom, the top of the glyphs to the left.
    render_text(text, scale, [&](int u, int v) { plot(image, x + v, y + length - 1 - u, colour); });
}

Image text_image(const std::string& text, Rgb colour, int scale, Rgb background) {
    Image image = make_image(std::max(1, text_width(text, scale)), text_height(scale), background);
    draw_text(image, 0, 0, text, colour, scale);
    return image;
}

Rgb colormap(Colormap map, double t) {
    check(map == Colormap::Viridis || map == Colormap::Diverging, "colormap: unknown map ", static_cast<int>(map));
    const Rgb* table = map == Colormap::Viridis ? kViridis : kDiverging;
    const int n = static_cast<int>(map == Colormap::Viridis ? std::size(kViridis) : std::size(kDiverging));
    if (std::isnan(t)) return kNanColour;
    const double x = std::clamp(t, 0.0, 1.0) * (n - 1);
    const int i = std::min(static_cast<int>(x), n - 2);
    const double f = x - i;
    auto mix = [f](uint8_t a, uint8_t b) { return static_cast<uint8_t>(std::lround(a + (b - a) * f)); };
    return {mix(table[i].r, table[i + 1].r), mix(table[i].g, table[i + 1].g), mix(table[i].b, table[i + 1].b)};
}

Image heatmap(const std::vector<double>& values, int rows, int cols, int cell, double low, double high, Colormap map) {
    check_positive(rows, "heatmap", "rows");
    check_positive(cols, "heatmap", "cols");
    check_positive(cell, "heatmap", "cell size");
    check(values.size() == static_cast<size_t>(rows) * static_cast<size_t>(cols), "heatmap: a ", rows, "x", cols,
          " grid needs ", int64_t(rows) * cols, " values, got ", values.size());
    if (!std::isfinite(low) || !std::isfinite(high) || low > high)
        fail("heatmap: value range [", format_label(low), ", ", format_label(high),
             "] must be finite with low <= high");
    Image image = make_image(cols * cell, rows * cell);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const double v = values[static_cast<size_t>(r) * static_cast<size_t>(cols) + static_cast<size_t>(c)];
            const double t = high > low ? (v - low) / (high - low) : std::isnan(v) ? v : 0.5;
            fill(image, c * cell, r * cell, cell, cell, colormap(map, t));
        }
    return image;
}

Image colorbar(Colormap map, double low, double high, int bar_height, int bar_width, int scale) {
    check_positive(bar_height, "colorbar", "bar height");
    check_positive(bar_width, "colorbar", "bar width");
    if (!std::isfinite(low) || !std::isfinite(high) || low > high)
        fail("colorbar: value range [", format_label(low), ", ", format_label(high),
             "] must be finite with low <= high");
    const std::string labels[3] = {format_label(high), format_label(0.5 * (low + high)), format_label(low)};
    const int tick = 3 * scale, label_gap = 2 * scale, text_h = text_height(scale);
    int label_w = 0;
    for (const std::string& l : labels) label_w = std::max(label_w, text_width(l, scale));
    Image image = make_image(bar_width + tick + label_gap + label_w, bar_height + text_h);
    const int top = text_h / 2;  // room for half a label above the top tick and below the bottom one
    for (int row = 0; row < bar_height; ++row) {
        const double t = bar_height == 1 ? 1.0 : 1.0 - double(row) / (bar_height - 1);
        fill(image, 0, top + row, bar_width, 1, colormap(map, t));
    }
    draw_rect(image, 0, top, bar_width, bar_height, kBlack);
    const int tick_rows[3] = {top, top + (bar_height - 1) / 2, top + bar_height - 1};
    for (int k = 0; k < 3; ++k) {
        fill(image, bar_width, tick_rows[k], tick, 1, kBlack);
        // Capitals and digits occupy rows 0-6 of the glyph cell: centre those on the tick.
        draw_text(image, bar_width + tick + label_gap, tick_rows[k] - 3 * scale, labels[k], kBlack, scale);
    }
    return image;
}

Image hconcat(const std::vector<Image>& images, int gap, Rgb background) {
    if (images.empty()) throw std::invalid_argument("hconcat: no images");
    check(gap >= 0, "hconcat: gap must be >= 0, got ", gap);
    int width = gap * (static_cast<int>(images.size()) - 1), height = 0;
    for (const Image& im : images) {
        check_image(im, "hconcat");
        width += im.width;
        height = std::max(height, im.height);
    }
    Image out = make_image(width, height, background);
    int x = 0;
    for (const Image& im : images) {
        blit(out, im, x, (height - im.height) / 2);
        x += im.width + gap;
    }
    return out;
}

Image vconcat(const std::vector<Image>& images, int gap, Rgb background) {
    if (images.empty()) throw std::invalid_argument("vconcat: no images");
    check(gap >= 0, "vconcat: gap must be >= 0, got ", gap);
    int width = 0, height = gap * (static_cast<int>(images.size()) - 1);
    for (const Image& im : images) {
        check_image(im, "vconcat");
        width = std::max(width, im.width);
        height += im.height;
    }
    Image out = make_image(width, height, background);
    int y = 0;
    for (const Image& im : images) {
        blit(out, im, (width - im.width) / 2, y);
        y += im.height + gap;
    }
    return out;
}

Image grid(const std::vector<Image>& images, int columns, int gap, Rgb background) {
    if (images.empty()) throw std::invalid_argument("grid: no images");
    check_positive(columns, "grid", "columns");
    check(gap >= 0, "grid: gap must be >= 0, got ", gap);
    int cell_w = 0, cell_h = 0;
    for (const Image& im : images) {
        check_image(im, "grid");
        cell_w = std::max(cell_w, im.width);
        cell_h = std::max(cell_h, im.height);
    }
    const int n = static_cast<int>(images.size());
    const int cols = std::min(columns, n), rows = (n + columns - 1) / columns;
    Image out = make_image(cols * cell_w + (cols - 1) * gap, rows * cell_h + (rows - 1) * gap, background);
    for (int i = 0; i < n; ++i) {
        const Image& im = images[static_cast<size_t>(i)];
        blit(out, im, (i % columns) * (cell_w + gap) + (cell_w - im.width) / 2,
             (i / columns) * (cell_h + gap) + (cell_h - im.height) / 2);
    }
    return out;
}

void save(const Image& image, const std::string& path) {
    check_image(image, "save");
    write_png(path, image.width, image.height, 3, image.rgb);
}

}  // namespace patchgrad
