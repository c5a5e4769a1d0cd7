// Tests for vit/inspect.cpp: the analyses against hand-made cases and independent brute-force
// references (cosine similarity, attention rollout, mean attention distance, principal
// components), the pictures of a tiny model written as PNGs of the drawn size, and the
// one-line errors of an inspection.
#include "patchgrad/vit/inspect.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "catch.h"
#include "datasets/datasets_test_util.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "test_util.h"
#include "vit/trainer_test_util.h"
#include "vit/vit_test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;
namespace fs = std::filesystem;

// A [1, 1, T, T] attention map (one image, one head) from its rows.
Tensor one_map(const std::vector<std::vector<real>>& rows) {
    std::vector<real> v;
    for (const auto& r : rows) v.insert(v.end(), r.begin(), r.end());
    const int64_t t = static_cast<int64_t>(rows.size());
    return Tensor::from_vector({1, 1, t, t}, v);
}

// [B, heads, T, T] with every row the same distribution `row` over the T tokens.
Tensor same_rows(int64_t batch, int64_t heads, const std::vector<real>& row) {
    const int64_t t = static_cast<int64_t>(row.size());
    std::vector<real> v;
    for (int64_t i = 0; i < batch * heads * t; ++i) v.insert(v.end(), row.begin(), row.end());
    return Tensor::from_vector({batch, heads, t, t}, v);
}

Tensor identity_maps(int64_t batch, int64_t heads, int64_t t) {
    Tensor a = Tensor::zeros({batch, heads, t, t});
    for (int64_t m = 0; m < batch * heads; ++m)
        for (int64_t i = 0; i < t; ++i) a.data()[(m * t + i) * t + i] = 1;
    return a;
}

// Random row-stochastic maps [B, heads, T, T] (positive entries, rows normalised).
Tensor random_maps(int64_t batch, int64_t heads, int64_t t, Rng& rng) {
    Tensor a = Tensor::uniform({batch, heads, t, t}, real(0.01), 1, rng);
    for (int64_t r = 0; r < batch * heads * t; ++r) {
        real* row = a.data() + r * t;
        const real s = std::accumulate(row, row + t, real(0));
        for (int64_t j = 0; j < t; ++j) row[j] /= s;
    }
    return a;
}

void require_matrix_close(const Matrix& actual, const Matrix& expected, double tol = 1e-12) {
    REQUIRE(actual.rows == expected.rows);
    REQUIRE(actual.cols == expected.cols);
    for (size_t i = 0; i < actual.values.size(); ++i) {
        INFO("element " << i << " (row " << int64_t(i) / actual.cols << ")");
        CHECK(actual.values[i] == Approx(expected.values[i]).margin(tol));
    }
}

