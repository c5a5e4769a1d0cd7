// Tests for autograd/enum_names.h, on GELU's form (autograd/ops.h names it).
#include "patchgrad/autograd/enum_names.h"

#include "patchgrad/autograd/ops.h"
#include "test_util.h"

using namespace patchgrad;
using patchgrad::test::require_error;

TEST_CASE("enum names: one table gives the name, the choices and the value back", "[enum_names]") {
    CHECK(enum_name(GeluApproximation::None) == "none");
    CHECK(enum_name(GeluApproximation::Tanh) == "tanh");
    CHECK(enum_choices<GeluApproximation>() == "none or tanh");
    CHECK(enum_from_name<GeluApproximation>("tanh") == GeluApproximation::Tanh);
    CHECK_FALSE(enum_from_name<GeluApproximation>("Tanh").has_value());
    CHECK(parse_enum<GeluApproximation>("none", "gelu") == GeluApproximation::None);
    require_error([] { parse_enum<GeluApproximation>("erf", "checkpoint c: gelu"); },
                  {"checkpoint c: gelu 'erf' is not none or tanh"});
    // A value the table does not name is a programming error, never a silent "?".
    CHECK_THROWS_AS(enum_name(static_cast<GeluApproximation>(7)), std::logic_error);
}
