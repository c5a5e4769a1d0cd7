// inspect.cpp — the analyses of a ViT (position-embedding similarity, attention rollout,
// mean attention distance, principal components of E) and the pictures of them that
// `patchgrad inspect` writes. See inspect.h for the formulas and the figures they reproduce.
#include "patchgrad/vit/inspect.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <system_error>

#include "patchgrad/layers/module.h"
#include "patchgrad/vit/pictures/chart.h"
#include "patchgrad/vit/pictures/png.h"

namespace patchgrad {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// "0.0162", "13.4": numbers under the pictures, three significant digits.
std::string short_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

std::string percent(double fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * fraction);
    return buf;
}

// A = attention maps of one forward: every layer [B, heads, T, T] with the same sizes.
struct AttentionShape {
    int64_t batch = 0, heads = 0, tokens = 0;
};

AttentionShape check_attention(const std::vector<Tensor>& attention, const char* where) {
    check(!attention.empty(), where, ": no attention maps (0 layers)");
    AttentionShape s;
    for (size_t l = 0; l < attention.size(); ++l) {
        const Tensor& a = attention[l];
        check(a.defined(), where, ": layer ", l, " has no attention map (was the model run with record_attention on?)");
        const Shape& shape = a.shape();
        check(shape.size() == 4 && shape[2] == shape[3] && shape[2] >= 1, where, ": layer ", l, " has shape ", shape,
              ", expected [B, heads, T, T]");
        if (l == 0) s = {shape[0], shape[1], shape[2]};
        check(shape[0] == s.batch && shape[1] == s.heads && shape[2] == s.tokens, where, ": layer ", l, " has shape ",
              shape, " but layer 0 has ", attention[0].shape());
    }
    return s;
}

// A[b, h, i, j] of one layer's map of shape s.
inline double at(const Tensor& a, const AttentionShape& s, int64_t b, int64_t h, int64_t i, int64_t j) {
    return double(a.data()[((b * s.heads + h) * s.tokens + i) * s.tokens + j]);
}

Matrix matmul(const Matrix& a, const Matrix& b) {
    Matrix c(a.rows, b.cols);
    for (int64_t i = 0; i < a.rows; ++i)
        for (int64_t k = 0; k < a.cols; ++k) {
            const double aik = a(i, k);
            for (int64_t j = 0; j < b.cols; ++j) c(i, j) += aik * b(k, j);
        }
    return c;
}

// Eigen-decomposition of a symmetric matrix by cyclic Jacobi rotations (Golub & Van Loan
// §8.5; Numerical Recipes' jacobi): each rotation P in the (p, q) plane makes entry (p, q)
// of P^T S P zero; sweeping over every pair until the off-diagonal part vanishes leaves the
// eigenvalues on the diagonal and the eigenvectors as the columns of the accumulated V.
void jacobi_eigen(Matrix s, std::vector<double>& eigenvalues, Matrix& eigenvectors) {
    const int64_t n = s.rows;
    Matrix v(n, n);
    for (int64_t i = 0; i < n; ++i) v(i, i) = 1;
    double norm2 = 0;
    for (double x : s.values) norm2 += x * x;
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0;
        for (int64_t p = 0; p < n; ++p)
            for (int64_t q = p + 1; q < n; ++q) off += s(p, q) * s(p, q);
        if (off <= 1e-30 * norm2) break;
        for (int64_t p = 0; p < n; ++p)
            for (int64_t q = p + 1; q < n; ++q) {
                const double spq = s(p, q);
                if (spq == 0) continue;
                // tan of the rotation angle, the smaller root of t^2 + 2 theta t - 1 = 0.
                const double theta = (s(q, q) - s(p, p)) / (2 * spq);
                const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
                const double c = 1 / std::sqrt(t * t + 1), sn = t * c;
                for (int64_t k = 0; k < n; ++k) {  // S <- S P (columns p, q)
                    const double kp = s(k, p), kq = s(k, q);
                    s(k, p) = c * kp - sn * kq;
                    s(k, q) = sn * kp + c * kq;
                }
                for (int64_t k = 0; k < n; ++k) {  // S <- P^T S (rows p, q)
                    const double pk = s(p, k), qk = s(q, k);
                    s(p, k) = c * pk - sn * qk;
                    s(q, k) = sn * pk + c * qk;
                }
                for (int64_t k = 0; k < n; ++k) {  // V <- V P
                    const double kp = v(k, p), kq = v(k, q);
                    v(k, p) = c * kp - sn * kq;
                    v(k, q) = sn * kp + c * kq;
                }
            }
    }
    eigenvalues.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) eigenvalues[static_cast<size_t>(i)] = s(i, i);
    eigenvectors = std::move(v);
}