// Width and height from a PNG's IHDR, after checking the 8-byte signature.
std::pair<uint32_t, uint32_t> png_size(const std::string& path) {
    const std::string bytes = read_bytes(path);
    REQUIRE(bytes.size() > 24);
    CHECK(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
    CHECK(bytes.substr(12, 4) == "IHDR");
    auto be32 = [&](size_t at) {
        uint32_t v = 0;
        for (size_t k = 0; k < 4; ++k) v = v << 8 | static_cast<uint8_t>(bytes[at + k]);
        return v;
    };
    return {be32(16), be32(20)};
}

// 32x32 CIFAR images, patch 8 (a 4x4 grid), dim 16, depth 2, heads 2: an inspection in milliseconds.
ViTConfig tiny_config() {
    ViTConfig c = tiny_vit_config();
    c.name = "inspect-tiny";
    c.depth = 2;
    return c;
}

TEST_CASE("inspect: cosine_similarity_matrix against hand values, symmetric with 1 on the diagonal", "[vit][inspect]") {
    Matrix v(3, 2);
    v.values = {1, 0, 2, 2, -3, 0};
    const Matrix s = cosine_similarity_matrix(v);
    Matrix expected(3, 3);
    const double r = 1 / std::sqrt(2.0);
    expected.values = {1, r, -1, r, 1, -r, -1, -r, 1};
    require_matrix_close(s, expected);

    // A model's position embeddings: rows 1..N of the table (the class token left out).
    Rng rng(3);
    VisionTransformer model(small_config(), 1);
    scramble_parameters(model, rng);
    const Matrix pos = patch_position_embeddings(model);
    REQUIRE(pos.rows == small_config().num_patches());
    REQUIRE(pos.cols == small_config().dim);
    CHECK(pos(0, 0) == double(model.pos_encoding->table.at({0, 1, 0})));
    CHECK(pos(5, 7) == double(model.pos_encoding->table.at({0, 6, 7})));
    const Matrix sim = cosine_similarity_matrix(pos);
    for (int64_t i = 0; i < sim.rows; ++i) {
        CHECK(sim(i, i) == Approx(1).margin(1e-15));
        for (int64_t j = 0; j < sim.cols; ++j) {
            CHECK(sim(i, j) == sim(j, i));
            CHECK(std::abs(sim(i, j)) <= 1);
        }
    }
    // The sinusoidal table is not random: neighbouring positions are more alike than far ones.
    ViTConfig fixed = small_config();
    fixed.learnable_pos_embed = false;
    const Matrix sin_sim = cosine_similarity_matrix(patch_position_embeddings(VisionTransformer(fixed, 1)));
    CHECK(sin_sim(0, 1) > sin_sim(0, 5));

    Matrix zero(2, 3);
    zero.values = {1, 2, 3, 0, 0, 0};
    require_error([&] { cosine_similarity_matrix(zero); }, {"cosine_similarity_matrix", "row 1", "[2, 3]", "norm 0"});
}

TEST_CASE("inspect: recorded attention rows sum to 1, and the model's mode is restored", "[vit][inspect]") {
    Rng rng(5);
    VisionTransformer model(tiny_config(), 2);
    scramble_parameters(model, rng);
    model.train();
    const ImageSet set = synthetic_cifar10(3, 4);
    const std::vector<Tensor> maps = record_attention_maps(model, to_tensor(set, ChannelStats::cifar10()));
    CHECK(model.training());
    REQUIRE(maps.size() == 2);
    for (const Tensor& a : maps) {
        REQUIRE(a.shape() == Shape{3, 2, 17, 17});
        CHECK_FALSE(a.requires_grad());
        for (int64_t r = 0; r < 3 * 2 * 17; ++r) {
            double sum = 0;
            for (int64_t j = 0; j < 17; ++j) {
                CHECK(a.data()[r * 17 + j] >= 0);
                sum += a.data()[r * 17 + j];
            }
            CHECK(sum == Approx(1).margin(1e-12));
        }
    }
    // Recording is off again: a forward keeps no maps.
    model.forward(to_tensor(synthetic_cifar10(1, 9), ChannelStats::cifar10()));
    CHECK_FALSE(model.attention_maps()[0].defined());
    // Eval mode, no dropout: the same images give the same maps.
    const std::vector<Tensor> again = record_attention_maps(model, to_tensor(set, ChannelStats::cifar10()));
    CHECK(max_abs_difference(again[1], maps[1]) == 0);
}

TEST_CASE("inspect: attention_rollout multiplies rownorm(mean of heads + I) through the layers", "[vit][inspect]") {
    SECTION("identity attention: R = I, the class token's row is one-hot on itself") {
        const Matrix r = attention_rollout({identity_maps(2, 3, 5), identity_maps(2, 3, 5)}, 1);
        Matrix eye(5, 5);
        for (int64_t i = 0; i < 5; ++i) eye(i, i) = 1;
        require_matrix_close(r, eye, 0);
        CHECK(r(0, 0) == 1);
        for (int64_t j = 1; j < 5; ++j) CHECK(r(0, j) == 0);  // nothing flows from any patch
    }
    SECTION("a layer of identity attention leaves the rollout of the others unchanged") {
        Rng rng(7);
        const Tensor a1 = random_maps(2, 3, 6, rng), a2 = random_maps(2, 3, 6, rng), eye = identity_maps(2, 3, 6);
        const Matrix plain = attention_rollout({a1, a2}, 0);
        require_matrix_close(attention_rollout({eye, a1, a2}, 0), plain);
        require_matrix_close(attention_rollout({a1, eye, a2}, 0), plain);
        require_matrix_close(attention_rollout({a1, a2, eye}, 0), plain);
        for (int64_t i = 0; i < plain.rows; ++i) {  // a product of row-stochastic matrices
            double sum = 0;
            for (int64_t j = 0; j < plain.cols; ++j) sum += plain(i, j);
            CHECK(sum == Approx(1).margin(1e-12));
        }
    }
    SECTION("two tokens, two heads, two layers by hand") {
        // Layer 1: heads [[1, 0], [0.5, 0.5]] and [[0, 1], [0.5, 0.5]]: mean [[0.5, 0.5], [0.5, 0.5]],
        // + I = [[1.5, 0.5], [0.5, 1.5]], rows / 2: Ahat_1 = [[0.75, 0.25], [0.25, 0.75]].
        // Layer 2: one head, heads averaged over 2 identical: [[0, 1], [1, 0]] + I, rows / 2:
        // Ahat_2 = [[0.5, 0.5], [0.5, 0.5]]. R = Ahat_2 Ahat_1 = [[0.5, 0.5], [0.5, 0.5]].
        const Tensor l1 = Tensor::from_vector({1, 2, 2, 2}, {1, 0, 0.5, 0.5, 0, 1, 0.5, 0.5});
        const Tensor l2 = Tensor::from_vector({1, 2, 2, 2}, {0, 1, 1, 0, 0, 1, 1, 0});
        Matrix expected(2, 2, 0.5);
        require_matrix_close(attention_rollout({l1, l2}, 0), expected);
        // Order matters: R = Ahat_L ... Ahat_1, the last layer on the left.
        const Tensor s1 = Tensor::from_vector({1, 1, 2, 2}, {1, 0, 1, 0});  // everyone reads token 0
        const Tensor s2 = Tensor::from_vector({1, 1, 2, 2}, {0, 1, 0, 1});  // everyone reads token 1
        // Ahat(s1) = [[1, 0], [0.5, 0.5]], Ahat(s2) = [[0.5, 0.5], [0, 1]].
        Matrix s2_after_s1(2, 2);  // Ahat(s2) Ahat(s1)
        s2_after_s1.values = {0.75, 0.25, 0.5, 0.5};
        require_matrix_close(attention_rollout({s1, s2}, 0), s2_after_s1);
    }
    SECTION("each image of the batch has its own rollout") {
        Rng rng(8);
        Tensor two = random_maps(2, 1, 3, rng);
        const Tensor first = Tensor::from_vector({1, 1, 3, 3}, std::vector<real>(two.data(), two.data() + 9));
        const Tensor second = Tensor::from_vector({1, 1, 3, 3}, std::vector<real>(two.data() + 9, two.data() + 18));
        require_matrix_close(attention_rollout({two}, 0), attention_rollout({first}, 0));
        require_matrix_close(attention_rollout({two}, 1), attention_rollout({second}, 0));
    }
    SECTION("errors") {
        require_error([] { attention_rollout({}, 0); }, {"attention_rollout", "0 layers"});
        require_error(
            [] {
                attention_rollout({identity_maps(1, 2, 5), identity_maps(1, 2, 4)}, 0);
            },
            {"attention_rollout", "layer 1", "[1, 2, 4, 4]", "[1, 2, 5, 5]"});
        require_error(
            [] {
                attention_rollout({Tensor::zeros({1, 2, 5, 4})}, 0);
            },
            {"attention_rollout", "[1, 2, 5, 4]", "[B, heads, T, T]"});
        require_error([] { attention_rollout({identity_maps(2, 1, 3)}, 2); },
                      {"attention_rollout", "image 2", "batch of 2"});
        require_error([] { attention_rollout({Tensor()}, 0); }, {"attention_rollout", "layer 0", "record_attention"});
    }
}

TEST_CASE("inspect: class_token_attention is row 0 of a head without the class token", "[vit][inspect]") {
    Rng rng(9);
    const Tensor a = random_maps(2, 3, 4, rng);
    const std::vector<double> row = class_token_attention(a, 1, 2);
    REQUIRE(row.size() == 3);
    for (int64_t j = 0; j < 3; ++j) CHECK(row[size_t(j)] == double(a.at({1, 2, 0, j + 1})));
    require_error([&] { class_token_attention(a, 0, 3); }, {"class_token_attention", "head 3", "[2, 3, 4, 4]"});
}

// The mean over all ordered pairs of patch centres of their distance, by brute force over
// pixel coordinates: patch (r, c) covers pixels [c P, (c+1) P) x [r P, (r+1) P), whose
// centre is the mean of its pixel coordinates plus half a pixel.
double brute_force_mean_distance(int64_t rows, int64_t cols, int64_t p) {
    std::vector<std::pair<double, double>> centres;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            double sx = 0, sy = 0;
            for (int64_t y = r * p; y < (r + 1) * p; ++y)
                for (int64_t x = c * p; x < (c + 1) * p; ++x) {
                    sx += x + 0.5;
                    sy += y + 0.5;
                }
            centres.push_back({sx / double(p * p), sy / double(p * p)});
        }
    double total = 0;
    for (const auto& a : centres)
        for (const auto& b : centres) {
            const double dx = a.first - b.first, dy = a.second - b.second;
            total += std::sqrt(dx * dx + dy * dy);
        }
    return total / double(centres.size() * centres.size());
}

