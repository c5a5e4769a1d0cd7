#include <algorithm>
#include <cmath>
#include <memory>

#include "catch.h"
#include "layers/layer_test_util.h"
#include "patchgrad/layers/attention.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

// [hide:attention-forward]
struct NaiveAttention {
    std::vector<double> scores;  // [B, heads, N, N], q k^T before any scaling
    std::vector<double> attn;    // [B, heads, N, N]
    std::vector<double> out;     // [B, N, D]
};

// Attention the long way, one head and one query at a time. Head h's query is columns
// h*hd .. h*hd+hd-1 of the first D outputs of qkv, its key the same columns of the next D,
// its value of the last D (the [B, N, 3, heads, head_dim] split of ViT from scratch and timm).
// A hidden key is skipped in the softmax's sum instead of being masked with -inf. With LSA
// (msa.scale defined) head h's scores are multiplied by scale[h] and a query skips itself.
NaiveAttention naive_attention(const Tensor& x, const MultiHeadSelfAttention& msa, const std::vector<bool>& mask = {}) {
    const int64_t B = x.size(0), N = x.size(1), D = x.size(2), H = msa.heads, hd = D / H;
    const std::vector<double> qkv = naive_linear(to_doubles(x), B * N, D, msa.qkv->weight, msa.qkv->bias);
    const auto at = [&](int64_t b, int64_t n, int64_t part, int64_t h, int64_t d) {
        return qkv[(b * N + n) * 3 * D + part * D + h * hd + d];
    };
    const bool lsa = msa.scale.defined();
    const auto visible = [&](int64_t i, int64_t j) {
        return (mask.empty() || j == 0 || mask[j - 1]) && !(lsa && i == j);
    };
    NaiveAttention r;
    r.scores.assign(B * H * N * N, 0);
    r.attn.assign(B * H * N * N, 0);
    std::vector<double> heads_out(B * N * D, 0);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < N; ++i) {
                double* s = &r.scores[((b * H + h) * N + i) * N];
                double* a = &r.attn[((b * H + h) * N + i) * N];
                for (int64_t j = 0; j < N; ++j)
                    for (int64_t d = 0; d < hd; ++d) s[j] += at(b, i, 0, h, d) * at(b, j, 1, h, d);
                const double multiplier = lsa ? double(msa.scale.data()[h]) : 1 / std::sqrt(double(hd));
                double total = 0;
                for (int64_t j = 0; j < N; ++j)
                    if (visible(i, j)) total += std::exp(s[j] * multiplier);
                for (int64_t j = 0; j < N; ++j)
                    if (visible(i, j)) a[j] = std::exp(s[j] * multiplier) / total;
                for (int64_t d = 0; d < hd; ++d)
                    for (int64_t j = 0; j < N; ++j) heads_out[(b * N + i) * D + h * hd + d] += a[j] * at(b, j, 2, h, d);
            }
    r.out = naive_linear(heads_out, B * N, D, msa.proj->weight, msa.proj->bias);
    return r;
}
// [/hide:attention-forward]

// Small parameters keep the scores moderate, so no softmax row is saturated and every
// gradient term stays visible to the check.
std::unique_ptr<MultiHeadSelfAttention> make_msa(int64_t dim, int64_t heads, Rng& rng, bool qkv_bias = true,
                                                 std::shared_ptr<Rng> dropout_rng = nullptr, real attn_dropout = 0,
                                                 real proj_dropout = 0, bool lsa = false) {
    auto msa = std::make_unique<MultiHeadSelfAttention>(dim, heads, rng, std::move(dropout_rng), qkv_bias, attn_dropout,
                                                        proj_dropout, lsa);
    randomize_parameters(*msa, rng, -0.5, 0.5);
    return msa;
}

}  // namespace

