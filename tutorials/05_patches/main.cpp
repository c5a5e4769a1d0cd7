// Chapter 5, "From an image to patches": cuts images into P x P patches with unfold and the
// Patcher, checks the index arithmetic, shows that a convolution is unfold + matmul, cuts a
// non-square image, shows unfold's backward (fold: a scatter-add), prints ViTs Explained's
// transpose(1,0) and the (p1 p2 c) order of Visual Transformer in CV and the ViT notebook
// next to the right ones, and draws the patch grid of a synthetic image (patches.png in
// --out DIR).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/vit/patcher.h"
#include "patchgrad/vit/pictures/canvas.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;

namespace {

// A 2-D tensor [rows, cols] as rows of numbers, each `width` characters wide.
void print_matrix(const Tensor& m, int width = 4) {
    for (int64_t r = 0; r < m.size(0); ++r) {
        std::string line = " ";
        for (int64_t c = 0; c < m.size(1); ++c) {
            char cell[256];
            std::snprintf(cell, sizeof cell, "%*g", width, double(m.at({r, c})));
            line += cell;
        }
        std::cout << line << "\n";
    }
}

// torch.nn.Conv2d(C, D, kernel_size=k, stride=s) without padding, as the textbook loop:
// x [B, C, H, W], weight [D, C, k, k], bias [D] -> [B, D, OH, OW].
// [snippet:conv2d-loops]
Tensor conv2d_loops(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t k, int64_t s) {
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), D = weight.size(0);
    const int64_t OH = (H - k) / s + 1, OW = (W - k) / s + 1;
    Tensor out = Tensor::zeros({B, D, OH, OW});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t d = 0; d < D; ++d)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    real acc = bias.at({d});
                    for (int64_t c = 0; c < C; ++c)
                        for (int64_t i = 0; i < k; ++i)
                            for (int64_t j = 0; j < k; ++j)
                                acc += weight.at({d, c, i, j}) * x.at({b, c, oh * s + i, ow * s + j});
                    out.at({b, d, oh, ow}) = acc;
                }
    return out;
}
// [/snippet:conv2d-loops]

// The same convolution as unfold + one matrix product: every column of unfold(x) is one
// window, every row of W [D, C*k*k] one filter, so W @ unfold(x) holds every filter's dot
// product with every window. The "fold" back to an image is only a reshape here, because
// the L = OH*OW windows are in row-major order.
// [snippet:conv2d-unfold]
Tensor conv2d_unfold(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t k, int64_t s) {
    const int64_t B = x.size(0), D = weight.size(0);
    const int64_t OH = (x.size(2) - k) / s + 1, OW = (x.size(3) - k) / s + 1;
    Tensor columns = unfold(x, k, k, s, s);                       // [B, C*k*k, L]
    Tensor filters = reshape(weight, {D, -1});                    // [D, C*k*k]
    Tensor y = matmul(filters, columns) + reshape(bias, {D, 1});  // [B, D, L]
    return reshape(y, {B, D, OH, OW});                            // fold: L -> (OH, OW)
}
// [/snippet:conv2d-unfold]

using tutorial::max_abs_difference;

// A synthetic C x H x W picture with values in [0, 1]: a sky-to-ground gradient, a sun and
// a diagonal stripe, so that every patch looks different.
Tensor synthetic_image(int64_t H, int64_t W) {
    Tensor img = Tensor::zeros({1, 3, H, W});
    for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
            const double t = double(y) / double(H - 1);
            double r = 0.25 + 0.5 * t, g = 0.45 + 0.3 * t, b = 0.95 - 0.6 * t;
            const double dx = double(x) - 0.7 * double(W), dy = double(y) - 0.3 * double(H);
            if (dx * dx + dy * dy < 0.04 * double(H * H)) r = 1.0, g = 0.8, b = 0.2;       // the sun
            if (std::abs(double(x) - 1.2 * double(y)) < 2.5) r = 0.15, g = 0.15, b = 0.3;  // a stripe
            img.at({0, 0, y, x}) = real(r), img.at({0, 1, y, x}) = real(g), img.at({0, 2, y, x}) = real(b);
        }
    return img;
}

