#include "catch.h"
#include "patchgrad/vit/patcher.h"
#include "test_util.h"
#include "vit_test_util.h"

namespace patchgrad::test {

TEST_CASE("Patcher: rows are the P x P windows in row-major order, flattened as (c, i, j)",
          "[vit][layer:Patcher][forward][ex:unfold-forward]") {
    struct Case {
        int64_t B, C, H, W, P;
    };
    for (Case k : {Case{2, 3, 8, 12, 4}, Case{1, 1, 6, 6, 3}, Case{3, 2, 5, 7, 1}, Case{1, 4, 6, 6, 6}}) {
        INFO("B " << k.B << " C " << k.C << " H " << k.H << " W " << k.W << " P " << k.P);
        Rng rng(7);
        Tensor x = rand_tensor({k.B, k.C, k.H, k.W}, rng);
        Patcher patcher(k.C, k.P);
        Tensor y = patcher.forward(x);
        const int64_t wide = k.W / k.P, N = (k.H / k.P) * wide;
        REQUIRE(y.shape() == Shape{k.B, N, k.C * k.P * k.P});
        for (int64_t b = 0; b < k.B; ++b)
            for (int64_t n = 0; n < N; ++n)
                for (int64_t c = 0; c < k.C; ++c)
                    for (int64_t i = 0; i < k.P; ++i)
                        for (int64_t j = 0; j < k.P; ++j)
                            REQUIRE(y.at({b, n, (c * k.P + i) * k.P + j}) ==
                                    x.at({b, c, (n / wide) * k.P + i, (n % wide) * k.P + j}));
    }
}

TEST_CASE("Patcher: gradcheck", "[vit][layer:Patcher][gradcheck][ex:unfold-backward]") {
    Rng rng(3);
    Patcher patcher(3, 4);
    check_gradients([&](const std::vector<Tensor>& xs) { return patcher.forward(xs[0]); },
                    {rand_tensor({2, 3, 8, 12}, rng)});
    Patcher gray(1, 2);
    check_gradients([&](const std::vector<Tensor>& xs) { return gray.forward(xs[0]); },
                    {rand_tensor({1, 1, 6, 4}, rng)});
}

TEST_CASE("Patcher: errors name the sizes", "[vit][layer:Patcher][errors]") {
    Patcher patcher(3, 4);
    require_error([&] { patcher.forward(Tensor::zeros({3, 8, 12})); }, {"Patcher", "[B, C, H, W]", "[3, 8, 12]"});
    require_error([&] { patcher.forward(Tensor::zeros({2, 1, 8, 12})); }, {"Patcher", "3 channels", "[2, 1, 8, 12]"});
    require_error([&] { patcher.forward(Tensor::zeros({1, 3, 10, 12})); }, {"Patcher", "10x12", "patch size 4"});
    require_error([&] { patcher.forward(Tensor::zeros({1, 3, 8, 14})); }, {"Patcher", "8x14", "patch size 4"});
    require_error([&] { Patcher(3, 0); }, {"Patcher", "patch size (0)"});
}

TEST_CASE("Patcher: ViTs Explained's transpose(1,0) swaps batch and features, transpose(2,1) is the patcher",
          "[vit][layer:Patcher][documents]") {
    Rng rng(5);
    Tensor x = rand_tensor({2, 3, 8, 12}, rng, -1, 1, false);
    Tensor split = unfold(x, 4, 4, 4, 4);  // ViTs Explained's nn.Unfold: [B, C*P*P, N] = [2, 48, 6]
    Patcher patcher(3, 4);
    CHECK(transpose(split, 1, 0).shape() == Shape{48, 2, 6});
    CHECK(patcher.forward(x).shape() == Shape{2, 6, 48});
    require_close(transpose(split, 2, 1), patcher.forward(x), 0);
}

}  // namespace patchgrad::test