TEST_CASE("MultiHeadSelfAttention: children qkv, attn_drop, proj, proj_drop and parameters named like timm",
          "[layer:MultiHeadSelfAttention]") {
    Rng rng(60);
    MultiHeadSelfAttention msa(12, 3, rng, nullptr);
    CHECK(msa.type_name() == "MultiHeadSelfAttention");
    CHECK(msa.heads == 3);
    CHECK(msa.head_dim == 4);
    const auto& children = msa.children();
    REQUIRE(children.size() == 4);
    CHECK(children[0].first == "qkv");
    CHECK(children[1].first == "attn_drop");
    CHECK(children[2].first == "proj");
    CHECK(children[3].first == "proj_drop");
    const auto named = msa.named_parameters();
    REQUIRE(named.size() == 4);
    CHECK(named[0].first == "qkv.weight");
    CHECK(named[0].second.shape() == Shape{36, 12});
    CHECK(named[1].first == "qkv.bias");
    CHECK(named[1].second.shape() == Shape{36});
    CHECK(named[2].first == "proj.weight");
    CHECK(named[2].second.shape() == Shape{12, 12});
    CHECK(named[3].first == "proj.bias");
    CHECK(named[3].second.shape() == Shape{12});
    CHECK(msa.num_parameters() == 4 * 12 * 12 + 4 * 12);

    // ViT-B/16: 768 * 2304 + 2304 + 768 * 768 + 768 = 2,362,368 per block.
    MultiHeadSelfAttention base(768, 12, rng, nullptr);
    CHECK(base.num_parameters() == 2362368);

    MultiHeadSelfAttention no_bias(12, 3, rng, nullptr, false);
    CHECK_FALSE(no_bias.qkv->bias.defined());
    CHECK(no_bias.num_parameters() == 4 * 12 * 12 + 12);
}

TEST_CASE("MultiHeadSelfAttention: forward matches a naive per-head reference",
          "[layer:MultiHeadSelfAttention][forward][ex:attention-forward]") {
    const bool fused = GENERATE(false, true);  // the step-by-step forward and the one-op one
    const bool qkv_bias = GENERATE(true, false);
    INFO("fused " << fused << " qkv bias " << qkv_bias);
    Rng rng(61);
    auto msa = make_msa(6, 3, rng, qkv_bias);
    msa->fused = fused;
    msa->record_attention(true);
    const Tensor x = rand_tensor({2, 5, 6}, rng, -1, 1, false);
    const Tensor y = msa->forward(x);
    // [hide:attention-forward]
    const NaiveAttention ref = naive_attention(x, *msa);
    require_close(y, from_doubles({2, 5, 6}, ref.out), 1e-12);
    require_close(msa->attention(), from_doubles({2, 3, 5, 5}, ref.attn), 1e-12);
    // [/hide:attention-forward]
    // The reference's checksums (test_util.h): what a handout of attention-forward keeps.
    CHECK(checksum(y) == Approx(qkv_bias ? 64.785408747209061 : 25.910415688977736).epsilon(1e-10));
    CHECK(checksum(msa->attention()) == Approx(qkv_bias ? 206.93076517734775 : 206.66525388382834).epsilon(1e-10));
}

