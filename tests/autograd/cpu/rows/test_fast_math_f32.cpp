// The vectorisable exp and erf of autograd/cpu/rows/fast_math.h against libm, over every range the
// ops feed them (float32 only: the double build uses libm itself).
#include <cmath>
#include <limits>

#include "patchgrad/autograd/cpu/rows/fast_math.h"
#include "test_util.h"

using namespace patchgrad;

TEST_CASE("fast_math: fast_exp is within 2.5e-7 relative of std::exp on [-87, 88]", "[fast_math][forward]") {
    double worst = 0;
    float worst_x = 0;
    for (float x = -87.0f; x <= 88.0f; x += 0.000731f) {
        const double exact = std::exp(double(x));
        const double err = std::abs(double(fast_exp(x)) - exact) / exact;
        if (err > worst) worst = err, worst_x = x;
    }
    INFO("worst relative error " << worst << " at x = " << worst_x);
    REQUIRE(worst < 2.5e-7);
}

TEST_CASE("fast_math: fast_exp at the edges: 0 at -inf and far below, exact 1 at 0, finite at the top, NaN for NaN",
          "[fast_math][forward]") {
    REQUIRE(fast_exp(-std::numeric_limits<float>::infinity()) == 0.0f);
    REQUIRE(fast_exp(-1000.0f) == 0.0f);
    REQUIRE(fast_exp(0.0f) == 1.0f);
    REQUIRE(fast_exp(88.3f) == Approx(std::exp(88.3f)).epsilon(1e-6));
    REQUIRE(std::isfinite(fast_exp(1000.0f)));  // saturates instead of overflowing
    // (Under UBSan this also checks that NaN never reaches the conversion to an integer.)
    REQUIRE(std::isnan(fast_exp(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("fast_math: fast_erf is within 4.1e-7 of std::erf and odd", "[fast_math][forward]") {
    double worst = 0;
    float worst_x = 0;
    for (float x = -8.0f; x <= 8.0f; x += 0.0001373f) {
        const double err = std::abs(double(fast_erf(x)) - std::erf(double(x)));
        if (err > worst) worst = err, worst_x = x;
        REQUIRE(fast_erf(-x) == -fast_erf(x));
    }
    INFO("worst absolute error " << worst << " at x = " << worst_x);
    // (Every float in [0, 8], on x86-64: 4.0e-7 without FMA, 3.5e-7 with; fast_math.h.)
    REQUIRE(worst < 4.1e-7);
    REQUIRE(fast_erf(0.0f) == 0.0f);
    REQUIRE(fast_erf(std::numeric_limits<float>::infinity()) == 1.0f);
    REQUIRE(fast_erf(-std::numeric_limits<float>::infinity()) == -1.0f);
    float gaussian = 0;
    REQUIRE(std::isnan(fast_erf(std::numeric_limits<float>::quiet_NaN(), &gaussian)));  // not 1
    REQUIRE(std::isnan(gaussian));
}

// GELU's backward takes phi's exponential from erf (gelu.cpp): the same erf, and exp(-x^2)
// within fast_exp's bound of the exponential of the float square it computes.
TEST_CASE("fast_math: fast_erf's exp(-x^2) is within 2.5e-7 relative", "[fast_math][forward]") {
    double worst = 0;
    float worst_x = 0;
    for (float x = -9.0f; x <= 9.0f; x += 0.0001373f) {
        float gaussian = -1;
        REQUIRE(fast_erf(x, &gaussian) == fast_erf(x));
        const float square = std::fabs(x) * std::fabs(x);
        const double exact = std::exp(-double(square));
        const double err = std::abs(double(gaussian) - exact) / exact;
        if (err > worst) worst = err, worst_x = x;
    }
    INFO("worst relative error " << worst << " at x = " << worst_x);
    REQUIRE(worst < 2.5e-7);
    float gaussian = -1;
    fast_erf(std::numeric_limits<float>::infinity(), &gaussian);
    REQUIRE(gaussian == 0.0f);
}
