// Chapter 6, "Patch embedding, class token and position encoding": builds z_0 of the ViT
// paper's eq. (1) step by step — the projection E (as a Linear and as a Conv2d), the class
// token, the sinusoidal and the learned position embedding — prints each step, compares ViT
// from scratch's "Method 1" table with the right one, and draws the sinusoidal table as a heatmap
// (sinusoidal.png in --out DIR).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/vit/patch_embedding.h"
#include "patchgrad/vit/pictures/canvas.h"
#include "patchgrad/vit/positional_encoding.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;

namespace {

// Row `row` of a [1, rows, cols] or [rows, cols] table, `count` columns from `first`, "%7.4f" each.
std::string row_str(const Tensor& t, int64_t row, int64_t first, int64_t count) {
    const int64_t cols = t.size(-1);
    std::string line;
    for (int64_t c = first; c < first + count; ++c) {
        char cell[256];
        std::snprintf(cell, sizeof cell, "%8.4f", double(t.data()[row * cols + c]));
        line += cell;
    }
    return line;
}

using tutorial::max_abs_difference;

// torch.nn.Conv2d(C, D, kernel_size=P, stride=P) as a loop, then timm's flatten(2).transpose(1, 2):
// x [B, C, H, W], weight [D, C, P, P], bias [D] -> tokens [B, N, D].
Tensor conv_patch_embedding(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t P) {
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), D = weight.size(0);
    const int64_t wide = W / P, N = (H / P) * wide;
    Tensor out = Tensor::zeros({B, N, D});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t n = 0; n < N; ++n)
            for (int64_t d = 0; d < D; ++d) {
                real acc = bias.at({d});
                for (int64_t c = 0; c < C; ++c)
                    for (int64_t i = 0; i < P; ++i)
                        for (int64_t j = 0; j < P; ++j)
                            acc += weight.at({d, c, i, j}) * x.at({b, c, n / wide * P + i, n % wide * P + j});
                out.at({b, n, d}) = acc;
            }
    return out;
}

// ViT from scratch's commented-out "Method 1": sin(p / 10000^(i/D)) in columns i AND i+1.
Tensor scratch_method1(int64_t num_patches, int64_t D) {
    Tensor t = Tensor::zeros({1, num_patches, D});
    for (int64_t p = 0; p < num_patches; ++p)
        for (int64_t i = 0; i < D; i += 2) {
            t.at({0, p, i}) = real(std::sin(double(p) / std::pow(10000.0, double(i) / double(D))));
            t.at({0, p, i + 1}) = real(std::sin(double(p) / std::pow(10000.0, double(i) / double(D))));
        }
    return t;
}

// sinusoidal.png: the table [positions, dim] as a heatmap (positions down, dimensions
// across) in the diverging map over [-1, 1], with axis labels and a colour bar.
Image sinusoidal_picture(const Tensor& table, int cell) {
    const int rows = int(table.size(1)), cols = int(table.size(2));
    std::vector<double> values(table.data(), table.data() + table.numel());
    Image map = heatmap(values, rows, cols, cell, -1, 1, Colormap::Diverging);
    Image bar = colorbar(Colormap::Diverging, -1, 1, map.height);
    Image x_label = text_image("dimension 0 .. " + std::to_string(cols - 1) + "  (even: sin, odd: cos)");
    Image y_label = make_image(text_height() + 2, map.height);
    draw_text_vertical(y_label, 0, (map.height - text_width("position 0 .. " + std::to_string(rows - 1))) / 2,
                       "position 0 .. " + std::to_string(rows - 1), kBlack);
    Image body = hconcat({y_label, vconcat({map, x_label}, 4), bar}, 6);
    Image title = text_image("sinusoidal position encoding, " + std::to_string(rows) + " positions x " +
                             std::to_string(cols) + " dimensions");
    Image all = vconcat({title, body}, 6);
    return pad(all, 8);
}

}  // namespace