Rgb pixel_colour(real r, real g, real b) {
    auto byte = [](real v) { return static_cast<uint8_t>(std::lround(std::min<real>(1, std::max<real>(0, v)) * 255)); };
    return Rgb{byte(r), byte(g), byte(b)};
}

// patches.png: left, the image enlarged with the patch grid drawn on it; right, the rows of
// the Patcher's output [N, 3*P*P] turned back into P x P tiles, in sequence order.
Image patch_picture(const Tensor& image, const Tensor& patches, int64_t P) {
    const int64_t H = image.size(2), W = image.size(3), wide = W / P, N = patches.size(1);
    const int scale = 6;
    Image big = make_image(int(W) * scale, int(H) * scale);
    for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x)
            fill_rect(big, int(x) * scale, int(y) * scale, scale, scale,
                      pixel_colour(image.at({0, 0, y, x}), image.at({0, 1, y, x}), image.at({0, 2, y, x})));
    for (int64_t c = 1; c < wide; ++c)
        draw_line(big, int(c * P) * scale, 0, int(c * P) * scale, big.height - 1, kWhite);
    for (int64_t r = 1; r < H / P; ++r)
        draw_line(big, 0, int(r * P) * scale, big.width - 1, int(r * P) * scale, kWhite);
    for (int64_t n = 0; n < N; ++n)
        draw_text(big, int(n % wide * P) * scale + 3, int(n / wide * P) * scale + 3, std::to_string(n + 1), kWhite);

    std::vector<Image> tiles;
    for (int64_t n = 0; n < N; ++n) {
        Image tile = make_image(int(P), int(P));
        for (int64_t i = 0; i < P; ++i)
            for (int64_t j = 0; j < P;
                 ++j)  // row n of the Patcher's output: channel c, pixel (i, j) at c*P*P + i*P + j
                set_pixel(
                    tile, int(j), int(i),
                    pixel_colour(patches.at({0, n, 0 * P * P + i * P + j}), patches.at({0, n, 1 * P * P + i * P + j}),
                                 patches.at({0, n, 2 * P * P + i * P + j})));
        Image enlarged = make_image(int(P) * 3, int(P) * 3);
        blit(enlarged, tile, 0, 0, 3);
        tiles.push_back(vconcat({enlarged, text_image(std::to_string(n + 1))}, 1));
    }
    Image left = vconcat(
        {text_image("the image, " + std::to_string(H) + "x" + std::to_string(W) + ", patch " + std::to_string(P)), big},
        4);
    Image right =
        vconcat({text_image("the Patcher's rows 1.." + std::to_string(N) + " as tiles"), grid(tiles, int(wide), 3)}, 4);
    Image body = hconcat({left, right}, 20);
    return pad(body, 8);
}

}  // namespace