// ---- drawing helpers -------------------------------------------------------------------

constexpr int kMargin = 12;
constexpr Rgb kGridLine{255, 255, 255};
constexpr Rgb kTileFrame{160, 160, 160};

Image crop(const Image& image, int x, int y, int width, int height) {
    Image out = make_image(width, height);
    for (int yy = 0; yy < height; ++yy)
        for (int xx = 0; xx < width; ++xx) set_pixel(out, xx, yy, get_pixel(image, x + xx, y + yy));
    return out;
}

Image enlarge(const Image& image, int scale) {
    Image out = make_image(image.width * scale, image.height * scale);
    blit(out, image, 0, 0, scale);
    return out;
}

// Lines of text stacked, left-aligned, the first `big_lines` at scale 2.
Image text_block(const std::vector<std::string>& lines, int big_lines = 0) {
    std::vector<Image> rows;
    for (size_t i = 0; i < lines.size(); ++i)
        rows.push_back(text_image(lines[i], kBlack, static_cast<int>(i) < big_lines ? 2 : 1));
    int width = 0, height = 0;
    for (const Image& r : rows) {
        width = std::max(width, r.width);
        height += r.height + 3;
    }
    Image out = make_image(width, height);
    int y = 0;
    for (const Image& r : rows) {
        blit(out, r, 0, y);
        y += r.height + 3;
    }
    return out;
}

// `title` (lines of text) above `body`, both left-aligned.
Image titled(const std::vector<std::string>& title, const Image& body, int big_lines = 1) {
    const Image head = text_block(title, big_lines);
    Image out = make_image(std::max(head.width, body.width), head.height + 6 + body.height);
    blit(out, head, 0, 0);
    blit(out, body, 0, head.height + 6);
    return out;
}

// Screen pixels per image pixel: the image about `target` pixels across, and every patch at
// least `min_patch` pixels wide.
int display_scale(const PatchGrid& grid, int target = 192, int min_patch = 1) {
    const int64_t side = std::max(grid.rows, grid.cols) * grid.patch;
    const int64_t by_size = std::max<int64_t>(1, (target + side / 2) / side);
    const int64_t by_patch = (min_patch + grid.patch - 1) / grid.patch;
    return static_cast<int>(std::max(by_size, by_patch));
}

// `map` [N] over the patches, blended over `enlarged` (the image at `scale`): viridis of
// map / its maximum, 60% over the image's 40%, one colour per patch.
Image overlay(const Image& enlarged, const std::vector<double>& map, const PatchGrid& grid, int scale) {
    const double high = *std::max_element(map.begin(), map.end());
    Image out = enlarged;
    const int cell = static_cast<int>(grid.patch) * scale;
    auto mix = [](uint8_t over, uint8_t under) { return static_cast<uint8_t>(std::lround(0.6 * over + 0.4 * under)); };
    for (int y = 0; y < out.height; ++y)
        for (int x = 0; x < out.width; ++x) {
            const int64_t patch = (y / cell) * grid.cols + x / cell;
            const double t = high > 0 ? map[static_cast<size_t>(patch)] / high : 0;
            const Rgb c = colormap(Colormap::Viridis, t), p = get_pixel(enlarged, x, y);
            set_pixel(out, x, y, {mix(c.r, p.r), mix(c.g, p.g), mix(c.b, p.b)});
        }
    return out;
}

void check_grid(const PatchGrid& grid, const char* where) {
    check(grid.rows >= 1 && grid.cols >= 1 && grid.patch >= 1, where, ": patch grid ", grid.rows, "x", grid.cols,
          " of patch ", grid.patch, " must have positive sizes");
}

// Eval mode and attention recording for one forward pass: both undone however it ends.
struct AttentionRecording {
    VisionTransformer& model;
    EvalModeGuard eval_mode;
    explicit AttentionRecording(VisionTransformer& m) : model(m), eval_mode(m) { model.record_attention(true); }
    ~AttentionRecording() { model.record_attention(false); }
    AttentionRecording(const AttentionRecording&) = delete;
    AttentionRecording& operator=(const AttentionRecording&) = delete;
};

}  // namespace

