// Chapter 7, "Multi-head self-attention": lists MultiHeadSelfAttention's parameters, runs the
// layer on one short sequence and prints its shapes, reads the column layout of the fused qkv
// projection off it by moving the weight rows of one head's q, k and v; measures why the
// scale belongs before the softmax and to d_head (against Visual Transformer in CV and the
// ViT notebook); shows what a patch mask does; and draws two heads' attention maps for a
// synthetic sequence (attention.png in --out DIR).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/layers/attention.h"
#include "patchgrad/vit/pictures/canvas.h"
#include "patchgrad/vit/positional_encoding.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;

namespace {

using tutorial::max_abs_difference;

// Rows of the [rows, cols] block starting at element `offset` of t, "%7.3f" each, plus each row's sum.
void print_rows(const Tensor& t, int64_t offset, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        std::string line = " ";
        double sum = 0;
        for (int64_t c = 0; c < cols; ++c) {
            const double v = t.data()[offset + r * cols + c];
            char cell[256];
            std::snprintf(cell, sizeof cell, "%7.3f", v);
            line += cell;
            sum += v;
        }
        char tail[256];
        std::snprintf(tail, sizeof tail, "   | sum %.3f", sum);
        std::cout << line << tail << "\n";
    }
}

// Softmax statistics of one row of scores s (length N) under one way of scaling.
struct RowStats {
    double variance = 0, largest = 0, row_sum = 0;
};

RowStats row_stats(const std::vector<double>& s, double logit_scale, double output_scale) {
    const int64_t N = static_cast<int64_t>(s.size());
    RowStats r;
    double top = -1e300, total = 0;
    for (double v : s) top = std::max(top, v * logit_scale);
    std::vector<double> a(s.size());
    for (int64_t j = 0; j < N; ++j) total += a[j] = std::exp(s[j] * logit_scale - top);
    for (int64_t j = 0; j < N; ++j) {
        a[j] = a[j] / total * output_scale;
        r.variance += s[j] * logit_scale * s[j] * logit_scale / double(N);
        r.row_sum += a[j];
    }
    r.largest = *std::max_element(a.begin(), a.end()) / r.row_sum;  // share of the row on one key
    return r;
}

// attention.png: head 0 and head 1 of A [1, heads, T, T] as heatmaps (query rows down, key
// columns across) over [0, max], with a colour bar.
Image attention_picture(const Tensor& A, int cell) {
    const int T = int(A.size(2));
    double high = 0;
    for (int64_t i = 0; i < A.numel(); ++i) high = std::max(high, double(A.data()[i]));
    std::vector<Image> maps;
    for (int64_t h = 0; h < A.size(1); ++h) {
        std::vector<double> values(A.data() + h * T * T, A.data() + (h + 1) * T * T);
        Image map = heatmap(values, T, T, cell, 0, high);
        maps.push_back(vconcat({text_image("head " + std::to_string(h)), map, text_image("key j ->")}, 4));
    }
    Image query = make_image(text_height() + 2, maps[0].height);
    draw_text_vertical(query, 0, (query.height - text_width("<- query i")) / 2, "<- query i", kBlack);
    std::vector<Image> row{query};
    for (const Image& m : maps) row.push_back(m);
    row.push_back(colorbar(Colormap::Viridis, 0, high, int(T) * cell));
    Image all = vconcat(
        {text_image("attention A = softmax(q k^T / sqrt(d_head)), tokens = positions 0.." + std::to_string(T - 1)),
         hconcat(row, 10)},
        6);
    return pad(all, 8);
}

}  // namespace

