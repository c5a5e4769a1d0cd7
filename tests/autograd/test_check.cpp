// check(): messages joined from parts only on failure, in the formats the hand-built
// messages used (shape_str, std::to_string), and the exception type chosen by the caller.
#include <stdexcept>
#include <string>

#include "catch.h"
#include "patchgrad/autograd/check.h"
#include "patchgrad/autograd/tensor.h"

using namespace patchgrad;

namespace {
std::string message_of(void (*f)()) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(nothing thrown)";
}
}  // namespace

TEST_CASE("check: a passing check throws nothing", "[check]") {
    const Shape shape{2, 3};
    REQUIRE_NOTHROW(check(true, "op: shape ", shape, " and ", 7, " and ", 0.5));
    REQUIRE_NOTHROW(check<std::out_of_range>(1 + 1 == 2, "never"));
}

TEST_CASE("check: a failing check joins its parts like the hand-built messages", "[check][errors]") {
    REQUIRE_THROWS_AS(check(false, "x"), std::invalid_argument);
    const std::string text = message_of([] {
        const std::string where = "load: a.bin";
        const Shape shape{2, 3, 4};
        const char* op = "matmul";
        check(false, where, ": ", op, " got ", shape, ", ", int64_t{-1}, " and ", size_t{12}, ", step ", 0.25, ", ",
              1.5f, ", empty ", Shape{});
    });
    REQUIRE(text == "load: a.bin: matmul got [2, 3, 4], -1 and 12, step " + std::to_string(0.25) + ", " +
                        std::to_string(1.5f) + ", empty []");
    REQUIRE(text.find("step 0.250000") != std::string::npos);  // std::to_string's six decimals
}

TEST_CASE("check and fail: the caller picks the exception type", "[check][errors]") {
    REQUIRE_THROWS_AS(check<std::out_of_range>(false, "at: index ", 5), std::out_of_range);
    REQUIRE_THROWS_AS(check<std::runtime_error>(false, "read"), std::runtime_error);
    REQUIRE_THROWS_AS(check<std::logic_error>(false, "engine"), std::logic_error);
    REQUIRE_THROWS_AS(fail("unknown ", 3), std::invalid_argument);
    REQUIRE(message_of([] { fail<std::runtime_error>("cifar10: could not read all ", 10, " bytes"); }) ==
            "cifar10: could not read all 10 bytes");
}
