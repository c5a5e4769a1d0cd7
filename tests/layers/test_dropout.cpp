#include <memory>

#include "catch.h"
#include "layers/layer_test_util.h"
#include "patchgrad/layers/dropout.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("Dropout: training zeroes about p of the elements and scales the rest by 1/(1-p)",
          "[layer:Dropout][forward]") {
    auto rng = std::make_shared<Rng>(20);
    Dropout drop(0.25, rng);
    CHECK(drop.type_name() == "Dropout");
    CHECK(drop.num_parameters() == 0);
    REQUIRE(drop.training());
    Rng data_rng(21);
    const Tensor x = rand_tensor({100, 100}, data_rng, 0.5, 1.5, false);
    const Tensor y = drop.forward(x);
    int64_t zeros = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
        if (y.data()[i] == 0) {
            ++zeros;
        } else {
            REQUIRE(y.data()[i] == Approx(x.data()[i] / 0.75).epsilon(1e-12));
        }
    }
    // 10000 Bernoulli(0.25) draws: standard deviation of the count ~ 43.
    CHECK(std::abs(zeros - 2500) < 250);

    // The mask comes from the Rng alone: the same state gives the same mask.
    *rng = Rng(20);
    CHECK(drop.forward(x).to_vector() == y.to_vector());
}

TEST_CASE("Dropout: the identity in eval mode or with p = 0, drawing no random numbers", "[layer:Dropout][forward]") {
    auto rng = std::make_shared<Rng>(22);
    Rng data_rng(23);
    const Tensor x = rand_tensor({3, 4}, data_rng);
    const auto state = rng->state();

    Dropout drop(0.5, rng);
    drop.eval();
    CHECK_FALSE(drop.training());
    CHECK(drop.forward(x).same(x));
    CHECK(rng->state() == state);

    drop.train();
    CHECK(drop.training());
    CHECK_FALSE(drop.forward(x).same(x));
    CHECK(rng->state() != state);

    Dropout none(0, nullptr);
    CHECK(none.training());
    CHECK(none.forward(x).same(x));
}

TEST_CASE("Dropout: gradcheck in training with the mask held fixed", "[layer:Dropout][gradcheck]") {
    auto rng = std::make_shared<Rng>(24);
    Dropout drop(0.3, rng);
    Rng data_rng(25);
    for (const Shape& shape : {Shape{7, 11}, Shape{3, 1, 5}}) {
        check_gradients(
            [&](const std::vector<Tensor>& xs) {
                *rng = Rng(26);
                return drop.forward(xs[0]);
            },
            {rand_tensor(shape, data_rng)}, 27);
    }
}

TEST_CASE("Dropout: errors name p", "[layer:Dropout][errors]") {
    auto rng = std::make_shared<Rng>(28);
    require_error([&] { Dropout(1, rng); }, {"Dropout", "1"});
    require_error([&] { Dropout(-0.5, rng); }, {"Dropout", "-0.5"});
    require_error([&] { Dropout(0.5, nullptr); }, {"Dropout", "0.5", "Rng"});
}

}  // namespace patchgrad