TEST_CASE("inspect: mean attention distance of uniform attention is the mean distance between patch centres",
          "[vit][inspect]") {
    for (auto [rows, cols, p] : {std::tuple<int64_t, int64_t, int64_t>{2, 3, 4}, {4, 4, 8}, {8, 8, 4}, {1, 5, 2}}) {
        INFO(rows << "x" << cols << " patches of " << p);
        const PatchGrid grid{rows, cols, p};
        const int64_t t = rows * cols + 1;
        const double expected = brute_force_mean_distance(rows, cols, p);
        CHECK(mean_patch_distance(grid) == Approx(expected).epsilon(1e-12));
        // Uniform over all T tokens, the class token included: its share is dropped and the
        // rest renormalised, which leaves uniform attention over the patches.
        const Tensor uniform = same_rows(3, 2, std::vector<real>(size_t(t), real(1) / real(t)));
        const Matrix d = mean_attention_distance({uniform, uniform, uniform}, grid);
        REQUIRE(d.rows == 3);
        REQUIRE(d.cols == 2);
        for (double v : d.values) CHECK(v == Approx(expected).epsilon(1e-12));
    }
}

TEST_CASE("inspect: mean attention distance by hand: weighted, class token left out, averaged over queries and images",
          "[vit][inspect]") {
    // One row of two patches 4 pixels wide: centres 4 pixels apart.
    const PatchGrid grid{1, 2, 4};
    // Attention to itself only: distance 0. To the other patch only: 4.
    CHECK(mean_attention_distance({identity_maps(1, 1, 3)}, grid)(0, 0) == 0);
    CHECK(mean_attention_distance({one_map({{1, 0, 0}, {0, 0, 1}, {0, 1, 0}})}, grid)(0, 0) == Approx(4));
    // Query patch 1 gives 0.5 to the class token, 0.25 to itself and 0.25 to patch 2: the
    // weighted mean over the patches is (0.25 * 0 + 0.25 * 4) / 0.5 = 2. Query patch 2
    // gives 0.1 to patch 1 and 0.9 to itself: 0.4. Their mean: 1.2. The class token's own
    // row (token 0) does not count.
    const Tensor a = one_map({{0, 0, 1}, {0.5, 0.25, 0.25}, {0, 0.1, 0.9}});
    CHECK(mean_attention_distance({a}, grid)(0, 0) == Approx(1.2));
    // Averaged over images: a second image with distance 4 everywhere gives (1.2 + 4) / 2.
    const Tensor far = one_map({{1, 0, 0}, {0, 0, 1}, {0, 1, 0}});
    std::vector<real> both(a.data(), a.data() + 9);
    both.insert(both.end(), far.data(), far.data() + 9);
    CHECK(mean_attention_distance({Tensor::from_vector({2, 1, 3, 3}, both)}, grid)(0, 0) == Approx(2.6));
    // A query that attends only to the class token has no distance and is left out.
    const Tensor only_cls = one_map({{1, 0, 0}, {1, 0, 0}, {0, 1, 0}});
    CHECK(mean_attention_distance({only_cls}, grid)(0, 0) == Approx(4));
    // Diagonal neighbours on a 2x2 grid of patch 3: sqrt(3^2 + 3^2).
    const Tensor diagonal =
        one_map({{1, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 0}, {0, 0, 1, 0, 0}, {0, 1, 0, 0, 0}});
    CHECK(mean_attention_distance({diagonal}, PatchGrid{2, 2, 3})(0, 0) == Approx(3 * std::sqrt(2.0)));
    // A 2x3 grid of patch 2 (patches 1-3 on top, 4-6 below): each patch attends to the one
    // in the other row of its column, 2 pixels away; then to the one two columns on, if any.
    std::vector<std::vector<real>> other_row(7, std::vector<real>(7, 0)), two_on(7, std::vector<real>(7, 0));
    other_row[0][0] = two_on[0][0] = 1;
    for (int64_t q = 0; q < 6; ++q) {
        other_row[size_t(q + 1)][size_t((q + 3) % 6 + 1)] = 1;
        const int64_t column = q % 3, target = column + 2 < 3 ? q + 2 : q;  // patches 1 and 4 reach 3 and 6
        two_on[size_t(q + 1)][size_t(target + 1)] = 1;
    }
    CHECK(mean_attention_distance({one_map(other_row)}, PatchGrid{2, 3, 2})(0, 0) == Approx(2));
    CHECK(mean_attention_distance({one_map(two_on)}, PatchGrid{2, 3, 2})(0, 0) == Approx(2 * 4.0 / 6));

    require_error(
        [] {
            mean_attention_distance({identity_maps(1, 1, 5)}, PatchGrid{2, 3, 4});
        },
        {"mean_attention_distance", "[1, 1, 5, 5]", "5 tokens", "2x3", "7"});
    require_error(
        [] {
            mean_attention_distance({identity_maps(1, 1, 3)}, PatchGrid{0, 2, 4});
        },
        {"mean_attention_distance", "0x2"});
}

