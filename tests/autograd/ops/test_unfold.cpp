// Tests for unfold.cpp: a naive per-output-element formula, golden values from PyTorch
// (tests/data/unfold_golden.txt, written by autograd/scripts/make_unfold_golden.py),
// gradient checks and errors.
#include <fstream>
#include <string>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

// Decodes every output position (b, row, l) into (channel, kernel offset, window) and reads
// the pixel it names.
Tensor naive_unfold(const Tensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw) {
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = (H - kh) / sh + 1, OW = (W - kw) / sw + 1;
    Tensor out = Tensor::zeros({B, C * kh * kw, OH * OW});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t row = 0; row < C * kh * kw; ++row)
            for (int64_t l = 0; l < OH * OW; ++l) {
                const int64_t c = row / (kh * kw), i = row / kw % kh, j = row % kw;
                const int64_t oh = l / OW, ow = l % OW;
                out.at({b, row, l}) = x.at({b, c, oh * sh + i, ow * sw + j});
            }
    return out;
}

struct UnfoldCase {
    Shape input_shape, kernel, stride;
};

}  // namespace

TEST_CASE("unfold: 4x4 image into 2x2 patches, by hand", "[op:unfold][forward][ex:unfold-forward]") {
    Tensor x = reshape(Tensor::arange(1, 17), {1, 1, 4, 4});
    Tensor y = unfold(x, 2, 2, 2, 2);
    REQUIRE(y.shape() == Shape{1, 4, 4});
    // Row = pixel (i, j) of the patch, column = patch in row-major order.
    REQUIRE(y.to_vector() == std::vector<real>{1, 3, 9, 11,   //
                                               2, 4, 10, 12,  //
                                               5, 7, 13, 15,  //
                                               6, 8, 14, 16});
}

TEST_CASE("unfold: forward matches a naive index formula", "[op:unfold][forward][ex:unfold-forward]") {
    Rng rng(1);
    for (const UnfoldCase& k :
         std::vector<UnfoldCase>{{{2, 3, 6, 10}, {2, 5}, {2, 5}},  // non-overlapping, non-square kernel
                                 {{1, 2, 7, 5}, {3, 3}, {2, 2}},   // overlapping
                                 {{2, 1, 5, 7}, {2, 3}, {1, 2}},   // C = 1, overlapping in one direction
                                 {{1, 4, 6, 6}, {3, 3}, {3, 3}},   // C = 4
                                 {{1, 1, 7, 6}, {3, 2}, {2, 3}},   // remainders dropped
                                 {{3, 2, 4, 5}, {4, 5}, {1, 1}},   // kernel = image: one window
                                 {{1, 3, 3, 2}, {1, 1}, {1, 1}}}) {
        Tensor x = rand_tensor(k.input_shape, rng, -1, 1, false);
        require_close(
            unfold(x, k.kernel[0], k.kernel[1], k.stride[0], k.stride[1]),
            naive_unfold(x, k.kernel[0], k.kernel[1], k.stride[0], k.stride[1]), 0,
            "input " + shape_str(k.input_shape) + " kernel " + shape_str(k.kernel) + " stride " + shape_str(k.stride));
    }
}

TEST_CASE("unfold: forward matches torch.nn.functional.unfold (golden file)",
          "[op:unfold][forward][ex:unfold-forward]") {
    const std::string path = std::string(PATCHGRAD_TEST_DATA) + "/unfold_golden.txt";
    std::ifstream in(path);
    INFO("golden file " << path);
    REQUIRE(in);
    auto read_values = [&in](Shape shape) {
        std::vector<real> v(shape_numel(shape));
        for (real& e : v) in >> e;
        return Tensor::from_vector(shape, std::move(v));
    };
    int cases = 0;
    std::string word;
    while (in >> word && word != "end") {
        if (word[0] == '#') {
            std::getline(in, word);
            continue;
        }
        REQUIRE(word == "case");
        std::string name;
        int64_t B, C, H, W, kh, kw, sh, sw, out_B, rows, L;
        std::string input, kernel, stride, output;
        in >> name >> input >> B >> C >> H >> W;
        Tensor x = read_values({B, C, H, W});
        in >> kernel >> kh >> kw >> stride >> sh >> sw >> output >> out_B >> rows >> L;
        Tensor expected = read_values({out_B, rows, L});
        INFO("case " << name);
        REQUIRE(in);
        REQUIRE((input == "input" && kernel == "kernel" && stride == "stride" && output == "output"));
        require_close(unfold(x, kh, kw, sh, sw), expected, 0, name);
        ++cases;
    }
    REQUIRE(word == "end");
    REQUIRE(cases == 4);
}