Matrix::Matrix(int64_t rows_, int64_t cols_, double fill) : rows(rows_), cols(cols_) {
    check(rows_ >= 0 && cols_ >= 0, "Matrix: sizes ", rows_, "x", cols_, " must not be negative");
    values.assign(static_cast<size_t>(rows_ * cols_), fill);
}

// ---- the numbers ---------------------------------------------------------------------

Matrix cosine_similarity_matrix(const Matrix& vectors) {
    const int64_t n = vectors.rows, d = vectors.cols;
    std::vector<double> norm(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        double s = 0;
        for (int64_t k = 0; k < d; ++k) s += vectors(i, k) * vectors(i, k);
        norm[static_cast<size_t>(i)] = std::sqrt(s);
        if (!(norm[static_cast<size_t>(i)] > 0) || !std::isfinite(s))
            fail("cosine_similarity_matrix: row ", i, " of the [", n, ", ", d, "] vectors has norm ",
                 short_number(norm[static_cast<size_t>(i)]), "; its cosine similarity is undefined");
    }
    // [snippet:cosine-similarity]
    Matrix s(n, n);
    for (int64_t i = 0; i < n; ++i) {
        s(i, i) = 1;
        for (int64_t j = i + 1; j < n; ++j) {
            double dot = 0;
            for (int64_t k = 0; k < d; ++k) dot += vectors(i, k) * vectors(j, k);
            // Rounding can push |dot| / (|a| |b|) a hair past 1.
            const double c = std::clamp(dot / (norm[static_cast<size_t>(i)] * norm[static_cast<size_t>(j)]), -1.0, 1.0);
            s(i, j) = s(j, i) = c;
        }
    }
    // [/snippet:cosine-similarity]
    return s;
}

Matrix patch_position_embeddings(const VisionTransformer& model) {
    const Tensor& table = model.pos_encoding->table;  // [1, N+1, D]
    const int64_t n = table.size(1) - 1, d = table.size(2);
    Matrix m(n, d);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < d; ++k) m(i, k) = double(table.data()[(i + 1) * d + k]);
    return m;
}

Matrix attention_rollout(const std::vector<Tensor>& attention, int64_t image) {
    const AttentionShape s = check_attention(attention, "attention_rollout");
    check(image >= 0 && image < s.batch, "attention_rollout: image ", image, " is outside the batch of ", s.batch);
    const int64_t t = s.tokens;
    Matrix rollout(t, t);
    for (int64_t i = 0; i < t; ++i) rollout(i, i) = 1;
    // [snippet:attention-rollout]
    for (const Tensor& a : attention) {
        Matrix layer(t, t);  // Ahat_l = rownorm(mean_h A_l,h + I)
        for (int64_t i = 0; i < t; ++i) {
            double row_sum = 0;
            for (int64_t j = 0; j < t; ++j) {
                double mean = 0;
                for (int64_t h = 0; h < s.heads; ++h) mean += at(a, s, image, h, i, j);
                layer(i, j) = mean / double(s.heads) + (i == j ? 1 : 0);
                row_sum += layer(i, j);
            }
            for (int64_t j = 0; j < t; ++j) layer(i, j) /= row_sum;
        }
        rollout = matmul(layer, rollout);  // R <- Ahat_l R: later layers multiply from the left
    }
    // [/snippet:attention-rollout]
    return rollout;
}

std::vector<double> class_token_attention(const Tensor& attention, int64_t image, int64_t head) {
    const AttentionShape s = check_attention({attention}, "class_token_attention");
    check(image >= 0 && image < s.batch && head >= 0 && head < s.heads, "class_token_attention: image ", image,
          ", head ", head, " is outside the map ", attention.shape());
    std::vector<double> row;
    for (int64_t j = 1; j < s.tokens; ++j) row.push_back(at(attention, s, image, head, 0, j));
    return row;
}

PatchGrid PatchGrid::of(const ViTConfig& config) {
    return {config.patches_high(), config.patches_wide(), config.patch_size};
}

namespace {

// |c_q - c_k| in pixels for every pair of patches, [N, N]. Patch centres are patch * (index
// + 1/2), so the distance is patch times the distance between grid indices.
Matrix patch_distances(const PatchGrid& grid) {
    const int64_t n = grid.size();
    Matrix d(n, n);
    // [snippet:patch-distances]
    for (int64_t q = 0; q < n; ++q)
        for (int64_t k = 0; k < n; ++k)
            d(q, k) = double(grid.patch) *
                      std::hypot(double(q / grid.cols - k / grid.cols), double(q % grid.cols - k % grid.cols));
    // [/snippet:patch-distances]
    return d;
}

}  // namespace