// The unit vector u normalised.
std::vector<double> unit(std::vector<double> u) {
    double n = 0;
    for (double x : u) n += x * x;
    for (double& x : u) x /= std::sqrt(n);
    return u;
}

double dot(const double* a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < b.size(); ++i) s += a[i] * b[i];
    return s;
}

TEST_CASE("inspect: principal_components finds known principal directions, orthonormal, largest first",
          "[vit][inspect]") {
    // Three orthonormal directions in R^4 (not the axes) and samples mean +- 3 u1, +- 2 u2,
    // +- 1 u3: covariance (1/6)(2 * 9 u1 u1^T + 2 * 4 u2 u2^T + 2 * 1 u3 u3^T), eigenvalues
    // 3, 4/3, 1/3 and 0, of total 14/3.
    const std::vector<double> u1 = unit({1, 1, 1, 1}), u2 = unit({1, -1, 1, -1}), u3 = unit({1, 1, -1, -1});
    const std::vector<double> mean = {5, -2, 0.5, 1};
    Matrix samples(6, 4);
    int64_t row = 0;
    for (auto [u, a] : {std::pair{u1, 3.0}, {u2, 2.0}, {u3, 1.0}})
        for (double sign : {1.0, -1.0}) {
            for (int64_t k = 0; k < 4; ++k) samples(row, k) = mean[size_t(k)] + sign * a * u[size_t(k)];
            ++row;
        }
    const PrincipalComponents pc = principal_components(samples, 3);
    REQUIRE(pc.components.rows == 3);
    REQUIRE(pc.components.cols == 4);
    CHECK(pc.variance[0] == Approx(3));
    CHECK(pc.variance[1] == Approx(4.0 / 3));
    CHECK(pc.variance[2] == Approx(1.0 / 3));
    CHECK(pc.explained[0] == Approx(9.0 / 14));
    CHECK(pc.explained[1] == Approx(4.0 / 14));
    CHECK(pc.explained[2] == Approx(1.0 / 14));
    for (int64_t k = 0; k < 4; ++k) CHECK(pc.mean[size_t(k)] == Approx(mean[size_t(k)]));
    // Each component is its direction (the sign makes the largest entry positive: u1 and u3
    // have ties, so only |<c, u>| is fixed there).
    CHECK(std::abs(dot(&pc.components.values[0], u1)) == Approx(1));
    CHECK(std::abs(dot(&pc.components.values[4], u2)) == Approx(1));
    CHECK(std::abs(dot(&pc.components.values[8], u3)) == Approx(1));
}

