// Tests for datasets/mixup.cpp: the Gamma/Beta sampler, mixup and cutmix (known answers),
// timm's per-batch switch, and the mixed loss.
#include "patchgrad/datasets/mixup.h"

#include <cmath>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

// Image i is filled with its index i + 1 offset by the element: every source is recognisable.
Tensor numbered_batch(int64_t B, int64_t C, int64_t H, int64_t W) {
    Tensor x = Tensor::empty({B, C, H, W});
    const int64_t n = C * H * W;
    for (int64_t i = 0; i < B; ++i)
        for (int64_t k = 0; k < n; ++k) x.data()[i * n + k] = static_cast<real>(1000 * (i + 1) + k);
    return x;
}

// Mean and variance of `count` draws.
template <class Draw>
std::pair<double, double> moments(int count, Draw draw) {
    double s = 0, s2 = 0;
    for (int i = 0; i < count; ++i) {
        const double v = draw();
        s += v;
        s2 += v * v;
    }
    const double mean = s / count;
    return {mean, s2 / count - mean * mean};
}

}  // namespace

TEST_CASE("datasets: Gamma and Beta samplers have the right moments", "[datasets][mixup]") {
    Rng rng(1);
    for (double shape : {0.3, 1.0, 2.5, 9.0}) {
        INFO("Gamma shape " << shape);
        const auto [mean, var] = moments(40000, [&] { return sample_gamma(shape, rng); });
        CHECK(mean == Approx(shape).epsilon(0.03));  // Gamma(k, 1): mean k, variance k
        CHECK(var == Approx(shape).epsilon(0.06));
    }
    // (Not `auto [a, b]`: C++17 lets no lambda capture a structured binding, and clang says so.)
    for (const auto& alpha_beta : {std::pair<double, double>{0.8, 0.8}, {1.0, 1.0}, {2.0, 5.0}, {0.2, 0.2}}) {
        const double a = alpha_beta.first, b = alpha_beta.second;
        INFO("Beta " << a << ", " << b);
        const auto [mean, var] = moments(40000, [&] {
            const double v = sample_beta(a, b, rng);
            REQUIRE(v >= 0);
            REQUIRE(v <= 1);
            return v;
        });
        CHECK(mean == Approx(a / (a + b)).epsilon(0.02));
        CHECK(var == Approx(a * b / ((a + b) * (a + b) * (a + b + 1))).epsilon(0.05));
    }
    // Tiny alphas put lambda at 0 or 1 and never give 0/0.
    for (int i = 0; i < 100; ++i) {
        const double v = sample_beta(1e-4, 1e-4, rng);
        REQUIRE(std::isfinite(v));
        REQUIRE((v < 1e-6 || v > 1 - 1e-6));
    }
    Rng r1(9), r2(9);
    REQUIRE(sample_beta(0.8, 0.8, r1) == sample_beta(0.8, 0.8, r2));
    require_error([&] { sample_gamma(0, rng); }, {"sample_gamma", "shape 0"});
    require_error([&] { sample_beta(1, -1, rng); }, {"sample_beta", "-1"});
}

TEST_CASE("datasets: mixup is lam * x + (1 - lam) * the batch reversed, exactly", "[datasets][mixup]") {
    const Tensor x = numbered_batch(5, 2, 3, 3);
    const std::vector<real> before = x.to_vector();
    const MixedBatch m = mixup_batch(x, {0, 1, 2, 3, 4}, 0.3);
    REQUIRE(m.images.shape() == x.shape());
    REQUIRE(m.labels_a == std::vector<int64_t>{0, 1, 2, 3, 4});
    REQUIRE(m.labels_b == std::vector<int64_t>{4, 3, 2, 1, 0});
    REQUIRE_FALSE(m.cutmix);
    REQUIRE(m.lambda >= 0);
    REQUIRE(m.lambda <= 1);
    const real lam = static_cast<real>(m.lambda);
    REQUIRE(lam == static_cast<real>(0.3));
    for (int64_t i = 0; i < 5; ++i)
        for (int64_t k = 0; k < 18; ++k) {
            const real a = x.data()[i * 18 + k], b = x.data()[(4 - i) * 18 + k];
            REQUIRE(m.images.data()[i * 18 + k] == lam * a + (1 - lam) * b);
        }
    REQUIRE(x.to_vector() == before);
    // lambda 1 and 0 give the batch and the batch reversed.
    REQUIRE(mixup_batch(x, {0, 1, 2, 3, 4}, 1.0).images.to_vector() == before);
    REQUIRE(mixup_batch(x, {0, 1, 2, 3, 4}, 0.0).images.at({0, 1, 2, 2}) == x.at({4, 1, 2, 2}));
}