TEST_CASE(
    "MultiHeadSelfAttention: scale 1/sqrt(head_dim) before the softmax, not after it by sqrt(D) as in "
    "Visual Transformer in CV",
    "[layer:MultiHeadSelfAttention][documents][ex:attention-forward]") {
    // Ours: A = softmax(q k^T / sqrt(head_dim)): rows sum to 1, equal to the naive per-head reference.
    Rng rng(62);
    const bool fused = GENERATE(false, true);  // the step-by-step forward and the one-op one
    INFO("fused " << fused);
    auto msa = make_msa(8, 2, rng);
    msa->fused = fused;
    msa->record_attention(true);
    const Tensor x = rand_tensor({2, 6, 8}, rng, -1, 1, false);
    msa->forward(x);
    const Tensor A = msa->attention();
    CHECK(checksum(A) == Approx(165.63260377379541).epsilon(1e-10));  // the reference's (test_util.h)
    for (int64_t row = 0; row < 2 * 2 * 6; ++row) {
        double ours = 0;
        for (int64_t j = 0; j < 6; ++j) ours += A.data()[row * 6 + j];
        CHECK(ours == Approx(1).epsilon(1e-12));
    }
    // [hide:attention-forward]
    const NaiveAttention ref = naive_attention(x, *msa);
    require_close(A, from_doubles({2, 2, 6, 6}, ref.attn), 1e-12);
    const double D = 8;
    for (int64_t row = 0; row < 2 * 2 * 6; ++row) {
        double scaled_after = 0, top = 0;
        for (int64_t j = 0; j < 6; ++j) top = std::max(top, ref.scores[row * 6 + j]);
        double total = 0;
        for (int64_t j = 0; j < 6; ++j) total += std::exp(ref.scores[row * 6 + j] - top);
        for (int64_t j = 0; j < 6; ++j)
            scaled_after += std::exp(ref.scores[row * 6 + j] - top) / total / std::sqrt(D);  // softmax(s) / sqrt(D)
        // Visual Transformer in CV's rows sum to 1/sqrt(D) ~ 0.354: no longer a weighted average.
        CHECK(scaled_after == Approx(1 / std::sqrt(D)).epsilon(1e-12));
        CHECK(std::abs(scaled_after - 1) > 0.5);
    }
    // [/hide:attention-forward]

    // Why before: with unit-variance q and k of size d = 64 the logits q.k have variance ~64;
    // the softmax of such logits is nearly one-hot and its Jacobian (trace sum a(1-a))
    // nearly 0, so little gradient flows. Dividing the logits by sqrt(d) restores variance
    // ~1. Dividing the softmax's OUTPUT (Visual Transformer in CV) leaves the saturation as it was:
    // its largest weight relative to its row sum is the unscaled one.
    Rng normal_rng(63);
    const int64_t d = 64, N = 16, rows = 200;
    double var_raw = 0, var_scaled = 0, top_raw = 0, top_scaled = 0, top_scaled_after = 0, trace_raw = 0,
           trace_scaled = 0;
    for (int64_t r = 0; r < rows; ++r) {
        std::vector<double> q(d), s(N);
        for (double& v : q) v = normal_rng.normal();
        for (double& sj : s) {
            sj = 0;
            for (int64_t k = 0; k < d; ++k) sj += q[k] * normal_rng.normal();
        }
        for (double scale : {1.0, 1 / std::sqrt(double(d))}) {
            const double top = *std::max_element(s.begin(), s.end()) * scale;
            std::vector<double> a(N);
            double total = 0, var = 0, trace = 0;
            for (int64_t j = 0; j < N; ++j) total += a[j] = std::exp(s[j] * scale - top);
            for (int64_t j = 0; j < N; ++j) {
                a[j] /= total;
                var += s[j] * scale * s[j] * scale / N;
                trace += a[j] * (1 - a[j]);
            }
            const double top_a = *std::max_element(a.begin(), a.end());
            if (scale == 1.0) {
                var_raw += var / rows, top_raw += top_a / rows, trace_raw += trace / rows;
                std::vector<double> after(a);
                for (double& v : after) v /= std::sqrt(double(d));
                double after_total = 0;
                for (double v : after) after_total += v;
                top_scaled_after += *std::max_element(after.begin(), after.end()) / after_total / rows;
            } else {
                var_scaled += var / rows, top_scaled += top_a / rows, trace_scaled += trace / rows;
            }
        }
    }
    CHECK(var_raw > 40);
    CHECK(var_scaled == Approx(1).margin(0.2));
    CHECK(top_raw > 0.7);     // saturated: ~0.84 of each row on one key
    CHECK(top_scaled < 0.4);  // ~0.24
    CHECK(top_scaled_after == Approx(top_raw).epsilon(1e-12));
    CHECK(trace_raw < 0.4);     // ~0.23
    CHECK(trace_scaled > 0.7);  // ~0.87
}

TEST_CASE("MultiHeadSelfAttention: recorded attention is [B, heads, N, N] with rows summing to 1",
          "[layer:MultiHeadSelfAttention][forward][ex:attention-forward]") {
    Rng rng(64);
    const bool fused = GENERATE(false, true);  // the step-by-step forward and the one-op one
    INFO("fused " << fused);
    auto msa = make_msa(8, 4, rng);
    msa->fused = fused;
    const Tensor x = rand_tensor({3, 7, 8}, rng, -1, 1, false);
    msa->forward(x);
    CHECK_FALSE(msa->attention().defined());  // not recording by default
    msa->record_attention(true);
    msa->forward(x);
    const Tensor A = msa->attention();
    REQUIRE(A.shape() == Shape{3, 4, 7, 7});
    CHECK_FALSE(A.requires_grad());
    for (int64_t row = 0; row < 3 * 4 * 7; ++row) {
        double s = 0;
        for (int64_t j = 0; j < 7; ++j) {
            CHECK(A.data()[row * 7 + j] > 0);
            s += A.data()[row * 7 + j];
        }
        CHECK(s == Approx(1).epsilon(1e-12));
    }
    // Attention dropout acts after the recording: the recorded rows still sum to 1.
    auto dropping = make_msa(8, 4, rng, true, std::make_shared<Rng>(65), 0.5);
    dropping->fused = fused;
    dropping->record_attention(true);
    dropping->forward(x);
    double s = 0;
    for (int64_t j = 0; j < 7; ++j) s += dropping->attention().data()[j];
    CHECK(s == Approx(1).epsilon(1e-12));

    msa->record_attention(false);
    CHECK_FALSE(msa->attention().defined());
}