TEST_CASE("inspect: principal_components of random data: orthonormal eigenvectors of the covariance",
          "[vit][inspect]") {
    // Correlated data [40, 12] (D filters of C*P*P = 12 values, patch 2): x = z M.
    Rng rng(11);
    const int64_t n = 40, f = 12;
    Matrix m(f, f), samples(n, f);
    for (double& v : m.values) v = rng.uniform(-1, 1);
    for (int64_t i = 0; i < n; ++i) {
        std::vector<double> z(static_cast<size_t>(f));
        for (double& v : z) v = rng.uniform(-1, 1);
        for (int64_t k = 0; k < f; ++k)
            for (int64_t j = 0; j < f; ++j) samples(i, k) += z[size_t(j)] * m(j, k);
    }
    const PrincipalComponents pc = principal_components(samples, f);
    // The covariance, computed here independently, to check C v = lambda v.
    Matrix cov(f, f);
    for (int64_t a = 0; a < f; ++a)
        for (int64_t b = 0; b < f; ++b) {
            double s = 0;
            for (int64_t i = 0; i < n; ++i)
                s += (samples(i, a) - pc.mean[size_t(a)]) * (samples(i, b) - pc.mean[size_t(b)]);
            cov(a, b) = s / double(n);
        }
    double trace = 0, explained = 0;
    for (int64_t a = 0; a < f; ++a) trace += cov(a, a);
    for (int64_t c = 0; c < f; ++c) {
        INFO("component " << c);
        const double* v = &pc.components.values[size_t(c * f)];
        for (int64_t d = 0; d < f; ++d) {
            const auto other_begin = pc.components.values.begin() + d * f;
            const std::vector<double> other(other_begin, other_begin + f);
            CHECK(dot(v, other) == Approx(c == d ? 1 : 0).margin(1e-12));
        }
        for (int64_t a = 0; a < f; ++a) {
            const std::vector<double> cov_row(cov.values.begin() + a * f, cov.values.begin() + (a + 1) * f);
            CHECK(dot(v, cov_row) == Approx(pc.variance[size_t(c)] * v[a]).margin(1e-10));
        }
        if (c > 0) CHECK(pc.variance[size_t(c)] <= pc.variance[size_t(c - 1)]);
        // The largest-magnitude entry is positive.
        CHECK(*std::max_element(v, v + f, [](double x, double y) { return std::abs(x) < std::abs(y); }) > 0);
        explained += pc.explained[size_t(c)];
    }
    CHECK(explained == Approx(1));
    CHECK(std::accumulate(pc.variance.begin(), pc.variance.end(), 0.0) == Approx(trace));
    // The first explains the most variance of any unit direction: more than each axis.
    for (int64_t a = 0; a < f; ++a) CHECK(pc.variance[0] >= cov(a, a));

    require_error([&] { principal_components(samples, 13); },
                  {"principal_components", "13 components", "12 features", "1 to 12"});
    require_error([&] { principal_components(samples, 0); }, {"principal_components", "0 components"});
    Matrix bad = samples;
    bad(3, 4) = std::nan("");
    require_error([&] { principal_components(bad, 2); }, {"principal_components", "sample 3, feature 4", "nan"});
}