Matrix mean_attention_distance(const std::vector<Tensor>& attention, const PatchGrid& grid) {
    check_grid(grid, "mean_attention_distance");
    const AttentionShape s = check_attention(attention, "mean_attention_distance");
    const int64_t n = grid.size();
    check(s.tokens == n + 1, "mean_attention_distance: attention maps ", attention[0].shape(), " have ", s.tokens,
          " tokens, the ", grid.rows, "x", grid.cols, " patch grid needs ", n + 1, " (class token + patches)");
    const Matrix distance = patch_distances(grid);
    Matrix result(static_cast<int64_t>(attention.size()), s.heads);
    for (size_t l = 0; l < attention.size(); ++l)
        for (int64_t h = 0; h < s.heads; ++h) {
            double over_images = 0;
            int64_t images = 0;
            for (int64_t b = 0; b < s.batch; ++b) {
                double over_queries = 0;
                int64_t queries = 0;
                // [snippet:mean-attention-distance]
                for (int64_t q = 0; q < n; ++q) {
                    double weight = 0, weighted = 0;
                    for (int64_t k = 0; k < n; ++k) {
                        const double w = at(attention[l], s, b, h, q + 1, k + 1);  // token = patch + 1
                        weight += w;
                        weighted += w * distance(q, k);
                    }
                    if (weight > 0) {
                        over_queries += weighted / weight;
                        ++queries;
                    }
                }
                // [/snippet:mean-attention-distance]
                if (queries > 0) {
                    over_images += over_queries / double(queries);
                    ++images;
                }
            }
            result(static_cast<int64_t>(l), h) = images > 0 ? over_images / double(images) : std::nan("");
        }
    return result;
}

double mean_patch_distance(const PatchGrid& grid) {
    check_grid(grid, "mean_patch_distance");
    const Matrix d = patch_distances(grid);
    return std::accumulate(d.values.begin(), d.values.end(), 0.0) / double(d.values.size());
}

PrincipalComponents principal_components(const Matrix& samples, int64_t count) {
    const int64_t n = samples.rows, f = samples.cols;
    check(n >= 1 && f >= 1, "principal_components: samples [", n, ", ", f, "] need at least one row and one column");
    check(count >= 1 && count <= f, "principal_components: ", count, " components of ", f,
          " features requested, expected 1 to ", f);
    for (size_t i = 0; i < samples.values.size(); ++i)
        if (!std::isfinite(samples.values[i]))
            fail("principal_components: sample ", int64_t(i) / f, ", feature ", int64_t(i) % f, " is ",
                 short_number(samples.values[i]));
    PrincipalComponents pc;
    pc.mean.assign(static_cast<size_t>(f), 0);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < f; ++k) pc.mean[static_cast<size_t>(k)] += samples(i, k) / double(n);
    // [snippet:pca-covariance]
    Matrix covariance(f, f);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t a = 0; a < f; ++a) {
            const double xa = samples(i, a) - pc.mean[static_cast<size_t>(a)];
            for (int64_t b = a; b < f; ++b)
                covariance(a, b) += xa * (samples(i, b) - pc.mean[static_cast<size_t>(b)]) / double(n);
        }
    for (int64_t a = 0; a < f; ++a)
        for (int64_t b = 0; b < a; ++b) covariance(a, b) = covariance(b, a);
    // [/snippet:pca-covariance]
    double trace = 0;
    for (int64_t a = 0; a < f; ++a) trace += covariance(a, a);

    std::vector<double> eigenvalues;
    Matrix eigenvectors;
    jacobi_eigen(covariance, eigenvalues, eigenvectors);
    std::vector<int64_t> order(static_cast<size_t>(f));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return eigenvalues[static_cast<size_t>(a)] > eigenvalues[static_cast<size_t>(b)];
    });

    pc.components = Matrix(count, f);
    for (int64_t c = 0; c < count; ++c) {
        const int64_t col = order[static_cast<size_t>(c)];
        int64_t largest = 0;
        for (int64_t k = 0; k < f; ++k)
            if (std::abs(eigenvectors(k, col)) > std::abs(eigenvectors(largest, col))) largest = k;
        const double sign = eigenvectors(largest, col) < 0 ? -1 : 1;
        for (int64_t k = 0; k < f; ++k) pc.components(c, k) = sign * eigenvectors(k, col);
        // A covariance has no negative eigenvalues; rounding can leave a -1e-18.
        const double variance = std::max(0.0, eigenvalues[static_cast<size_t>(col)]);
        pc.variance.push_back(variance);
        pc.explained.push_back(trace > 0 ? variance / trace : 0);
    }
    return pc;
}

