#include <cmath>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

// The definition: mean over rows of -sum_j t_j log(p_j), p = exp(z) / sum exp(z), in long
// double without any max shift (fine for logits in [-5, 5]).
double naive_cross_entropy(const Tensor& logits, const std::vector<int64_t>& labels, double e) {
    const int64_t B = logits.size(0), K = logits.size(1);
    long double total = 0;
    for (int64_t b = 0; b < B; ++b) {
        long double denominator = 0;
        for (int64_t j = 0; j < K; ++j) denominator += std::exp(static_cast<long double>(logits.at({b, j})));
        for (int64_t j = 0; j < K; ++j) {
            const long double target = (j == labels[b] ? 1 - e : 0) + e / K;
            total -= target * std::log(std::exp(static_cast<long double>(logits.at({b, j}))) / denominator);
        }
    }
    return static_cast<double>(total / B);
}

std::vector<int64_t> random_labels(int64_t B, int64_t K, Rng& rng) {
    std::vector<int64_t> labels(B);
    for (auto& label : labels) label = static_cast<int64_t>(rng.below(K));
    return labels;
}

}  // namespace

TEST_CASE("cross_entropy: matches PyTorch, with and without label smoothing", "[op:cross_entropy][forward]") {
    // From torch.nn.functional.cross_entropy in PyTorch 1.13, regenerate with:
    // /usr/bin/python3 -c "import torch,torch.nn.functional as F; x=torch.tensor([[1.,2.,3.],[0.5,-1.,2.]],dtype=torch.float64); y=torch.tensor([2,1]); print(f'{F.cross_entropy(x,y).item():.12g}', f'{F.cross_entropy(x,y,label_smoothing=0.1).item():.12g}')"
    const Tensor logits = Tensor::from_vector({2, 3}, {1, 2, 3, 0.5, -1, 2});
    REQUIRE(std::abs(cross_entropy(logits, {2, 1}).item() - 1.82445863055) < 1e-10);
    REQUIRE(std::abs(cross_entropy(logits, {2, 1}, 0.1).item() - 1.79945863055) < 1e-10);
}

TEST_CASE("cross_entropy: hand values and a naive reference",
          "[op:cross_entropy][forward][ex:cross-entropy-backward]") {
    // Equal logits: the softmax is uniform, so the loss is log K with or without smoothing.
    REQUIRE(std::abs(cross_entropy(Tensor::full({3, 5}, 7), {0, 4, 2}).item() - std::log(5.0)) < 1e-14);
    REQUIRE(std::abs(cross_entropy(Tensor::full({3, 5}, 7), {0, 4, 2}, 0.3).item() - std::log(5.0)) < 1e-14);
    // One class: the loss is 0.
    REQUIRE(cross_entropy(Tensor::from_vector({2, 1}, {3, -8}), {0, 0}).item() == 0);

    Rng rng(7);
    for (const Shape& shape : {Shape{7, 11}, Shape{1, 4}, Shape{5, 2}}) {
        const Tensor logits = rand_tensor(shape, rng, -5, 5, false);
        const auto labels = random_labels(shape[0], shape[1], rng);
        for (double e : {0.0, 0.1, 0.9}) {
            INFO("logits " << shape_str(shape) << ", label_smoothing " << e);
            REQUIRE(std::abs(cross_entropy(logits, labels, e).item() - naive_cross_entropy(logits, labels, e)) < 1e-13);
        }
    }
}

TEST_CASE("cross_entropy: stable for logits in the thousands", "[op:cross_entropy][forward]") {
    // Row 0: the label's logit leads by 2000, so the loss is log(1 + 2 e^-2000) = 0.
    // Row 1: the label's logit trails by 1000, so the loss is 1000 + log(1 + e^-1000 + ...) = 1000.
    const Tensor logits = Tensor::from_vector({2, 3}, {1000, -1000, -1000, 1000, 0, -1000});
    REQUIRE(std::abs(cross_entropy(logits, {0, 1}).item() - 500) < 1e-12);
    // Shifting every logit of a row by 1000 changes nothing.
    const Tensor small = Tensor::from_vector({2, 3}, {1, 2, 3, 0.5, -1, 2});
    const Tensor big = Tensor::from_vector({2, 3}, {1001, 1002, 1003, -999.5, -1001, -998});
    for (double e : {0.0, 0.2})
        REQUIRE(std::abs(cross_entropy(big, {2, 1}, e).item() - cross_entropy(small, {2, 1}, e).item()) < 1e-12);
}