TEST_CASE("inspect: embedding_filters are E's rows, to_image draws the planes", "[vit][inspect]") {
    VisionTransformer model(tiny_config(), 4);
    const Matrix e = embedding_filters(model);
    REQUIRE(e.rows == 16);
    REQUIRE(e.cols == 3 * 8 * 8);
    CHECK(e(2, 100) == double(model.patch_embed->proj->weight.at({2, 100})));

    ImageSet set = random_images(2, 3, 4, 5, 3, 1);
    const Image image = to_image(set, 1);
    REQUIRE(image.width == 5);
    REQUIRE(image.height == 4);
    const uint8_t* p = set.image(1);
    CHECK(get_pixel(image, 3, 2) == Rgb{p[2 * 5 + 3], p[20 + 2 * 5 + 3], p[40 + 2 * 5 + 3]});
    ImageSet grey = random_images(1, 1, 2, 2, 1, 2);
    CHECK(get_pixel(to_image(grey, 0), 1, 0) == Rgb{grey.pixels[1], grey.pixels[1], grey.pixels[1]});
    require_error([&] { to_image(set, 2); }, {"to_image", "image 2", "2 images"});
    require_error([] { to_image(random_images(1, 2, 2, 2, 1, 3), 0); }, {"to_image", "2 channels"});
}

