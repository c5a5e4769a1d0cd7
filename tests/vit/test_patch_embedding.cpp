#include "catch.h"
#include "patchgrad/vit/patch_embedding.h"
#include "test_util.h"
#include "vit_test_util.h"

namespace patchgrad::test {

namespace {

// torch.nn.Conv2d(C, D, kernel_size=P, stride=P) as a direct loop: x [B, C, H, W],
// weight [D, C, P, P], bias [D] -> [B, D, H/P, W/P].
Tensor conv2d_kernel_equals_stride(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t P) {
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), D = weight.size(0);
    Tensor out = Tensor::zeros({B, D, H / P, W / P});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t d = 0; d < D; ++d)
            for (int64_t oh = 0; oh < H / P; ++oh)
                for (int64_t ow = 0; ow < W / P; ++ow) {
                    double acc = bias.at({d});
                    for (int64_t c = 0; c < C; ++c)
                        for (int64_t i = 0; i < P; ++i)
                            for (int64_t j = 0; j < P; ++j)
                                acc += weight.at({d, c, i, j}) * x.at({b, c, oh * P + i, ow * P + j});
                    out.at({b, d, oh, ow}) = static_cast<real>(acc);
                }
    return out;
}

// timm's PatchEmbed after the conv: [B, D, h, w] -> flatten(2).transpose(1, 2) -> [B, h*w, D].
Tensor conv_output_to_tokens(const Tensor& y) {
    const int64_t B = y.size(0), D = y.size(1), h = y.size(2), w = y.size(3);
    Tensor out = Tensor::zeros({B, h * w, D});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t n = 0; n < h * w; ++n)
            for (int64_t d = 0; d < D; ++d) out.at({b, n, d}) = y.at({b, d, n / w, n % w});
    return out;
}

// einops' rearrange(x, 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)') of Visual Transformer in CV and the
// ViT notebook.
Tensor rearrange_p1_p2_c(const Tensor& x, int64_t P) {
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), wide = W / P;
    Tensor out = Tensor::zeros({B, (H / P) * wide, P * P * C});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t n = 0; n < (H / P) * wide; ++n)
            for (int64_t i = 0; i < P; ++i)
                for (int64_t j = 0; j < P; ++j)
                    for (int64_t c = 0; c < C; ++c)
                        out.at({b, n, (i * P + j) * C + c}) = x.at({b, c, (n / wide) * P + i, (n % wide) * P + j});
    return out;
}

}  // namespace

TEST_CASE("PatchEmbedding: parameters are proj.weight [D, C*P*P] and proj.bias [D]", "[vit][layer:PatchEmbedding]") {
    Rng rng(1);
    PatchEmbedding embed(3, 4, 8, rng);
    auto params = embed.named_parameters();
    REQUIRE(params.size() == 2);
    CHECK(params[0].first == "proj.weight");
    CHECK(params[0].second.shape() == Shape{8, 48});
    CHECK(params[1].first == "proj.bias");
    CHECK(params[1].second.shape() == Shape{8});
    CHECK(embed.num_parameters() == 8 * 48 + 8);
}

TEST_CASE("PatchEmbedding: Conv2d with kernel = stride = P gives the same outputs as unfold + Linear",
          "[vit][layer:PatchEmbedding][forward][documents]") {
    struct Case {
        int64_t B, C, H, W, P, D;
    };
    for (Case k : {Case{2, 3, 8, 12, 4, 5}, Case{1, 1, 6, 6, 3, 7}, Case{3, 4, 4, 10, 2, 3}}) {
        INFO("B " << k.B << " C " << k.C << " H " << k.H << " W " << k.W << " P " << k.P << " D " << k.D);
        Rng rng(11);
        PatchEmbedding embed(k.C, k.P, k.D, rng);
        scramble_parameters(embed, rng);
        Tensor x = rand_tensor({k.B, k.C, k.H, k.W}, rng, -1, 1, false);
        // The one reshape between the two forms: proj.weight [D, C*P*P] <-> conv weight [D, C, P, P].
        Tensor conv_weight = reshape(embed.proj->weight, {k.D, k.C, k.P, k.P});
        Tensor conv = conv2d_kernel_equals_stride(x, conv_weight, embed.proj->bias, k.P);
        require_close(embed.forward(x), conv_output_to_tokens(conv), 1e-12);
    }
}

TEST_CASE(
    "PatchEmbedding: the (p1 p2 c) flattening of Visual Transformer in CV and the ViT notebook needs E's "
    "columns permuted, not just reshaped",
    "[vit][layer:PatchEmbedding][documents]") {
    const int64_t B = 2, C = 3, H = 8, W = 12, P = 4, D = 5;
    Rng rng(12);
    PatchEmbedding embed(C, P, D, rng);
    scramble_parameters(embed, rng);
    Tensor x = rand_tensor({B, C, H, W}, rng, -1, 1, false);
    Tensor conv_weight = reshape(embed.proj->weight, {D, C, P, P});
    Tensor conv = conv_output_to_tokens(conv2d_kernel_equals_stride(x, conv_weight, embed.proj->bias, P));

    Tensor patches = rearrange_p1_p2_c(x, P);
    CHECK(max_abs_difference(linear(patches, embed.proj->weight, embed.proj->bias), conv) > 0.1);
    Tensor permuted = reshape(permute(conv_weight, {0, 2, 3, 1}), {D, P * P * C});  // [D, P, P, C]
    require_close(linear(patches, permuted, embed.proj->bias), conv, 1e-12);
}

TEST_CASE("PatchEmbedding: gradcheck w.r.t. images, weight and bias", "[vit][layer:PatchEmbedding][gradcheck]") {
    Rng rng(13);
    PatchEmbedding embed(3, 4, 5, rng);
    scramble_parameters(embed, rng);
    check_gradients([&](const std::vector<Tensor>& xs) { return embed.forward(xs[0]); },
                    {rand_tensor({2, 3, 8, 12}, rng), embed.proj->weight, embed.proj->bias});
}

TEST_CASE("PatchEmbedding: errors come from the patcher and name the sizes", "[vit][layer:PatchEmbedding][errors]") {
    Rng rng(14);
    PatchEmbedding embed(3, 4, 5, rng);
    require_error([&] { embed.forward(Tensor::zeros({1, 3, 9, 12})); }, {"Patcher", "9x12", "patch size 4"});
    require_error([&] { embed.forward(Tensor::zeros({1, 2, 8, 12})); }, {"Patcher", "3 channels", "[1, 2, 8, 12]"});
}

}  // namespace patchgrad::test