TEST_CASE("unfold: backward adds where windows overlap", "[op:unfold][ex:unfold-backward]") {
    // Seeding the backward with ones, each pixel's gradient counts the windows covering it.
    // Kernel 3, stride 2 on 5 pixels: windows at 0..2 and 2..4, so per axis 1 1 2 1 1.
    Tensor x = Tensor::zeros({1, 1, 5, 5}, true);
    Tensor y = unfold(x, 3, 3, 2, 2);
    y.backward(Tensor::ones(y.shape()));
    const std::vector<real> per_axis{1, 1, 2, 1, 1};
    for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 5; ++j) REQUIRE(x.grad().at({0, 0, i, j}) == per_axis[i] * per_axis[j]);
}

TEST_CASE("unfold: gradcheck", "[op:unfold][gradcheck][ex:unfold-backward]") {
    Rng rng(2);
    uint64_t seed = 1;
    for (const UnfoldCase& k :
         std::vector<UnfoldCase>{{{1, 2, 7, 5}, {3, 3}, {2, 2}},   // overlapping
                                 {{2, 1, 5, 7}, {2, 3}, {1, 2}},   // C = 1, overlapping along H
                                 {{1, 4, 6, 6}, {2, 2}, {2, 2}},   // C = 4, ViT-style patches
                                 {{2, 3, 6, 10}, {2, 5}, {2, 5}},  // non-square kernel and image
                                 {{1, 1, 7, 6}, {3, 2}, {2, 3}},   // remainders dropped: zero gradient there
                                 {{1, 3, 3, 5}, {3, 5}, {1, 1}}}) {
        INFO("input " << shape_str(k.input_shape) << " kernel " << shape_str(k.kernel) << " stride "
                      << shape_str(k.stride));
        check_gradients(
            [k](const std::vector<Tensor>& x) {
                return unfold(x[0], k.kernel[0], k.kernel[1], k.stride[0], k.stride[1]);
            },
            {rand_tensor(k.input_shape, rng)}, seed++);
    }
}

TEST_CASE("unfold: errors", "[op:unfold][errors]") {
    Tensor x = Tensor::zeros({1, 3, 6, 10});
    require_error([] { unfold(Tensor::zeros({3, 6, 10}), 2, 2, 2, 2); }, {"unfold", "4-D", "[3, 6, 10]"});
    require_error([] { unfold(Tensor::zeros({1, 1, 3, 6, 10}), 2, 2, 2, 2); }, {"unfold", "4-D", "[1, 1, 3, 6, 10]"});
    require_error([&] { unfold(x, 0, 2, 2, 2); }, {"unfold", "kernel (0, 2)", "positive", "[1, 3, 6, 10]"});
    require_error([&] { unfold(x, 2, -1, 2, 2); }, {"unfold", "kernel (2, -1)", "positive"});
    require_error([&] { unfold(x, 2, 2, 0, 2); }, {"unfold", "stride (0, 2)", "positive"});
    require_error([&] { unfold(x, 2, 2, 2, -3); }, {"unfold", "stride (2, -3)", "positive"});
    require_error([&] { unfold(x, 7, 2, 1, 1); }, {"unfold", "kernel (7, 2)", "larger", "[1, 3, 6, 10]"});
    require_error([&] { unfold(x, 2, 11, 1, 1); }, {"unfold", "kernel (2, 11)", "larger", "[1, 3, 6, 10]"});
}

}  // namespace patchgrad