TEST_CASE("inspect: write_inspection writes the five pictures as PNGs of the drawn size", "[vit][inspect]") {
    TempDir dir;
    Rng rng(12);
    VisionTransformer model(tiny_config(), 3);
    scramble_parameters(model, rng);
    const ImageSet set = synthetic_cifar10(10, 5);
    InspectOptions options;
    options.image = 7;
    options.distance_images = 10;
    options.batch = 4;  // 4 + 4 + 2: the last batch counts less
    options.model_name = "tiny test model";
    const Inspection inspection =
        write_inspection(model, set, ChannelStats::cifar10(), dir.file("out/pictures"), options);

    const std::vector<std::string> names = {"patches.png", "pos_similarity.png", "attention.png",
                                            "attention_distance.png", "embedding_filters.png"};
    REQUIRE(inspection.files.size() == names.size());
    // The same pictures drawn here from the same numbers: the files have their sizes.
    const PatchGrid grid = PatchGrid::of(model.config);
    const Image image = to_image(set, 7);
    const std::vector<Tensor> maps = record_attention_maps(model, to_tensor(set.subset({7}), ChannelStats::cifar10()));
    const std::vector<Image> drawn = {
        patches_picture(image, grid, "image 7 (horse)"),
        position_similarity_picture(cosine_similarity_matrix(patch_position_embeddings(model)), grid,
                                    "tiny test model"),
        attention_picture(image, maps, 0, grid, "tiny test model: image 7 (horse)"),
        attention_distance_picture(inspection.attention_distance, grid,
                                   "tiny test model: mean over the first 10 images"),
        embedding_filters_picture(inspection.filters, 3, 8, "tiny test model"),
    };
    for (size_t i = 0; i < names.size(); ++i) {
        INFO(names[i]);
        CHECK(inspection.files[i] == (fs::path(dir.file("out/pictures")) / names[i]).string());
        REQUIRE(fs::exists(inspection.files[i]));
        const auto [w, h] = png_size(inspection.files[i]);
        CHECK(w == uint32_t(drawn[i].width));
        CHECK(h == uint32_t(drawn[i].height));
    }
    // Lower bounds that follow from the layouts: the image enlarged at least once per panel.
    CHECK(drawn[0].width > 2 * 32);            // the image and the token sequence side by side
    CHECK(drawn[1].width > 4 * 4 * 2);         // 4 tiles of 4 cells of at least 2 pixels
    CHECK(drawn[2].width > (1 + 2 + 1) * 32);  // input, two heads, rollout
    CHECK(drawn[3].width >= 640);              // the chart
    CHECK(drawn[4].width >= 7 * 48);           // 7 tiles of at least 48 pixels in a row

    // The batched mean over 10 images equals the mean computed in one go.
    const Matrix all =
        mean_attention_distance(record_attention_maps(model, to_tensor(set, ChannelStats::cifar10())), grid);
    require_matrix_close(inspection.attention_distance, all, 1e-12);
    // All 28 components were asked for; E has 192 columns, so 28 are drawn.
    CHECK(inspection.filters.components.rows == 28);
    CHECK(inspection.filters.explained[0] >= inspection.filters.explained[27]);
}

TEST_CASE("inspect: a non-square image and a grid that is not square draw without mix-ups", "[vit][inspect]") {
    TempDir dir;
    Rng rng(13);
    VisionTransformer model(small_config(), 6);  // 8x12 images, patch 4: 2 rows of 3
    scramble_parameters(model, rng);
    const ImageSet set = random_images(3, 3, 8, 12, 5, 4);
    InspectOptions options;
    options.image = 2;
    options.components = 100;  // more than C*P*P = 48: all 48 are drawn
    const Inspection inspection = write_inspection(model, set, ChannelStats::cifar10(), dir.path.string(), options);
    CHECK(inspection.files.size() == 5);
    CHECK(inspection.filters.components.rows == 48);
    CHECK(inspection.attention_distance.rows == 2);
    CHECK(inspection.attention_distance.cols == 2);
    // No head can look farther than the two patches farthest apart, 4 * sqrt(1 + 4).
    for (double d : inspection.attention_distance.values) {
        CHECK(d > 0);
        CHECK(d < 4 * std::sqrt(5.0));
    }
    for (const std::string& f : inspection.files) png_size(f);
}