Matrix embedding_filters(const VisionTransformer& model) {
    const Tensor& w = model.patch_embed->proj->weight;  // [D, C*P*P]
    Matrix m(w.size(0), w.size(1));
    for (int64_t i = 0; i < w.numel(); ++i) m.values[static_cast<size_t>(i)] = double(w.data()[i]);
    return m;
}

std::vector<Tensor> record_attention_maps(VisionTransformer& model, const Tensor& images) {
    AttentionRecording recording(model);
    NoGradGuard no_grad;
    model.forward(images);
    return model.attention_maps();
}

// ---- the pictures --------------------------------------------------------------------

Image to_image(const ImageSet& set, int64_t index) {
    check(index >= 0 && index < set.size(), "to_image: image ", index, " is out of range: the set has ", set.size(),
          " images");
    check(set.channels == 1 || set.channels == 3, "to_image: images with ", set.channels,
          " channels cannot be drawn, only 1 (grey) or 3 (RGB)");
    Image image = make_image(static_cast<int>(set.width), static_cast<int>(set.height));
    const uint8_t* p = set.image(index);
    const int64_t plane = set.height * set.width;
    for (int64_t y = 0; y < set.height; ++y)
        for (int64_t x = 0; x < set.width; ++x) {
            const int64_t i = y * set.width + x;
            const uint8_t r = p[i];
            const uint8_t g = set.channels == 3 ? p[plane + i] : r, b = set.channels == 3 ? p[2 * plane + i] : r;
            set_pixel(image, static_cast<int>(x), static_cast<int>(y), {r, g, b});
        }
    return image;
}

Image patches_picture(const Image& image, const PatchGrid& grid, const std::string& caption) {
    check_grid(grid, "patches_picture");
    check(image.width == grid.cols * grid.patch && image.height == grid.rows * grid.patch, "patches_picture: image ",
          image.width, "x", image.height, " is not the ", grid.rows, "x", grid.cols, " grid of patch ", grid.patch);
    // Left: the image enlarged (every patch at least 24 pixels, room for its number), the
    // grid drawn between the patches, each numbered in its top-left corner.
    const int scale = display_scale(grid, 256, 24), cell = static_cast<int>(grid.patch) * scale;
    Image big = enlarge(image, scale);
    for (int64_t c = 1; c < grid.cols; ++c) draw_line(big, int(c) * cell, 0, int(c) * cell, big.height - 1, kGridLine);
    for (int64_t r = 1; r < grid.rows; ++r) draw_line(big, 0, int(r) * cell, big.width - 1, int(r) * cell, kGridLine);
    for (int64_t i = 0; i < grid.size(); ++i) {
        const int x = int(i % grid.cols) * cell + 1, y = int(i / grid.cols) * cell + 1;
        const std::string label = str(i + 1);
        fill_rect(big, x, y, text_width(label) + 3, text_height() + 1, kBlack);
        draw_text(big, x + 2, y + 1, label, kWhite);
    }
    const Image left = titled({"the image, cut into " + str(grid.rows) + "x" + str(grid.cols) + " patches"}, big, 0);

    // Right: the patches in sequence order, as the Patcher hands them to E.
    const int tile_scale = display_scale(grid, 0, 24);
    std::vector<Image> tiles;
    for (int64_t i = 0; i < grid.size(); ++i) {
        const Image patch = crop(image, int(i % grid.cols * grid.patch), int(i / grid.cols * grid.patch),
                                 int(grid.patch), int(grid.patch));
        tiles.push_back(vconcat({enlarge(patch, tile_scale), text_image(str(i + 1))}, 2));
    }
    const int columns = static_cast<int>(std::min<int64_t>(grid.size(), 16));
    const Image right =
        titled({"the token sequence x_p^1 ... x_p^" + str(grid.size()) + ", row by row (the class token is prepended)"},
               patchgrad::grid(tiles, columns, 6), 0);
    return pad(
        titled({caption, str(grid.size()) + " patches of " + str(grid.patch) + "x" + str(grid.patch) + " pixels"},
               hconcat({left, right}, 24, kWhite)),
        kMargin);
}