int main(int argc, char** argv) {
    std::string out_dir;
    try {
        out_dir = tutorial::out_dir(argc, argv, "tutorial_07_attention");
    } catch (const std::invalid_argument& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }

    tutorial::heading("2. The layer: D = 8, 2 heads of d_head = 4");
    const int64_t B = 1, N = 5, D = 8, heads = 2, head_dim = D / heads;
    Rng rng(7);
    MultiHeadSelfAttention msa(D, heads, rng, /*dropout_rng=*/nullptr);
    // timm's init (std 0.02) gives nearly uniform attention; larger weights show more.
    for (const Tensor& p : msa.parameters()) {
        Tensor w = p;
        for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = real(rng.uniform(-0.8, 0.8));
    }
    for (const auto& [name, p] : msa.named_parameters())
        std::cout << "  " << name << " " << shape_str(p.shape()) << "\n";
    std::cout << "parameters: " << msa.num_parameters() << " = 4 * D * D + 4 * D\n";

    tutorial::heading("2. The layer on one sequence of N = 5 tokens");
    Tensor x = Tensor::uniform({B, N, D}, -1, 1, rng);  // token 0 plays the class token
    msa.record_attention(true);
    const Tensor y = msa.forward(x);
    const Tensor A = msa.attention();
    std::cout << "  x   " << shape_str(x.shape()) << "\n  qkv " << shape_str(msa.qkv->forward(x).shape()) << "\n  A   "
              << shape_str(A.shape()) << "\n  y   " << shape_str(y.shape()) << "\n";
    // The column layout of qkv, read from the layer: move the rows of W_qkv that make one
    // head's q, k or v, and see which head's A and which output change.
    const auto after_moving = [&](int64_t first_row) {
        Tensor w = msa.qkv->weight;  // [3D, D]
        const std::vector<real> kept(w.data(), w.data() + w.numel());
        for (int64_t i = first_row * D; i < (first_row + head_dim) * D; ++i) w.data()[i] += real(0.5);
        const Tensor moved_y = msa.forward(x), moved_A = msa.attention();
        std::copy(kept.begin(), kept.end(), w.data());
        std::string changed;
        for (int64_t h = 0; h < heads; ++h)
            if (max_abs_difference(select(moved_A, 1, h), select(A, 1, h)) > 0) changed += " " + std::to_string(h);
        return (changed.empty() ? std::string("A stays") : "A changes in head" + changed) +
               (max_abs_difference(moved_y, y) > 0 ? ", y changes" : ", y stays");
    };
    for (const auto& [part, row] : std::vector<std::pair<std::string, int64_t>>{
             {"q of head 1", head_dim}, {"k of head 1", D + head_dim}, {"v of head 1", 2 * D + head_dim}})
        std::cout << "moving rows " << row << ".." << row + head_dim - 1 << " of W_qkv (" << part
                  << "): " << after_moving(row) << "\n";
    msa.record_attention(false);
    std::cout << "A, head 0 (row i: how much token i takes from each token j):\n";
    print_rows(A, 0, N, N);

    tutorial::heading("3. Attention maps of a synthetic sequence");
    {
        // 17 tokens = the sinusoidal encodings of positions 0..16 (D = 16, chapter 6), v = x.
        // Head 0's query and key are 2.5 x dims 0..7 (the fast frequencies), head 1's are
        // 2.5 x dims 2..9 (slower ones): q . k then only depends on the distance of two positions.
        const int64_t T = 17, dim = 16, hd = 8;
        Rng layer_rng(8);
        MultiHeadSelfAttention layer(dim, 2, layer_rng, nullptr);
        Tensor w = layer.qkv->weight;  // [3 dim, dim]: rows 0..15 make q, 16..31 k, 32..47 v
        for (int64_t r = 0; r < 3 * dim; ++r)
            for (int64_t c = 0; c < dim; ++c) {
                const int64_t row_in_part = r % dim, head = row_in_part / hd;
                const bool query_or_key = r < 2 * dim;
                const int64_t source = query_or_key ? row_in_part - 6 * head : row_in_part;
                w.data()[r * dim + c] = c == source ? (query_or_key ? real(2.5) : 1) : 0;
            }
        layer.record_attention(true);
        layer.forward(sinusoidal_positional_encoding(T, dim));
        Tensor maps = layer.attention();  // [1, 2, 17, 17]
        std::cout << "A " << shape_str(maps.shape()) << "; row 8 (query = position 8):\n";
        for (int64_t h = 0; h < 2; ++h) {
            std::string line = "head " + std::to_string(h) + ":";
            for (int64_t j = 0; j < T; ++j) {
                char cell[256];
                std::snprintf(cell, sizeof cell, " %.2f", double(maps.data()[(h * T + 8) * T + j]));
                line += cell;
            }
            std::cout << line << "\n";
        }
        save(attention_picture(maps, 10), out_dir + "/attention.png");
        std::cout << "wrote attention.png\n";
    }
    tutorial::heading("4. Why 1/sqrt(d_head), before the softmax");
    {
        // ViT-B: D = 768, 12 heads of 64. Unit-variance q and k; 16 keys per row; 400 rows.
        const int64_t d = 64, h = 12, keys = 16, rows = 400;
        Rng normal_rng(70);
        struct Way {
            const char* name;
            double logit_scale, output_scale;
        };
        const std::vector<Way> ways{
            {"none:                     softmax(q k^T)            ", 1.0, 1.0},
            {"ours:                     softmax(q k^T / sqrt(d))  ", 1 / std::sqrt(double(d)), 1.0},
            {"Visual Transformer in CV: softmax(q k^T) / sqrt(D)  ", 1.0, 1 / std::sqrt(double(d * h))},
            {"ViT notebook:             softmax(q k^T / sqrt(h d))", 1 / std::sqrt(double(d * h)), 1.0}};
        std::vector<RowStats> mean(ways.size());
        for (int64_t r = 0; r < rows; ++r) {
            std::vector<double> qv(d), s(keys);
            for (double& e : qv) e = normal_rng.normal();
            for (double& sj : s) {
                sj = 0;
                for (int64_t t = 0; t < d; ++t) sj += qv[t] * normal_rng.normal();
            }
            for (size_t w = 0; w < ways.size(); ++w) {
                const RowStats st = row_stats(s, ways[w].logit_scale, ways[w].output_scale);
                mean[w].variance += st.variance / rows, mean[w].largest += st.largest / rows,
                    mean[w].row_sum += st.row_sum / rows;
            }
        }
        std::cout << "d = 64, h = 12, D = 768, 16 keys; means over 400 rows\n";
        std::cout << "way                                              logit variance   largest share   row sum\n";
        for (size_t w = 0; w < ways.size(); ++w) {
            char line[256];
            std::snprintf(line, sizeof line, "%s %14.3f %15.3f %9.3f\n", ways[w].name, mean[w].variance,
                          mean[w].largest, mean[w].row_sum);
            std::cout << line;
        }
    }

    tutorial::heading("5. A patch mask");
    {
        // [snippet:mask]
        const std::vector<bool> patch_mask{true, false, true, false};  // patches 1..4: tokens 2 and 4 hidden
        msa.record_attention(true);
        Tensor y_masked = msa.forward(x, patch_mask);
        Tensor A_masked = msa.attention();  // [B, heads, N, N]
        // [/snippet:mask]
        std::cout << "A, head 0, with tokens 2 and 4 hidden:\n";
        print_rows(A_masked, 0, N, N);
        Tensor x_kept = concat({slice(x, 1, 0, 2), slice(x, 1, 3, 4)}, 1);  // tokens 0, 1, 3
        Tensor y_kept = msa.forward(x_kept);
        Tensor visible = concat({slice(y_masked, 1, 0, 2), slice(y_masked, 1, 3, 4)}, 1);
        std::cout << "visible tokens' outputs = outputs of the sequence without tokens 2 and 4: "
                  << (max_abs_difference(visible, y_kept) < 1e-12 ? "yes" : "NO") << "\n";
        msa.record_attention(false);
    }

    return 0;
}