int main(int argc, char** argv) {
    std::string out_dir;
    try {
        out_dir = tutorial::out_dir(argc, argv, "tutorial_06_embeddings");
    } catch (const std::invalid_argument& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }

    tutorial::heading("1. The patch embedding E");
    const int64_t B = 2, C = 3, H = 8, W = 12, P = 4, D = 8;
    Rng rng(6);
    Tensor images = Tensor::uniform({B, C, H, W}, 0, 1, rng);
    // [snippet:embed-patches]
    PatchEmbedding patch_embed(C, P, D, rng);               // Patcher + Linear(C*P*P -> D)
    Tensor patches = patch_embed.patcher->forward(images);  // [B, N, C*P*P] = [2, 6, 48]
    Tensor embedded = patch_embed.forward(images);          // [B, N, D]     = [2, 6, 8]
    // [/snippet:embed-patches]
    std::cout << "images " << shape_str(images.shape()) << " -> patches " << shape_str(patches.shape())
              << " -> embedded " << shape_str(embedded.shape()) << "\n";
    for (const auto& [name, p] : patch_embed.named_parameters())
        std::cout << "  " << name << " " << shape_str(p.shape()) << "\n";
    std::cout << "parameters: " << patch_embed.num_parameters() << " = " << D << " * " << C * P * P << " + " << D
              << "\n";
    {
        Rng big_rng(0);
        PatchEmbedding vit_b16(3, 16, 768, big_rng);
        std::cout << "ViT-B/16's E: " << shape_str(vit_b16.proj->weight.shape()) << " + bias, "
                  << vit_b16.num_parameters() << " parameters\n";
    }

    tutorial::heading("2. The same E as a Conv2d(C, D, kernel_size=P, stride=P)");
    {
        // [snippet:conv-weight]
        Tensor conv_weight = reshape(patch_embed.proj->weight, {D, C, P, P});  // timm's patch_embed.proj.weight
        // [/snippet:conv-weight]
        Tensor by_conv = conv_patch_embedding(images, conv_weight, patch_embed.proj->bias, P);
        std::cout << "proj.weight " << shape_str(patch_embed.proj->weight.shape()) << " reshaped to "
                  << shape_str(conv_weight.shape()) << "; conv tokens " << shape_str(by_conv.shape())
                  << " equal the Linear's to 1e-12: " << (max_abs_difference(by_conv, embedded) < 1e-12 ? "yes" : "NO")
                  << "\n";
    }

    tutorial::heading("3. The class token");
    // [snippet:class-token]
    Tensor cls_token = Tensor::trunc_normal({1, 1, D}, 0, 0.02, -2, 2, rng, true);  // x_class, learned
    Tensor tokens = concat({broadcast_to(cls_token, {B, 1, D}), embedded}, 1);      // [B, N+1, D]
    // [/snippet:class-token]
    std::cout << "cls_token " << shape_str(cls_token.shape()) << " -> broadcast " << shape_str({B, 1, D})
              << " -> concat with " << shape_str(embedded.shape()) << " -> tokens " << shape_str(tokens.shape())
              << "\n";
    std::cout << "token 0 of image 0 and of image 1 is the class token: "
              << (max_abs_difference(select(tokens, 1, 0), broadcast_to(reshape(cls_token, {1, D}), {B, D})) == 0
                      ? "yes"
                      : "NO")
              << "\n";
    {
        sum(select(tokens, 1, 0)).backward();  // L = sum of token 0 over the batch
        std::cout << "d(sum of token 0 over the batch)/d cls_token:" << row_str(cls_token.grad(), 0, 0, D)
                  << "  (one per image: broadcast_to's backward sums)\n";
        cls_token.zero_grad();
    }

    tutorial::heading("4. Sinusoidal position encoding");
    {
        Tensor pe = sinusoidal_positional_encoding(6, 8);
        std::cout << "sinusoidal_positional_encoding(6, 8) " << shape_str(pe.shape()) << ":\n";
        std::cout << "pos      sin0    cos0    sin1    cos1    sin2    cos2    sin3    cos3\n";
        for (int64_t pos = 0; pos < 6; ++pos) std::cout << "  " << pos << row_str(pe, pos, 0, 8) << "\n";
        std::cout << "frequencies 1/10000^(2i/8):";
        for (int64_t i = 0; i < 4; ++i) std::cout << " " << 1 / std::pow(10000.0, 2.0 * double(i) / 8);
        std::cout << "\n";

        // <PE(p), PE(p + k)> = sum_i cos(k w_i): the same for every p
        Tensor long_table = sinusoidal_positional_encoding(65, 8);
        auto dot = [&](int64_t a, int64_t b) {
            double s = 0;
            for (int64_t d = 0; d < 8; ++d) s += long_table.at({0, a, d}) * long_table.at({0, b, d});
            return s;
        };
        char line[256];
        std::snprintf(line, sizeof line, "<PE(3), PE(5)> = %.6f   <PE(40), PE(42)> = %.6f   <PE(3), PE(13)> = %.6f\n",
                      dot(3, 5), dot(40, 42), dot(3, 13));
        std::cout << line;

        Tensor tiny = sinusoidal_positional_encoding(65, 128);  // cifar-tiny: 64 patches + class token, D = 128
        save(sinusoidal_picture(tiny, 3), out_dir + "/sinusoidal.png");
        std::cout << "wrote sinusoidal.png: " << shape_str(tiny.shape()) << "\n";
    }

    tutorial::heading("5. Adding the position embedding: z_0");
    {
        // [snippet:z0]
        PositionalEncoding fixed(1 + patches.size(1), D, /*learnable=*/false, rng);   // E_pos [1, N+1, D]
        PositionalEncoding learned(1 + patches.size(1), D, /*learnable=*/true, rng);  // trunc_normal(0.02)
        Tensor z0 = learned.forward(tokens);  // [B, N+1, D] + [1, N+1, D]: every token, class token included
        // [/snippet:z0]
        double sum_sq = 0;
        for (int64_t i = 0; i < learned.table.numel(); ++i)
            sum_sq += double(learned.table.data()[i]) * learned.table.data()[i];
        char line[256];
        std::snprintf(line, sizeof line, "learned table %s, root mean square %.4f (init std 0.02)\n",
                      shape_str(learned.table.shape()).c_str(), std::sqrt(sum_sq / double(learned.table.numel())));
        std::cout << line;
        std::cout << "fixed table " << shape_str(fixed.table.shape())
                  << ", a parameter: " << (fixed.table.requires_grad() ? "yes" : "no") << "\n";
        std::cout << "z0 " << shape_str(z0.shape()) << "; z0[b, 0] - x_class = E_pos[0] for both images: "
                  << (max_abs_difference(select(z0, 1, 0) - broadcast_to(reshape(cls_token, {1, D}), {B, D}),
                                         broadcast_to(select(learned.table, 1, 0), {B, D})) < 1e-12
                          ? "yes"
                          : "NO")
                  << "\n";
    }

    tutorial::heading("6. ViT from scratch's Method 1");
    {
        Tensor ours = sinusoidal_positional_encoding(17, 8);
        Tensor method1 = scratch_method1(17, 8);
        std::cout << "pos 1, ours:    " << row_str(ours, 1, 0, 8) << "\n";
        std::cout << "pos 1, Method 1:" << row_str(method1, 1, 0, 8) << "\n";
        char line[256];
        std::snprintf(line, sizeof line, "largest difference over 17 positions: %.4f\n",
                      double(max_abs_difference(ours, method1)));
        std::cout << line;
    }
    return 0;
}
