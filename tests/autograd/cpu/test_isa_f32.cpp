// The instruction-set levels (autograd/cpu/cpu_isa.h) in float32, where training runs: at every
// level this CPU supports, each op with a per-level kernel gives the same bits on 1, 2 and 3
// threads, and its values and gradients agree with the baseline level's within float32
// rounding. (gemm against its reference at every level: test_gemm.cpp and test_gemm_f32.cpp.)
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/gemm/gemm_kernels.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

// The largest |a - b| / (|b|_max + 1) over one output: the error relative to the output's
// scale. Two levels differ by fused multiply-adds (one rounding where the baseline has two)
// and by vector-width summation orders, each a few units of float32 rounding (6e-8) per term.
double scaled_difference(const std::vector<real>& a, const std::vector<real>& b) {
    REQUIRE(a.size() == b.size());
    double scale = 0, worst = 0;
    for (real v : b) scale = std::max(scale, std::abs(double(v)));
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
    return worst / (scale + 1);
}

}  // namespace

TEST_CASE("isa: the CPU's levels, PATCHGRAD_ISA's names and set_isa's errors", "[isa][errors]") {
    const std::vector<Isa> isas = supported_isas();
    REQUIRE(!isas.empty());
    CHECK(isas.front() == Isa::Baseline);
    CHECK(std::is_sorted(isas.begin(), isas.end()));
    CHECK(parse_isa("avx2", "PATCHGRAD_ISA") == Isa::Avx2);
    CHECK(parse_isa("avx512", "PATCHGRAD_ISA") == Isa::Avx512);
    for (const char* name : {"baseline", "sse2", "neon", "generic"}) CHECK(parse_isa(name, "x") == Isa::Baseline);
    require_error([] { parse_isa("avx1024", "PATCHGRAD_ISA=avx1024"); },
                  {"PATCHGRAD_ISA=avx1024", "unknown instruction set 'avx1024'", "avx2", "avx512"});
    for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
        if (std::find(isas.begin(), isas.end(), isa) != isas.end()) continue;
        INFO("this CPU lacks " << isa_name(isa));
        require_error([isa] { set_isa(isa); }, {"set_isa", "does not support", isa_name(isa), "it has:"});
    }
}

TEST_CASE("isa: each level's gemm tile is whole vectors of its register width", "[isa][op:gemm]") {
    // Vector bytes per level (gemm_tile.h); a vector type whose width the compiler dropped
    // would show up here as one real per "vector".
    for_each_isa([&](Isa isa) {
        const GemmKernels& k = gemm_kernels(isa);
        const int64_t bytes = isa == Isa::Avx512 ? 64 : isa == Isa::Avx2 ? 32 : 16;
        CHECK(k.isa == isa);
        CHECK(k.vector * int64_t(sizeof(real)) == bytes);
        CHECK(k.nr % k.vector == 0);
        CHECK(k.nr / k.vector <= 3);
        CHECK(k.packed[k.nr / k.vector - 1] != nullptr);
        CHECK(gemm_kernel_description() ==
              std::string(isa_name(isa)) + ", tile " + std::to_string(k.mr) + " x " + std::to_string(k.nr));
    });
}

TEST_CASE("isa: PATCHGRAD_ISA, when set, is the level in use", "[isa]") {
    const char* forced = std::getenv("PATCHGRAD_ISA");
    if (!forced || !*forced) {
        CHECK(active_isa() == supported_isas().back());  // unset: the best the CPU has
        return;
    }
    CHECK(std::string(isa_name(active_isa())) ==
          isa_name(parse_isa(forced, "PATCHGRAD_ISA")));  // ctest runs this binary at every level
}

TEST_CASE("isa: every op with a per-level kernel gives the same bits on 1, 2 and 3 threads, at every level",
          "[isa][parallel][op:gemm][op:gelu][op:layer_norm][op:softmax]") {
    for_each_isa([&](Isa) {
        Rng rng(3);
        for (const OpCase& c : threaded_op_cases(rng)) {
            INFO(c.name);
            require_same_bits_for_any_thread_count(c.f, c.inputs);
        }
    });
}

TEST_CASE("isa: values and gradients at every level agree with the baseline's within float32 rounding",
          "[isa][op:gemm][op:gelu][op:layer_norm][op:softmax]") {
    Rng rng(3);
    const std::vector<OpCase> cases = threaded_op_cases(rng);
    std::vector<std::vector<std::vector<real>>> baseline;
    {
        IsaLevel level(Isa::Baseline);
        for (const OpCase& c : cases) baseline.push_back(values_and_gradients(1, c.f, c.inputs));
    }
    // The products sum up to 200 terms of |x| < 1 and the layer norms divide by a standard
    // deviation near 0.5: 2e-5 of the output's scale is ~300 float32 units of rounding, far
    // below any real fault (a wrong element, a missed tail), which is of order 1.
    const double tolerance = 2e-5;
    for_each_isa([&](Isa) {
        for (size_t i = 0; i < cases.size(); ++i) {
            INFO(cases[i].name);
            const auto result = values_and_gradients(1, cases[i].f, cases[i].inputs);
            REQUIRE(result.size() == baseline[i].size());
            for (size_t k = 0; k < result.size(); ++k) {
                INFO("output " << k << " (0: the value, k > 0: the gradient of input k - 1)");
                REQUIRE(scaled_difference(result[k], baseline[i][k]) <= tolerance);
            }
        }
    });
    // (At -O1, as in the sanitizer build, the compiler fuses no multiply-adds and the levels
    // may agree to the bit: that each level runs its own kernel is the tile test's to show.)
}

}  // namespace patchgrad