TEST_CASE("MultiHeadSelfAttention: a hidden patch gets zero attention, the class token is always visible",
          "[layer:MultiHeadSelfAttention][forward][ex:attention-forward]") {
    Rng rng(66);
    const bool fused = GENERATE(false, true);  // the step-by-step forward and the one-op one
    INFO("fused " << fused);
    auto msa = make_msa(6, 2, rng);
    msa->fused = fused;
    msa->record_attention(true);
    const Tensor x = rand_tensor({2, 6, 6}, rng, -1, 1, false);
    const std::vector<bool> mask{true, false, true, false, false};  // patches 1..5; tokens 2, 4, 5 hidden
    const Tensor y = msa->forward(x, mask);
    const Tensor A = msa->attention();
    // [hide:attention-forward]
    const NaiveAttention ref = naive_attention(x, *msa, mask);
    require_close(y, from_doubles({2, 6, 6}, ref.out), 1e-12);
    require_close(A, from_doubles({2, 2, 6, 6}, ref.attn), 1e-12);
    // [/hide:attention-forward]
    CHECK(checksum(y) == Approx(75.474780535850826).epsilon(1e-10));  // the reference's (test_util.h)
    CHECK(checksum(A) == Approx(169.31271856605053).epsilon(1e-10));
    for (int64_t row = 0; row < 2 * 2 * 6; ++row) {
        double s = 0;
        for (int64_t j = 0; j < 6; ++j) s += A.data()[row * 6 + j];
        CHECK(s == Approx(1).epsilon(1e-12));
        CHECK(A.data()[row * 6 + 0] > 0);
        CHECK(A.data()[row * 6 + 2] == 0);
        CHECK(A.data()[row * 6 + 4] == 0);
        CHECK(A.data()[row * 6 + 5] == 0);
    }

    // The visible tokens' outputs are exactly those of the sequence with the hidden tokens
    // removed: nothing of a hidden patch leaks into them.
    const std::vector<int64_t> kept{0, 1, 3};
    Tensor x_kept = Tensor::empty({2, 3, 6});
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t t = 0; t < 3; ++t)
            for (int64_t c = 0; c < 6; ++c) x_kept.at({b, t, c}) = x.at({b, kept[t], c});
    const Tensor y_kept = msa->forward(x_kept);
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t t = 0; t < 3; ++t)
            for (int64_t c = 0; c < 6; ++c) CHECK(y.at({b, kept[t], c}) == Approx(y_kept.at({b, t, c})).epsilon(1e-12));

    // Everything hidden: every token attends to the class token alone.
    msa->forward(x, std::vector<bool>(5, false));
    const Tensor only_cls = msa->attention();
    for (int64_t row = 0; row < 2 * 2 * 6; ++row) {
        CHECK(only_cls.data()[row * 6] == 1);
        for (int64_t j = 1; j < 6; ++j) CHECK(only_cls.data()[row * 6 + j] == 0);
    }

    // Everything visible is the same as no mask.
    const Tensor y_all = msa->forward(x, std::vector<bool>(5, true));
    require_close(y_all, msa->forward(x), 1e-12);
}