Image position_similarity_picture(const Matrix& similarity, const PatchGrid& grid, const std::string& caption) {
    check_grid(grid, "position_similarity_picture");
    const int64_t n = grid.size();
    check(similarity.rows == n && similarity.cols == n, "position_similarity_picture: similarity is [", similarity.rows,
          ", ", similarity.cols, "], the ", grid.rows, "x", grid.cols, " patch grid needs [", n, ", ", n, "]");
    // Cells of 2 to 16 pixels, so that the whole grid of grids is about 320 pixels across.
    const int64_t side = std::max(grid.rows, grid.cols);
    const int cell = static_cast<int>(std::clamp<int64_t>(320 / (side * side), 2, 16)), gap = 4;
    const int tile_w = static_cast<int>(grid.cols) * cell, tile_h = static_cast<int>(grid.rows) * cell;
    const int text_h = text_height(), row_label_w = text_width(str(grid.rows));
    const int left = text_h + 6 + row_label_w + 4, top = text_h + 6 + text_h + 3;
    const int tiles_w = int(grid.cols) * (tile_w + gap) - gap, tiles_h = int(grid.rows) * (tile_h + gap) - gap;

    Image body = make_image(left + tiles_w, top + tiles_h);
    for (int64_t r = 0; r < grid.rows; ++r)
        for (int64_t c = 0; c < grid.cols; ++c) {
            const int64_t i = r * grid.cols + c;
            const std::vector<double> row(similarity.values.begin() + i * n, similarity.values.begin() + (i + 1) * n);
            const int x = left + int(c) * (tile_w + gap), y = top + int(r) * (tile_h + gap);
            blit(body, heatmap(row, int(grid.rows), int(grid.cols), cell, -1, 1, Colormap::Diverging), x, y);
            draw_rect(body, x - 1, y - 1, tile_w + 2, tile_h + 2, kTileFrame);  // pale tiles would merge into the white
        }
    for (int64_t c = 0; c < grid.cols; ++c) {
        const std::string label = str(c + 1);
        draw_text(body, left + int(c) * (tile_w + gap) + (tile_w - text_width(label)) / 2, text_h + 6, label, kBlack);
    }
    for (int64_t r = 0; r < grid.rows; ++r) {
        const std::string label = str(r + 1);
        draw_text(body, left - 4 - text_width(label), top + int(r) * (tile_h + gap) + tile_h / 2 - 3, label, kBlack);
    }
    const std::string column_title = "input patch column", row_title = "input patch row";
    draw_text(body, left + (tiles_w - text_width(column_title)) / 2, 0, column_title, kBlack);
    draw_text_vertical(body, 0, top + (tiles_h - text_width(row_title)) / 2, row_title, kBlack);

    // The colour bar beside the tiles, its ends level with theirs (it has half a label of
    // room above its top).
    const Image bar = colorbar(Colormap::Diverging, -1, 1, tiles_h, 14);
    Image picture = make_image(body.width + 16 + bar.width, std::max(body.height, top - text_h / 2 + bar.height));
    blit(picture, body, 0, 0);
    blit(picture, bar, body.width + 16, top - text_h / 2);
    return pad(titled({"Position embedding similarity", caption,
                       "tile (row r, column c): cosine similarity of that patch's position embedding",
                       "with every patch's, laid out like the patches (paper Fig. 7, centre)"},
                      picture),
               kMargin);
}

Image attention_picture(const Image& image, const std::vector<Tensor>& attention, int64_t index, const PatchGrid& grid,
                        const std::string& caption) {
    check_grid(grid, "attention_picture");
    const AttentionShape s = check_attention(attention, "attention_picture");
    check(
        s.tokens == grid.size() + 1 && image.width == grid.cols * grid.patch && image.height == grid.rows * grid.patch,
        "attention_picture: attention maps ", attention[0].shape(), " and image ", image.width, "x", image.height,
        " do not fit the ", grid.rows, "x", grid.cols, " grid of patch ", grid.patch);
    const Matrix rollout = attention_rollout(attention, index);  // checks the index
    const int scale = display_scale(grid);
    const Image big = enlarge(image, scale);
    const int64_t layers = static_cast<int64_t>(attention.size());

    std::vector<Image> panels = {titled({"input", ""}, big, 0)};
    for (int64_t h = 0; h < s.heads; ++h) {
        const std::vector<double> map = class_token_attention(attention.back(), index, h);
        panels.push_back(titled({"layer " + str(layers) + ", head " + str(h + 1),
                                 "max " + short_number(*std::max_element(map.begin(), map.end()))},
                                overlay(big, map, grid, scale), 0));
    }
    const std::vector<double> flow(rollout.values.begin() + 1, rollout.values.begin() + rollout.cols);
    panels.push_back(titled({"rollout, " + str(layers) + " layer" + (layers == 1 ? "" : "s"),
                             "max " + short_number(*std::max_element(flow.begin(), flow.end()))},
                            overlay(big, flow, grid, scale), 0));
    const Image body = patchgrad::grid(panels, static_cast<int>(std::min<size_t>(panels.size(), 6)), 12);
    const Image bar = titled({"/ max"}, colorbar(Colormap::Viridis, 0, 1, big.height, 14), 0);
    return pad(
        titled({caption, "the class token's attention to every patch: each head of the last layer, and the attention",
                "rollout through all layers (Abnar & Zuidema 2020); every map in viridis over the image,",
                "scaled to its own maximum (uniform attention would be 1/" + str(s.tokens) + " = " +
                    short_number(1.0 / double(s.tokens)) + " everywhere)"},
               hconcat({body, bar}, 16)),
        kMargin);
}