TEST_CASE("inspect: bad input gives one clear line", "[vit][inspect][errors]") {
    TempDir dir;
    VisionTransformer model(tiny_config(), 3);
    const ImageSet set = synthetic_cifar10(4, 5);
    auto one_line = [](auto&& f, const std::vector<std::string>& fragments) {
        try {
            f();
        } catch (const std::exception& e) {
            CHECK(std::string(e.what()).find('\n') == std::string::npos);
        }
        require_error(f, fragments);
    };
    InspectOptions options;
    options.image = 4;
    one_line([&] { write_inspection(model, set, ChannelStats::cifar10(), dir.file("a"), options); },
             {"inspect", "image 4 is out of range", "4 images, 0 to 3"});
    options.image = -1;
    one_line([&] { write_inspection(model, set, ChannelStats::cifar10(), dir.file("a"), options); },
             {"inspect", "image -1 is out of range"});
    options.image = 0;
    const ImageSet wrong_size = random_images(2, 3, 8, 12, 5, 4);
    one_line([&] { write_inspection(model, wrong_size, ChannelStats::cifar10(), dir.file("a"), options); },
             {"inspect", "inspect-tiny", "[3, 32, 32]", "[3, 8, 12]"});
    CHECK_FALSE(fs::exists(dir.file("a")));  // nothing is created for a bad request

    // --out not writable: a path below a regular file cannot be a directory (even for root).
    write_bytes(dir.file("a_file"), "x");
    one_line([&] { write_inspection(model, set, ChannelStats::cifar10(), dir.file("a_file/out"), options); },
             {"inspect", "cannot create the output directory", dir.file("a_file/out")});
    one_line([&] { write_inspection(model, set, ChannelStats::cifar10(), dir.file("a_file"), options); },
             {"inspect", "cannot create the output directory", dir.file("a_file")});

    // A file that is not a PNG where a picture goes is not replaced, and nothing is drawn.
    fs::create_directories(dir.file("taken"));
    write_bytes(dir.file("taken/attention.png"), "my notes");
    one_line([&] { write_inspection(model, set, ChannelStats::cifar10(), dir.file("taken"), options); },
             {"write_inspection: " + dir.file("taken/attention.png") + " holds something that is not a PNG"});
    CHECK(read_bytes(dir.file("taken/attention.png")) == "my notes");
    CHECK_FALSE(fs::exists(dir.file("taken/patches.png")));

    // What the command's --config and --checkpoint run into.
    one_line([] { vit_config("cifar-huge"); }, {"cifar-huge", "cifar-tiny"});
    one_line([&] { load_checkpoint(dir.file("missing.safetensors")); }, {dir.file("missing.safetensors")});
}

TEST_CASE("inspect: a model rebuilt from a checkpoint is inspected like the original", "[vit][inspect]") {
    TempDir dir;
    Rng rng(14);
    VisionTransformer model(tiny_config(), 3);
    scramble_parameters(model, rng);
    save_checkpoint(dir.file("best.safetensors"), model, TrainingState{}, {});
    const Checkpoint checkpoint = load_checkpoint(dir.file("best.safetensors"));
    VisionTransformer rebuilt(checkpoint.config, 0);
    load_weights(rebuilt, checkpoint);

    require_matrix_close(cosine_similarity_matrix(patch_position_embeddings(rebuilt)),
                         cosine_similarity_matrix(patch_position_embeddings(model)), 0);
    const ImageSet set = synthetic_cifar10(2, 6);
    const Tensor images = to_tensor(set, ChannelStats::cifar10());
    require_matrix_close(attention_rollout(record_attention_maps(rebuilt, images), 1),
                         attention_rollout(record_attention_maps(model, images), 1), 0);
}

}  // namespace
}  // namespace patchgrad