TEST_CASE("MultiHeadSelfAttention: train/eval reaches both dropouts",
          "[layer:MultiHeadSelfAttention][ex:attention-forward]") {
    Rng rng(67);
    auto dropout_rng = std::make_shared<Rng>(68);
    auto msa = make_msa(4, 2, rng, true, dropout_rng, 0.3, 0.3);
    const Tensor x = rand_tensor({2, 3, 4}, rng, -1, 1, false);
    msa->eval();
    CHECK_FALSE(msa->attn_drop->training());
    CHECK_FALSE(msa->proj_drop->training());
    const auto state = dropout_rng->state();
    const Tensor y_eval = msa->forward(x);
    CHECK(dropout_rng->state() == state);
    // [hide:attention-forward]
    require_close(y_eval, from_doubles({2, 3, 4}, naive_attention(x, *msa).out), 1e-12);
    // [/hide:attention-forward]
    CHECK(checksum(y_eval) == Approx(3.3752859134081339).epsilon(1e-10));  // the reference's (test_util.h)
    msa->train();
    CHECK(msa->attn_drop->training());
    CHECK(msa->proj_drop->training());

    // Both dropouts act: proj_drop, the last step, zeroes whole outputs; attn_drop changes
    // the others by more than proj_drop's 1/(1-p) rescaling.
    const Tensor y = msa->forward(x);
    int64_t zeroed = 0, changed = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
        if (y.data()[i] == 0)
            ++zeroed;
        else if (std::abs(y.data()[i] - y_eval.data()[i] / 0.7) > 1e-12)
            ++changed;
    }
    CHECK(zeroed > 0);
    CHECK(changed > 0);
}

TEST_CASE("MultiHeadSelfAttention: gradcheck w.r.t. input and every parameter, with and without a mask",
          "[layer:MultiHeadSelfAttention][gradcheck][ex:attention-forward]") {
    Rng rng(69);
    const bool fused = GENERATE(false, true);  // the step-by-step forward and the one-op one
    INFO("fused " << fused);
    struct Case {
        int64_t B, N, D, heads;
        bool qkv_bias;
        std::vector<bool> mask;
    };
    const std::vector<Case> cases{
        {2, 5, 6, 3, true, {}},   // head_dim 2
        {1, 3, 4, 1, true, {}},   // one head
        {3, 7, 6, 2, false, {}},  // no qkv bias
        {2, 6, 6, 2, true, {true, false, true, false, true}},
        {1, 4, 4, 2, false, {false, false, false}},  // only the class token visible
    };
    for (const Case& c : cases) {
        INFO("B " << c.B << " N " << c.N << " D " << c.D << " heads " << c.heads << " mask entries " << c.mask.size());
        auto msa = make_msa(c.D, c.heads, rng, c.qkv_bias);
        msa->fused = fused;
        check_gradients([&](const std::vector<Tensor>& xs) { return msa->forward(xs[0], c.mask); },
                        with_parameters(rand_tensor({c.B, c.N, c.D}, rng), *msa), 70);
    }
}

TEST_CASE("MultiHeadSelfAttention: gradcheck with attention and projection dropout, masks held fixed",
          "[layer:MultiHeadSelfAttention][gradcheck][ex:attention-forward]") {
    Rng rng(71);
    auto dropout_rng = std::make_shared<Rng>(72);
    auto msa = make_msa(6, 2, rng, true, dropout_rng, 0.25, 0.2);
    const std::vector<bool> mask{true, true, false, true};
    check_gradients(
        [&](const std::vector<Tensor>& xs) {
            *dropout_rng = Rng(73);
            return msa->forward(xs[0], mask);
        },
        with_parameters(rand_tensor({2, 5, 6}, rng), *msa), 74);
}

