// canvas.h — drawing into RGB images: pixels, rectangles, lines, circles, text in a built-in
// bitmap font, colour maps, heatmaps with a colour bar, and side-by-side composition. It is
// what the training curves (chart.h) and `patchgrad inspect`'s pictures (patch grids,
// attention maps, position-embedding similarity) are drawn with; save() writes a PNG.
//
// Coordinates are pixels, x to the right and y down from the top-left corner. Every drawing
// call clips: whatever falls outside the image is skipped, so a label or a thick line near
// the border never writes out of bounds.
//
// The font is 5 pixels wide and 8 tall per glyph: capitals and digits in rows 0-6 (baseline
// at row 6), row 7 for the descenders of g, j, p, q, y and the comma. It covers printable
// ASCII (32-126), is proportional (an 'i' is narrower than an 'm'; digits are 5 wide except
// '1'), and leaves one column between glyphs. Any other byte is drawn as a hollow box.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace patchgrad {

struct Rgb {
    uint8_t r = 0, g = 0, b = 0;
    friend bool operator==(Rgb a, Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }
    friend bool operator!=(Rgb a, Rgb b) { return !(a == b); }
};

inline constexpr Rgb kBlack{0, 0, 0};
inline constexpr Rgb kWhite{255, 255, 255};

// rgb: [height, width, 3] bytes, row-major, top row first — what write_png takes with 3 channels.
struct Image {
    int width = 0, height = 0;
    std::vector<uint8_t> rgb;
};

// A width x height image filled with `fill`. Throws std::invalid_argument unless both are positive.
Image make_image(int width, int height, Rgb fill = kWhite);

// Writes outside the image are ignored (drawing clips). Reading outside it throws
// std::invalid_argument naming the point and the image size.
void set_pixel(Image& image, int x, int y, Rgb colour);
Rgb get_pixel(const Image& image, int x, int y);

// The width x height rectangle whose top-left pixel is (x, y); nothing if width or height <= 0.
void fill_rect(Image& image, int x, int y, int width, int height, Rgb colour);
// Its outline, `thickness` pixels wide, drawn inside the rectangle.
void draw_rect(Image& image, int x, int y, int width, int height, Rgb colour, int thickness = 1);
// Bresenham's line from (x0, y0) to (x1, y1), both ends included; a thickness t > 1 stamps a
// t x t square at every point of the line.
void draw_line(Image& image, int x0, int y0, int x1, int y1, Rgb colour, int thickness = 1);
// Every pixel whose centre is within `radius` of (cx, cy); radius 0 is the single pixel.
void fill_circle(Image& image, int cx, int cy, int radius, Rgb colour);
// Copies `source` with its top-left corner at (x, y), every pixel enlarged to a scale x scale
// block (nearest neighbour), e.g. a 32x32 CIFAR image at scale 8 for a patch grid.
void blit(Image& target, const Image& source, int x, int y, int scale = 1);

// `image` on a border `margin` pixels wide: the frame around a finished picture.
Image pad(const Image& image, int margin, Rgb fill = kWhite);

// The size of `text` drawn at `scale` (each font pixel a scale x scale block): text_width is
// the sum of the glyph widths and the one-column gaps between them; text_height is the full
// 8-row cell, descenders included, for any text.
int text_width(const std::string& text, int scale = 1);
int text_height(int scale = 1);
// Draws `text` in the text_width x text_height box whose top-left corner is (x, y). Only the
// glyphs' pixels are set: the background shows through.
void draw_text(Image& image, int x, int y, const std::string& text, Rgb colour, int scale = 1);
// The same text turned 90 degrees counter-clockwise (reading upwards, as a y-axis label), in
// the text_height x text_width box whose top-left corner is (x, y).
void draw_text_vertical(Image& image, int x, int y, const std::string& text, Rgb colour, int scale = 1);
// `text` alone on a `background` image of exactly its size, to compose with hconcat/vconcat.
// An empty text gives a 1 x text_height image.
Image text_image(const std::string& text, Rgb colour = kBlack, int scale = 1, Rgb background = kWhite);

// Viridis (matplotlib's default: perceptually uniform, dark blue -> yellow, lightness rising
// throughout; for values such as attention weights) and a blue-white-red diverging map
// (ColorBrewer's RdBu reversed: for signed values such as cosine similarity, white at 0.5).
enum class Colormap { Viridis, Diverging };
// The colour at t in [0, 1], interpolated linearly between the map's anchor colours; t is
// clamped to [0, 1]. NaN gives kNanColour, which neither map contains.
Rgb colormap(Colormap map, double t);
inline constexpr Rgb kNanColour{255, 0, 255};

// values [rows, cols] row-major -> an image [rows * cell, cols * cell]: value v fills a
// cell x cell block with colormap((v - low) / (high - low)). low == high draws every finite
// value at t = 0.5. Throws std::invalid_argument for non-positive sizes, a values.size() other
// than rows * cols, non-finite bounds or low > high.
Image heatmap(const std::vector<double>& values, int rows, int cols, int cell, double low, double high,
              Colormap map = Colormap::Viridis);
// A vertical colour bar of `bar_width` x `bar_height` pixels (high at the top), outlined,
// with tick labels for high, the midpoint and low to its right, on white. The image is
// text_height(scale) taller than the bar, centred on it, so hconcat with a heatmap of height
// bar_height lines the bar up with the heatmap.
Image colorbar(Colormap map, double low, double high, int bar_height, int bar_width = 12, int scale = 1);

// Images side by side (hconcat) or stacked (vconcat), `gap` pixels apart, each centred
// across the other axis on a `background` canvas. grid() lays them out `columns` per row in
// cells of the largest width and height. Each throws std::invalid_argument for no images or
// a negative gap.
Image hconcat(const std::vector<Image>& images, int gap = 0, Rgb background = kWhite);
Image vconcat(const std::vector<Image>& images, int gap = 0, Rgb background = kWhite);
Image grid(const std::vector<Image>& images, int columns, int gap = 0, Rgb background = kWhite);

// write_png(path, width, height, 3, rgb): atomic, std::runtime_error on I/O failure.
void save(const Image& image, const std::string& path);

}  // namespace patchgrad