Image attention_distance_picture(const Matrix& distance, const PatchGrid& grid, const std::string& caption) {
    Series heads{"heads, one dot each", {}, {}, true};
    for (int64_t l = 0; l < distance.rows; ++l)
        for (int64_t h = 0; h < distance.cols; ++h) {
            heads.x.push_back(double(l + 1));
            heads.y.push_back(distance(l, h));
        }
    // The two ends of the scale as lines from depth 0 (the embedding) to the last layer:
    // attention spread evenly over the image, and attention kept on the query's own patch.
    // The second also puts 0 on the axis, so that heads that all sit near the uniform value
    // do not look spread out. The dots come last, drawn on top. The lines reach depth 4 at
    // least: over a shorter axis the ticks would fall between layers (0.5, 1.5, ...).
    const double uniform = mean_patch_distance(grid), last = double(std::max<int64_t>(distance.rows, 4));
    const Series spread{"uniform attention: " + short_number(uniform) + " px", {0, last}, {uniform, uniform}, false};
    const Series own{"own patch only: 0 px", {0, last}, {0, 0}, false};
    const Image chart = line_chart("Mean attention distance", "network depth (layer)",
                                   "mean attention distance (pixels)", {spread, own, heads}, 640, 400);
    return pad(titled({caption,
                       "per head: the attention-weighted distance from each query patch to the patches it "
                       "attends to (paper Fig. 7, right)"},
                      chart, 0),
               kMargin);
}

Image embedding_filters_picture(const PrincipalComponents& pcs, int64_t channels, int64_t patch_size,
                                const std::string& caption) {
    const int64_t plane = patch_size * patch_size, f = channels * plane;
    if ((channels != 1 && channels != 3) || patch_size < 1 || pcs.components.cols != f || pcs.components.rows < 1 ||
        static_cast<int64_t>(pcs.explained.size()) != pcs.components.rows)
        fail("embedding_filters_picture: ", pcs.components.rows, " components of ", pcs.components.cols,
             " values cannot be drawn as ", channels, "-channel (1 or 3) ", patch_size, "x", patch_size, " patches");
    const int p = static_cast<int>(patch_size), scale = std::max(1, (48 + p - 1) / p);
    std::vector<Image> tiles;
    for (int64_t c = 0; c < pcs.components.rows; ++c) {
        const auto begin = pcs.components.values.begin() + c * f;
        const auto [lo, hi] = std::minmax_element(begin, begin + f);
        auto byte = [&, lo = *lo, hi = *hi](int64_t k) {
            const double v = pcs.components(c, k);
            return static_cast<uint8_t>(hi > lo ? std::lround(255 * (v - lo) / (hi - lo)) : 128);
        };
        Image tile = make_image(p, p);
        for (int y = 0; y < p; ++y)
            for (int x = 0; x < p; ++x) {
                const int64_t k = int64_t(y) * p + x;
                const uint8_t r = byte(k);
                const uint8_t g = channels == 3 ? byte(plane + k) : r, b = channels == 3 ? byte(2 * plane + k) : r;
                set_pixel(tile, x, y, {r, g, b});
            }
        const std::string label = str(c + 1) + ": " + percent(pcs.explained[static_cast<size_t>(c)]);
        tiles.push_back(vconcat({enlarge(tile, scale), text_image(label)}, 3));
    }
    return pad(titled({"Embedding filters", caption,
                       "principal components of E's " + str(f) + "-value rows (C*P*P), largest first, each as a " +
                           str(channels) + "x" + str(patch_size) + "x" + str(patch_size) + " patch",
                       "stretched to [0, 255] on its own; % = its share of the variance (paper Fig. 7, left)"},
                      patchgrad::grid(tiles, 7, 10)),
               kMargin);
}

