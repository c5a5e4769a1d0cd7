#include <memory>
#include <set>

#include "catch.h"
#include "layers/layer_test_util.h"
#include "patchgrad/layers/patch_dropout.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {
// x [B, T, D] with x[b, t, d] = 1000 b + t + d / 100: each row says where it came from.
Tensor labelled_tokens(int64_t B, int64_t T, int64_t D) {
    Tensor x = Tensor::empty({B, T, D});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t d = 0; d < D; ++d) x.data()[(b * T + t) * D + d] = real(1000 * b + t) + real(d) / 100;
    return x;
}
}  // namespace

TEST_CASE("PatchDropout: each image keeps the class token and its own sorted subset of K patches",
          "[layer:PatchDropout][forward]") {
    auto rng = std::make_shared<Rng>(30);
    PatchDropout drop(0.25, 1, rng);
    CHECK(drop.type_name() == "PatchDropout");
    CHECK(drop.num_parameters() == 0);
    CHECK(patch_dropout_kept(0.25, 64) == 48);
    CHECK(patch_dropout_kept(0.25, 3) == 2);
    CHECK(patch_dropout_kept(0.9, 5) == 1);  // never none
    const int64_t B = 40, N = 16, D = 3;
    const Tensor x = labelled_tokens(B, 1 + N, D);
    const Tensor y = drop.forward(x);
    REQUIRE(y.shape() == Shape{B, 1 + 12, D});
    std::set<std::vector<int64_t>> subsets;
    std::vector<int64_t> times_kept(N + 1, 0);
    for (int64_t b = 0; b < B; ++b) {
        std::vector<int64_t> rows;
        for (int64_t k = 0; k < 13; ++k) {
            const real* row = y.data() + (b * 13 + k) * D;
            const int64_t t = static_cast<int64_t>(row[0]) - 1000 * b;
            for (int64_t d = 0; d < D; ++d) REQUIRE(row[d] == x.data()[(b * (N + 1) + t) * D + d]);
            rows.push_back(t);
            ++times_kept[t];
        }
        REQUIRE(rows[0] == 0);                                            // the class token, first
        for (int64_t k = 1; k < 13; ++k) REQUIRE(rows[k] > rows[k - 1]);  // distinct, in order
        subsets.insert(rows);
    }
    CHECK(subsets.size() > 30);  // images draw their own subsets
    CHECK(times_kept[0] == B);
    // 40 images x 12 of 16 patches: each patch is kept 30 times on average (sd ~2.7).
    for (int64_t t = 1; t <= N; ++t) CHECK(std::abs(times_kept[t] - 30) < 12);

    // The draw comes from the Rng alone.
    *rng = Rng(30);
    CHECK(drop.forward(x).to_vector() == y.to_vector());
}

TEST_CASE("PatchDropout: the identity in eval mode or with p = 0, drawing no random numbers",
          "[layer:PatchDropout][forward]") {
    auto rng = std::make_shared<Rng>(31);
    const Tensor x = labelled_tokens(2, 5, 4);
    const auto state = rng->state();
    PatchDropout drop(0.5, 1, rng);
    drop.eval();
    CHECK(drop.forward(x).same(x));
    CHECK(rng->state() == state);
    drop.train();
    CHECK(drop.forward(x).shape() == Shape{2, 3, 4});
    CHECK(rng->state() != state);
    PatchDropout none(0, 1, nullptr);
    CHECK(none.forward(x).same(x));
}

TEST_CASE("PatchDropout: gradcheck in training with the draw held fixed", "[layer:PatchDropout][gradcheck]") {
    auto rng = std::make_shared<Rng>(32);
    PatchDropout drop(0.4, 1, rng);
    Rng data_rng(33);
    check_gradients(
        [&](const std::vector<Tensor>& xs) {
            *rng = Rng(34);
            return drop.forward(xs[0]);
        },
        {rand_tensor({3, 6, 4}, data_rng)}, 35);
}

TEST_CASE("PatchDropout: errors name p and the shape", "[layer:PatchDropout][errors]") {
    auto rng = std::make_shared<Rng>(36);
    require_error([&] { PatchDropout(1, 1, rng); }, {"PatchDropout", "1"});
    require_error([&] { PatchDropout(-0.5, 1, rng); }, {"PatchDropout", "-0.5"});
    require_error([&] { PatchDropout(0.5, 1, nullptr); }, {"PatchDropout", "0.5", "Rng"});
    PatchDropout drop(0.5, 1, rng);
    require_error([&] { drop.forward(Tensor::zeros({2, 1, 4})); }, {"PatchDropout", "[2, 1, 4]"});
    require_error([&] { drop.forward(Tensor::zeros({2, 4})); }, {"PatchDropout", "[2, 4]"});
}

}  // namespace patchgrad