TEST_CASE("cross_entropy: the gradient of the fused op equals autograd's through log_softmax",
          "[op:cross_entropy][gradcheck][ex:cross-entropy-backward]") {
    const Tensor logits = Tensor::from_vector({2, 3}, {1, 2, 3, 0.5, -1, 2}, true);
    cross_entropy(logits, {2, 1}, 0.3).backward();
    // The same loss from two ops: the mean of -sum_j t_j log softmax(logits)_j, t = 0.7 one_hot + 0.1.
    const Tensor again = logits.detach().requires_grad_();
    const Tensor target = Tensor::from_vector({2, 3}, {0.1, 0.1, 0.8, 0.1, 0.8, 0.1});
    (-sum(log_softmax(again, 1) * target) / 2).backward();
    require_close(logits.grad(), again.grad(), 1e-14);
}

TEST_CASE("cross_entropy: gradcheck", "[op:cross_entropy][gradcheck][ex:cross-entropy-backward]") {
    Rng rng(70);
    for (const Shape& shape : {Shape{7, 11}, Shape{1, 5}, Shape{3, 1}, Shape{13, 2}}) {
        const auto labels = random_labels(shape[0], shape[1], rng);
        for (real e : {0.0, 0.1, 0.5}) {
            INFO("logits " << shape_str(shape) << ", label_smoothing " << e);
            check_gradients([&labels, e](const std::vector<Tensor>& xs) { return cross_entropy(xs[0], labels, e); },
                            {rand_tensor(shape, rng, -3, 3)}, 71);
        }
    }
}

TEST_CASE("cross_entropy: gradcheck on large logits", "[op:cross_entropy][gradcheck][ex:cross-entropy-backward]") {
    Rng rng(80);
    const std::vector<int64_t> labels{3, 0, 6, 2};
    for (real center : {1000.0, -1000.0}) {
        INFO("logits around " << center);
        check_gradients([&labels](const std::vector<Tensor>& xs) { return cross_entropy(xs[0], labels, 0.1); },
                        {rand_tensor({4, 7}, rng, center - 3, center + 3)}, 81);
    }
}

TEST_CASE("cross_entropy: bad logits, labels or smoothing", "[op:cross_entropy][errors]") {
    const Tensor logits = Tensor::zeros({3, 5});
    require_error([] { cross_entropy(Tensor::zeros({5}), {1}); }, {"cross_entropy", "[B, K]", "[5]"});
    require_error([] { cross_entropy(Tensor::zeros({2, 3, 5}), {1, 2}); }, {"cross_entropy", "[B, K]", "[2, 3, 5]"});
    require_error([&] { cross_entropy(logits, {1, 2}); }, {"cross_entropy", "2 labels", "[3, 5]"});
    require_error([&] { cross_entropy(logits, {1, 2, 3, 4}); }, {"cross_entropy", "4 labels", "[3, 5]"});
    require_error([&] { cross_entropy(logits, {0, 5, 1}); }, {"cross_entropy", "label 5", "position 1", "[0, 5)"});
    require_error([&] { cross_entropy(logits, {0, 1, -1}); }, {"cross_entropy", "label -1", "position 2", "[0, 5)"});
    require_error([&] { cross_entropy(logits, {0, 1, 2}, -0.1); }, {"cross_entropy", "label_smoothing", "-0.1"});
    require_error([&] { cross_entropy(logits, {0, 1, 2}, 1); }, {"cross_entropy", "label_smoothing", "got 1"});
    require_error([&] { cross_entropy(logits, {0, 1, 2}, std::nan("")); }, {"cross_entropy", "label_smoothing", "nan"});
    require_error([] { cross_entropy(Tensor::zeros({0, 5}), {}); }, {"cross_entropy", "empty batch", "[0, 5]"});
}

}  // namespace patchgrad