int main(int argc, char** argv) {
    std::string out_dir;
    try {
        out_dir = tutorial::out_dir(argc, argv, "tutorial_05_patches");
    } catch (const std::invalid_argument& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }

    tutorial::heading("2. A 4x4 image, 2x2 patches");
    // [snippet:first-unfold]
    Tensor x = reshape(Tensor::arange(1, 17), {1, 1, 4, 4});  // [B=1, C=1, H=4, W=4]: pixels 1..16
    Tensor columns = unfold(x, 2, 2, 2, 2);                   // kernel 2x2, stride 2: [1, 1*2*2, 4]
    Patcher patcher(1, 2);
    Tensor patches = patcher.forward(x);  // [1, N=4, 4]: one row per patch
    // [/snippet:first-unfold]
    std::cout << "image x " << shape_str(x.shape()) << ":\n";
    print_matrix(reshape(x, {4, 4}));
    std::cout << "unfold(x, 2, 2, 2, 2) " << shape_str(columns.shape()) << ": column l = patch l + 1\n";
    print_matrix(reshape(columns, {4, 4}));
    std::cout << "Patcher(1, 2).forward(x) " << shape_str(patches.shape()) << ": row n = patch n + 1\n";
    print_matrix(reshape(patches, {4, 4}));

    tutorial::heading(
        "3. Where every number comes from: C=2, P=2, patch 4 (Patcher row 3, bottom right) of a 4x4 image");
    {
        // pixel value 100*(c+1) + 10*h + w names its own channel and position
        Tensor img = Tensor::zeros({1, 2, 4, 4});
        for (int64_t c = 0; c < 2; ++c)
            for (int64_t h = 0; h < 4; ++h)
                for (int64_t w = 0; w < 4; ++w) img.at({0, c, h, w}) = real(100 * (c + 1) + 10 * h + w);
        Tensor rows = Patcher(2, 2).forward(img);  // [1, 4, 8]
        const int64_t P = 2, wide = 2, n = 3;
        std::cout << "column  (c, i, j)  pixel (c, h, w)  value\n";
        for (int64_t col = 0; col < 2 * P * P; ++col) {
            const int64_t c = col / (P * P), i = col / P % P, j = col % P;
            const int64_t h = n / wide * P + i, w = n % wide * P + j;
            char line[256];
            std::snprintf(line, sizeof line, "%6lld  (%lld, %lld, %lld)  (%lld, %lld, %lld)        %g\n",
                          (long long)col, (long long)c, (long long)i, (long long)j, (long long)c, (long long)h,
                          (long long)w, double(rows.at({0, n, col})));
            std::cout << line;
        }
    }

    tutorial::heading("4. The patch grid: N = HW / P^2");
    {
        struct Case {
            int64_t C, H, W, P;
        };
        for (Case k : {Case{3, 32, 32, 4}, Case{3, 224, 224, 16}, Case{3, 224, 224, 32}, Case{3, 32, 48, 8}}) {
            Tensor images = Tensor::zeros({2, k.C, k.H, k.W});
            Tensor rows = Patcher(k.C, k.P).forward(images);
            std::cout << "images " << shape_str(images.shape()) << ", P = " << k.P << ": grid " << k.H / k.P << "x"
                      << k.W / k.P << ", N = " << k.H * k.W / (k.P * k.P) << ", patches " << shape_str(rows.shape())
                      << "\n";
        }
    }

    tutorial::heading("5. A non-square image: 32x48, P = 8");
    Tensor image = synthetic_image(32, 48);
    Tensor rows = Patcher(3, 8).forward(image);
    std::cout << "image " << shape_str(image.shape()) << " -> patches " << shape_str(rows.shape())
              << ": 4 rows of 6 patches\n";
    for (int64_t n : {0, 5, 6, 23})  // Patcher rows; patches and grid places count from 1
        std::cout << "patch " << n + 1 << " (grid row " << n / 6 + 1 << ", column " << n % 6 + 1 << ") is row " << n
                  << ", starts at pixel (" << n / 6 * 8 << ", " << n % 6 * 8 << ")\n";
    try {
        Patcher(3, 8).forward(Tensor::zeros({1, 3, 30, 48}));
    } catch (const std::invalid_argument& e) {
        std::cout << "30x48: " << e.what() << "\n";
    }
    save(patch_picture(image, rows, 8), out_dir + "/patches.png");
    std::cout << "wrote patches.png\n";

    tutorial::heading("6. A convolution is unfold + matmul");
    {
        Rng rng(5);
        struct Case {
            int64_t B, C, H, W, D, k, s;
            const char* what;
        };
        for (Case c : {Case{2, 3, 8, 12, 5, 4, 4, "kernel = stride = 4 (the ViT's E)"},
                       Case{2, 3, 9, 11, 4, 3, 2, "kernel 3, stride 2 (overlapping windows)"}}) {
            Tensor images = Tensor::uniform({c.B, c.C, c.H, c.W}, -1, 1, rng);
            Tensor weight = Tensor::uniform({c.D, c.C, c.k, c.k}, -1, 1, rng);
            Tensor bias = Tensor::uniform({c.D}, -1, 1, rng);
            Tensor by_loops = conv2d_loops(images, weight, bias, c.k, c.s);
            Tensor by_unfold = conv2d_unfold(images, weight, bias, c.k, c.s);
            std::cout << c.what << ": images " << shape_str(images.shape()) << ", weight " << shape_str(weight.shape())
                      << " -> " << shape_str(by_loops.shape()) << "; loops and unfold+matmul agree to 1e-12: "
                      << (max_abs_difference(by_loops, by_unfold) < 1e-12 ? "yes" : "NO") << "\n";
        }
    }

    tutorial::heading("7. Backward: fold adds the gradients back");
    {
        // [snippet:fold-counts]
        Tensor pixels = Tensor::zeros({1, 1, 5, 5}, true);
        Tensor windows = unfold(pixels, 3, 3, 2, 2);      // 2x2 windows of 3x3 that overlap
        windows.backward(Tensor::ones(windows.shape()));  // dL/dwindows = 1 everywhere
        // [/snippet:fold-counts]
        std::cout << "kernel 3, stride 2 on 5x5, gradient of ones: each pixel counts its windows\n";
        print_matrix(reshape(pixels.grad(), {5, 5}), 2);
        Tensor squares = Tensor::zeros({1, 1, 4, 4}, true);
        Tensor tiles = unfold(squares, 2, 2, 2, 2);
        tiles.backward(Tensor::ones(tiles.shape()));
        std::cout << "kernel = stride = 2 on 4x4 (patches): no overlap, every pixel once\n";
        print_matrix(reshape(squares.grad(), {4, 4}), 2);
    }

    tutorial::heading("8. Where the documents go wrong");
    {
        Rng rng(5);
        Tensor images = Tensor::uniform({2, 3, 8, 12}, -1, 1, rng);
        Tensor split = unfold(images, 4, 4, 4, 4);  // ViTs Explained's nn.Unfold: [B, C*P*P, N]
        std::cout << "ViTs Explained: split(x) " << shape_str(split.shape()) << ", .transpose(1,0) "
                  << shape_str(transpose(split, 1, 0).shape()) << " (batch and features swapped), .transpose(2,1) "
                  << shape_str(transpose(split, 2, 1).shape()) << " = Patcher: "
                  << (max_abs_difference(transpose(split, 2, 1), Patcher(3, 4).forward(images)) == 0 ? "yes" : "NO")
                  << "\n";

        Tensor img = Tensor::zeros({1, 2, 4, 4});
        for (int64_t c = 0; c < 2; ++c)
            for (int64_t h = 0; h < 4; ++h)
                for (int64_t w = 0; w < 4; ++w) img.at({0, c, h, w}) = real(100 * (c + 1) + 10 * h + w);
        Tensor ours = Patcher(2, 2).forward(img);
        std::string c_p1_p2, p1_p2_c;
        for (int64_t col = 0; col < 8; ++col) c_p1_p2 += " " + std::to_string(int(ours.at({0, 0, col})));
        for (int64_t i = 0; i < 2; ++i)  // einops 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)': c varies fastest
            for (int64_t j = 0; j < 2; ++j)
                for (int64_t c = 0; c < 2; ++c) p1_p2_c += " " + std::to_string(int(img.at({0, c, i, j})));
        std::cout << "patch 1 of the 2-channel image, (c p1 p2) as unfold/Conv2d:   " << c_p1_p2 << "\n";
        std::cout << "patch 1 of the 2-channel image, (p1 p2 c) as einops:          " << p1_p2_c << "\n";
    }
    return 0;
}