TEST_CASE("datasets: cutmix pastes the partner's box and lambda is the area left", "[datasets][mixup]") {
    const Tensor x = numbered_batch(4, 3, 6, 8);
    const MixedBatch m = cutmix_batch(x, {7, 8, 9, 6}, Box{1, 2, 3, 4});
    REQUIRE(m.cutmix);
    REQUIRE(m.lambda == 1.0 - 12.0 / 48.0);
    REQUIRE(m.labels_b == std::vector<int64_t>{6, 9, 8, 7});
    for (int64_t i = 0; i < 4; ++i)
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t y = 0; y < 6; ++y)
                for (int64_t w = 0; w < 8; ++w) {
                    const bool inside = y >= 1 && y < 4 && w >= 2 && w < 6;
                    REQUIRE(m.images.at({i, c, y, w}) == x.at({inside ? 3 - i : i, c, y, w}));
                }
    REQUIRE(cutmix_batch(x, {7, 8, 9, 6}, Box{0, 0, 6, 8}).lambda == 0);
    REQUIRE(cutmix_batch(x, {7, 8, 9, 6}, Box{}).images.to_vector() == x.to_vector());
}

TEST_CASE("datasets: cutmix_box is timm's rand_bbox", "[datasets][mixup]") {
    Rng rng(3);
    for (int t = 0; t < 200; ++t) {
        const double lambda = rng.uniform();
        const Box box = cutmix_box(32, 32, lambda, rng);
        REQUIRE(box.top >= 0);
        REQUIRE(box.left >= 0);
        REQUIRE(box.top + box.height <= 32);
        REQUIRE(box.left + box.width <= 32);
        // Unclipped it has even sides 2 (int(32 sqrt(1 - lambda)) / 2).
        const int64_t cut = static_cast<int64_t>(32 * std::sqrt(1 - lambda));
        REQUIRE(box.height <= 2 * (cut / 2));
        REQUIRE(box.width <= 2 * (cut / 2));
    }
    REQUIRE(cutmix_box(32, 32, 1.0, rng).area() == 0);
    require_error([&] { cutmix_box(32, 32, 1.5, rng); }, {"cutmix_box", "lambda 1.5"});
}

TEST_CASE("datasets: Mixup picks mixup or cutmix per batch, seeded", "[datasets][mixup]") {
    const Tensor x = numbered_batch(6, 3, 8, 8);
    const std::vector<int64_t> labels = {0, 1, 2, 3, 4, 5};
    const Mixup mixup;
    int cutmixes = 0;
    for (uint64_t seed = 0; seed < 100; ++seed) {
        Rng rng(seed), again(seed);
        const MixedBatch m = mixup.apply(x, labels, rng);
        const MixedBatch m2 = mixup.apply(x, labels, again);
        REQUIRE(m.images.to_vector() == m2.images.to_vector());
        REQUIRE(m.lambda == m2.lambda);
        REQUIRE(m.lambda >= 0);
        REQUIRE(m.lambda <= 1);
        REQUIRE(m.images.shape() == x.shape());
        if (!m.cutmix) continue;
        ++cutmixes;
        // Lambda is the share of pixels still showing the image's own content.
        int64_t own = 0;
        for (int64_t k = 0; k < 3 * 64; ++k) own += m.images.data()[k] == x.data()[k];
        REQUIRE(m.lambda == Approx(static_cast<double>(own) / (3 * 64)).margin(1e-12));
        REQUIRE(m.lambda == 1.0 - m.box.area() / 64.0);
    }
    REQUIRE(cutmixes > 30);
    REQUIRE(cutmixes < 70);

    Mixup only_mixup;
    only_mixup.cutmix_alpha = 0;
    Mixup only_cutmix;
    only_cutmix.mixup_alpha = 0;
    Mixup never;
    never.prob = 0;
    for (uint64_t seed = 0; seed < 20; ++seed) {
        Rng rng(seed);
        REQUIRE_FALSE(only_mixup.apply(x, labels, rng).cutmix);
        REQUIRE(only_cutmix.apply(x, labels, rng).cutmix);
        const MixedBatch unmixed = never.apply(x, labels, rng);
        REQUIRE(unmixed.images.same(x));
        REQUIRE(unmixed.lambda == 1);
        REQUIRE(unmixed.labels_b == labels);
    }
}