// ---- an inspection -------------------------------------------------------------------

void check_inspection(const ViTConfig& config, const ImageSet& set, const InspectOptions& options) {
    if (options.image < 0 || options.image >= set.size())
        throw std::invalid_argument("write_inspection: image " + str(options.image) + " is out of range: " +
                                    (set.size() == 0
                                         ? std::string("the set has no images")
                                         : "the set has " + str(set.size()) + " images, 0 to " + str(set.size() - 1)));
    check_image_shape(set, {config.channels, config.image_height, config.image_width}, "write_inspection",
                      "model " + config.name + " takes");
    check(options.distance_images >= 1 && options.components >= 1 && options.batch >= 1,
          "write_inspection: distance_images ", options.distance_images, ", components ", options.components,
          " and batch ", options.batch, " must all be positive");
}

void check_inspection_out(const std::string& out_dir) {
    for (const char* name :
         {"patches.png", "pos_similarity.png", "attention.png", "attention_distance.png", "embedding_filters.png"}) {
        const std::string path = (std::filesystem::path(out_dir) / name).string();
        const std::string problem = png_replace_problem(path);
        check(problem.empty(), "write_inspection: ", path, " ", problem, ": it is not replaced with a picture");
    }
}

Inspection write_inspection(VisionTransformer& model, const ImageSet& set, const ChannelStats& stats,
                            const std::string& out_dir, const InspectOptions& options) {
    namespace fs = std::filesystem;
    const ViTConfig& config = model.config;
    check_inspection(config, set, options);
    check_inspection_out(out_dir);
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec || !fs::is_directory(out_dir))
        fail<std::runtime_error>("write_inspection: cannot create the output directory '", out_dir,
                                 "': ", ec ? ec.message() : "a file of that name exists");

    const PatchGrid grid = PatchGrid::of(config);
    const std::string model_name = options.model_name.empty() ? config.name : options.model_name;
    const int64_t label = set.labels[static_cast<size_t>(options.image)];
    const std::string image_name =
        !options.image_name.empty()
            ? options.image_name
            : "image " + str(options.image) +
                  (label < set.num_classes() ? " (" + set.class_names[static_cast<size_t>(label)] + ")" : "");
    Inspection result;
    auto write = [&](const Image& picture, const char* name) {
        const std::string path = (fs::path(out_dir) / name).string();
        save(picture, path);
        result.files.push_back(path);
    };

    const Image image = to_image(set, options.image);
    write(patches_picture(image, grid, image_name), "patches.png");
    write(position_similarity_picture(cosine_similarity_matrix(patch_position_embeddings(model)), grid, model_name),
          "pos_similarity.png");
    write(attention_picture(image, record_attention_maps(model, to_tensor(set.subset({options.image}), stats)), 0, grid,
                            model_name + ": " + image_name),
          "attention.png");

    // Batch by batch, so that the maps of all images ([B, heads, T, T] per layer) never
    // need to be in memory at once; each batch's mean counts by its number of images.
    const int64_t count = std::min(options.distance_images, set.size());
    for (int64_t start = 0; start < count; start += options.batch) {
        std::vector<int64_t> indices(static_cast<size_t>(std::min(options.batch, count - start)));
        std::iota(indices.begin(), indices.end(), start);
        const Matrix batch_mean =
            mean_attention_distance(record_attention_maps(model, to_tensor(set.subset(indices), stats)), grid);
        if (start == 0) result.attention_distance = Matrix(batch_mean.rows, batch_mean.cols);
        for (size_t i = 0; i < batch_mean.values.size(); ++i)
            result.attention_distance.values[i] += batch_mean.values[i] * double(indices.size()) / double(count);
    }
    write(attention_distance_picture(result.attention_distance, grid,
                                     model_name + ": mean over the first " + str(count) + " images"),
          "attention_distance.png");

    const Matrix filters = embedding_filters(model);
    result.filters = principal_components(filters, std::min(options.components, filters.cols));
    write(embedding_filters_picture(result.filters, config.channels, config.patch_size, model_name),
          "embedding_filters.png");
    return result;
}

}  // namespace patchgrad