TEST_CASE("MultiHeadSelfAttention: LSA scales each head by its own learned scale and masks the diagonal",
          "[layer:MultiHeadSelfAttention][forward][lsa][ex:attention-forward]") {
    Rng rng(80);
    const bool fused = GENERATE(false, true);  // the step-by-step forward and the one-op one
    INFO("fused " << fused);
    MultiHeadSelfAttention fresh(12, 3, rng, nullptr, true, 0, 0, true);
    REQUIRE(fresh.named_parameters().size() == 5);
    CHECK(fresh.named_parameters()[0].first == "scale");                // the module's own, before its children's
    CHECK(fresh.scale.to_vector() == std::vector<real>(3, real(0.5)));  // head_dim 4: 1/sqrt(4)
    CHECK(fresh.num_parameters() == 4 * 12 * 12 + 4 * 12 + 3);
    for (const std::vector<bool>& mask : {std::vector<bool>{}, std::vector<bool>{true, false, true, false}}) {
        INFO("mask entries " << mask.size());
        auto msa = make_msa(6, 3, rng, true, nullptr, 0, 0, true);  // scales drawn in [-0.5, 0.5], one per head
        msa->fused = fused;
        msa->record_attention(true);
        const Tensor x = rand_tensor({2, 5, 6}, rng, -1, 1, false);
        const Tensor y = msa->forward(x, mask);
        // [hide:attention-forward]
        const NaiveAttention ref = naive_attention(x, *msa, mask);
        require_close(y, from_doubles({2, 5, 6}, ref.out), 1e-12);
        require_close(msa->attention(), from_doubles({2, 3, 5, 5}, ref.attn), 1e-12);
        // [/hide:attention-forward]
        // The reference's checksums (test_util.h), without the mask and with it.
        CHECK(checksum(y) == Approx(mask.empty() ? 24.384144656454389 : 93.764463780144155).epsilon(1e-10));
        CHECK(checksum(msa->attention()) ==
              Approx(mask.empty() ? 201.6413621776876 : 206.62493774272787).epsilon(1e-10));
        for (int64_t r = 0; r < 2 * 3 * 5; ++r) CHECK(msa->attention().data()[r * 5 + r % 5] == 0);  // A_ii = 0
    }
}

TEST_CASE("MultiHeadSelfAttention: gradcheck with LSA w.r.t. input, scale and every other parameter",
          "[layer:MultiHeadSelfAttention][gradcheck][lsa][ex:attention-forward]") {
    Rng rng(81);
    const bool fused = GENERATE(false, true);  // the step-by-step forward and the one-op one
    INFO("fused " << fused);
    for (const std::vector<bool>& mask : {std::vector<bool>{}, std::vector<bool>{false, true, false}}) {
        auto msa = make_msa(4, 2, rng, true, nullptr, 0, 0, true);
        msa->fused = fused;
        check_gradients([&](const std::vector<Tensor>& xs) { return msa->forward(xs[0], mask); },
                        with_parameters(rand_tensor({2, 4, 4}, rng), *msa), 82);
    }
}

TEST_CASE("MultiHeadSelfAttention: errors name the sizes", "[layer:MultiHeadSelfAttention][errors]") {
    Rng rng(75);
    require_error([&] { MultiHeadSelfAttention(10, 3, rng, nullptr); },
                  {"MultiHeadSelfAttention", "dim 10", "heads 3", "divisible"});
    require_error([&] { MultiHeadSelfAttention(8, 0, rng, nullptr); }, {"MultiHeadSelfAttention", "heads 0"});
    MultiHeadSelfAttention msa(8, 2, rng, nullptr);
    require_error([&] { msa.forward(Tensor::zeros({2, 5, 7})); }, {"MultiHeadSelfAttention", "[2, 5, 7]", "8"});
    require_error([&] { msa.forward(Tensor::zeros({5, 8})); }, {"MultiHeadSelfAttention", "[5, 8]"});
    require_error(
        [&] {
            msa.forward(Tensor::zeros({2, 5, 8}), std::vector<bool>(5, true));
        },
        {"MultiHeadSelfAttention", "patch_mask", "5 entries", "4 patches", "[2, 5, 8]"});
    require_error(
        [&] {
            msa.forward(Tensor::zeros({2, 5, 8}), std::vector<bool>(3, true));
        },
        {"MultiHeadSelfAttention", "3 entries", "4 patches"});
    require_error([&] { MultiHeadSelfAttention(8, 2, rng, nullptr, true, 0.1); }, {"Dropout", "Rng"});
    // LSA masks a token's own score: a lone token, or a class token whose patches are all
    // hidden, would have nothing left to attend to.
    MultiHeadSelfAttention lsa(8, 2, rng, nullptr, true, 0, 0, true);
    require_error(
        [&] {
            lsa.forward(Tensor::zeros({2, 1, 8}));
        },
        {"MultiHeadSelfAttention", "LSA", "[2, 1, 8]", "one token"});
    require_error(
        [&] {
            lsa.forward(Tensor::zeros({2, 3, 8}), {false, false});
        },
        {"MultiHeadSelfAttention", "LSA", "[2, 3, 8]", "every patch hidden"});
}

}  // namespace patchgrad