TEST_CASE("datasets: mixed_cross_entropy weights the two label sets by lambda", "[datasets][mixup]") {
    Rng rng(4);
    const Tensor logits = rand_tensor({4, 5}, rng, -2, 2, false);
    const Tensor images = Tensor::zeros({4, 1, 2, 2});
    const MixedBatch m = mixup_batch(images, {0, 3, 1, 4}, 0.25);
    const double a = cross_entropy(logits, {0, 3, 1, 4}, 0.1).item();
    const double b = cross_entropy(logits, {4, 1, 3, 0}, 0.1).item();
    REQUIRE(mixed_cross_entropy(logits, m, 0.1).item() == Approx(0.25 * a + 0.75 * b).epsilon(1e-12));
    const MixedBatch plain = mixup_batch(images, {0, 3, 1, 4}, 1.0);
    REQUIRE(mixed_cross_entropy(logits, plain).item() == cross_entropy(logits, {0, 3, 1, 4}).item());
    // It is differentiable: the gradient is lambda dCE(a) + (1 - lambda) dCE(b).
    Tensor w = logits.detach().requires_grad_();
    mixed_cross_entropy(w, m).backward();
    Tensor wa = logits.detach().requires_grad_(), wb = logits.detach().requires_grad_();
    cross_entropy(wa, {0, 3, 1, 4}).backward();
    cross_entropy(wb, {4, 1, 3, 0}).backward();
    for (int64_t k = 0; k < 20; ++k)
        REQUIRE(w.grad().data()[k] == Approx(0.25 * wa.grad().data()[k] + 0.75 * wb.grad().data()[k]).margin(1e-14));
}

TEST_CASE("datasets: mixup and cutmix errors", "[datasets][mixup][errors]") {
    const Tensor x = numbered_batch(2, 1, 4, 4);
    Rng rng(1);
    require_error(
        [&] {
            mixup_batch(Tensor::zeros({2, 16}), {0, 1}, 0.5);
        },
        {"mixup_batch", "[B, C, H, W]", "[2, 16]"});
    require_error([&] { mixup_batch(x, {0}, 0.5); }, {"mixup_batch", "1 labels", "[2, 1, 4, 4]"});
    require_error([&] { mixup_batch(x, {0, 1}, 1.5); }, {"mixup_batch", "lambda 1.5"});
    require_error(
        [&] {
            cutmix_batch(x, {0, 1}, Box{2, 2, 3, 1});
        },
        {"cutmix_batch", "top 2", "3 x 1", "[2, 1, 4, 4]"});
    Mixup off;
    off.mixup_alpha = 0;
    off.cutmix_alpha = 0;
    require_error([&] { off.apply(x, {0, 1}, rng); }, {"Mixup", "not both 0"});
    Mixup bad_switch;
    bad_switch.switch_prob = 2;
    require_error([&] { bad_switch.apply(x, {0, 1}, rng); }, {"Mixup", "switch_prob 2"});
}

}  // namespace patchgrad
