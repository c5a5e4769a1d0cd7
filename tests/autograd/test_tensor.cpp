// Tensor storage, creation, element access, printing and the explicit RNG.
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/tensor.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("tensor: creation helpers fill shape and values", "[tensor]") {
    Tensor z = Tensor::zeros({2, 3});
    REQUIRE(z.shape() == Shape{2, 3});
    REQUIRE(z.numel() == 6);
    REQUIRE(z.dim() == 2);
    for (real v : z.to_vector()) REQUIRE(v == 0);

    Tensor o = Tensor::ones({4});
    for (real v : o.to_vector()) REQUIRE(v == 1);

    Tensor f = Tensor::full({2, 2}, real(2.5));
    REQUIRE(f.at({1, 1}) == real(2.5));

    Tensor s = Tensor::scalar(3);
    REQUIRE(s.dim() == 0);
    REQUIRE(s.numel() == 1);
    REQUIRE(s.item() == 3);

    Tensor r = Tensor::arange(0, 5);
    REQUIRE(r.to_vector() == std::vector<real>{0, 1, 2, 3, 4});
    REQUIRE(Tensor::arange(1, 2, real(0.25)).numel() == 4);
    REQUIRE(Tensor::arange(3, 0, -1).to_vector() == std::vector<real>{3, 2, 1});

    Tensor v = Tensor::from_vector({2, 3}, {0, 1, 2, 3, 4, 5});
    REQUIRE(v.at({0, 2}) == 2);
    REQUIRE(v.at({1, 0}) == 3);  // row-major: offset 1*3 + 0
    v.at({1, 0}) = 7;
    REQUIRE(v.data()[3] == 7);
    REQUIRE(v.size(-1) == 3);
    REQUIRE(v.size(0) == 2);
}

TEST_CASE("tensor: bad shapes and indices are clear errors", "[tensor][errors]") {
    require_error([] { Tensor::from_vector({2, 3}, {1, 2, 3}); }, {"from_vector", "[2, 3]", "3 values"});
    require_error([] { Tensor::zeros({2, -1}); }, {"negative", "[2, -1]"});
    Tensor t = Tensor::zeros({2, 3});
    require_error([&] { t.at({2, 0}); }, {"at", "[2, 3]"});
    require_error([&] { t.at({0}); }, {"at", "1 indices", "[2, 3]"});
    require_error([&] { t.item(); }, {"item", "[2, 3]"});
    require_error([&] { t.size(2); }, {"axis 2", "[2, 3]"});
    require_error([] { Tensor::arange(0, 5, -1); }, {"arange"});
    require_error(
        [] {
            Tensor u;
            u.shape();
        },
        {"undefined"});
}

// 2^32 x 2^32 elements wrapped around to 0 (bench matmul 4294967296 ... segfaulted).
TEST_CASE("tensor: sizes that do not fit 64 bits or the machine are refused, never wrapped", "[tensor][errors]") {
    const int64_t big = int64_t(1) << 32;
    CHECK(product_fits(big, big / 2 - 1));
    CHECK_FALSE(product_fits(big, big));
    CHECK(product_fits(std::numeric_limits<int64_t>::max(), 1));
    CHECK(product_fits(std::numeric_limits<int64_t>::max(), 0));
    CHECK(checked_mul(3, 4, "test") == 12);
    require_error([&] { checked_mul(big, big, "matmul: A [M, K]"); },
                  {"matmul: A [M, K]", "4294967296 x 4294967296", "64-bit"});
    CHECK(checked_add(2, 3, "test") == 5);
    require_error([] { checked_add(std::numeric_limits<int64_t>::max(), 1, "parameters"); }, {"parameters", "+ 1"});

    CHECK(shape_numel({big, 2}) == 2 * big);
    CHECK(shape_numel({big, 0, big, big}) == 0);  // an empty tensor, however long its other sides
    require_error([&] { shape_numel({big, big}); }, {"shape [4294967296, 4294967296]", "64-bit"});
    require_error([&] { Tensor::zeros({big, big, big}); }, {"[4294967296, 4294967296, 4294967296]"});
    require_error([&] { reshape(Tensor::zeros({0}), {big, big, 0, -1}); }, {"reshape"});

    // Representable, but more than any machine's memory: refused before any allocation,
    // saying how much it was (a std::bad_alloc, so out-of-memory handlers still catch it).
    try {
        Tensor::empty({big, big / 2 - 1});
        FAIL("expected OutOfMemory");
    } catch (const OutOfMemory& e) {
        CHECK(std::string(e.what()).find("out of memory: cannot allocate") != std::string::npos);
        CHECK(std::string(e.what()).find(std::to_string(big * (big / 2 - 1)) + " reals") != std::string::npos);
    }
    Rng rng(1);
    CHECK_THROWS_AS(Tensor::normal({big, big / 2 - 1}, 0, 1, rng), std::bad_alloc);
}

TEST_CASE("tensor: printing shows shape and values, cutting long dimensions", "[tensor]") {
    Tensor t = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
    const std::string s = t.str();
    REQUIRE(s.find("[[1, 2]") != std::string::npos);
    REQUIRE(s.find("[3, 4]]") != std::string::npos);
    REQUIRE(s.find("shape=[2, 2]") != std::string::npos);

    const std::string long_str = Tensor::arange(0, 100).str();
    REQUIRE(long_str.find("...") != std::string::npos);
    REQUIRE(long_str.find("99") != std::string::npos);
    REQUIRE(long_str.find("50") == std::string::npos);

    std::ostringstream os;
    os << Tensor::scalar(5);
    REQUIRE(os.str() == "tensor(5, shape=[])");
}

TEST_CASE("rng: the same seed gives the same stream, different seeds differ", "[tensor][rng]") {
    Rng a(42), b(42), c(43);
    for (int i = 0; i < 100; ++i) {
        const uint64_t x = a.next_u64();
        REQUIRE(x == b.next_u64());
        REQUIRE(x != c.next_u64());
    }
    // The state round-trips, so a checkpoint can resume the stream exactly.
    Rng d(7);
    d.normal();
    auto saved = d.state();
    const double next = d.normal();
    Rng e(0);
    e.set_state(saved);
    REQUIRE(e.normal() == next);
}

// A checkpoint holding four zeros as the dropout generator's state made below() loop for ever.
TEST_CASE("rng: the all-zero state, which the generator never leaves, is refused", "[tensor][rng][errors]") {
    Rng rng(3);
    const std::array<uint64_t, 4> before = rng.state();
    require_error([&] { rng.set_state({0, 0, 0, 0}); }, {"Rng::set_state", "all-zero"});
    CHECK(rng.state() == before);
    rng.set_state({0, 0, 0, 1});  // one bit is enough to move
    CHECK(rng.below(3) < 3);
}

TEST_CASE("rng: uniform, normal and below have the right statistics", "[tensor][rng]") {
    Rng rng(1);
    const int n = 200000;
    double sum = 0, sum_sq = 0, usum = 0;
    std::vector<int> counts(7, 0);
    for (int i = 0; i < n; ++i) {
        const double z = rng.normal();
        sum += z;
        sum_sq += z * z;
        const double u = rng.uniform();
        REQUIRE(u >= 0);
        REQUIRE(u < 1);
        usum += u;
        ++counts[rng.below(7)];
    }
    REQUIRE(std::abs(sum / n) < 0.01);
    REQUIRE(std::abs(sum_sq / n - 1) < 0.02);
    REQUIRE(std::abs(usum / n - 0.5) < 0.005);
    for (int c : counts) REQUIRE(std::abs(c - n / 7.0) < 0.02 * n / 7.0);
}

TEST_CASE("tensor: random creation uses only the given Rng", "[tensor][rng]") {
    Rng r1(3), r2(3);
    Tensor a = Tensor::normal({3, 4}, 1, 2, r1);
    Tensor b = Tensor::normal({3, 4}, 1, 2, r2);
    REQUIRE(a.to_vector() == b.to_vector());

    Rng r3(5);
    Tensor u = Tensor::uniform({1000}, -2, 3, r3);
    for (real v : u.to_vector()) {
        REQUIRE(v >= -2);
        REQUIRE(v < 3);
    }

    // Truncated normal: every value inside [a, b], std shrunk by the truncation at +-1 sigma
    // (the variance of N(0,1) truncated to [-1, 1] is 1 - 2 phi(1) / (2 Phi(1) - 1) = 0.2911).
    Rng r4(9);
    Tensor t = Tensor::trunc_normal({100000}, 0, 1, -1, 1, r4);
    double ss = 0;
    for (real v : t.to_vector()) {
        REQUIRE(v >= -1);
        REQUIRE(v <= 1);
        ss += double(v) * v;
    }
    REQUIRE(std::abs(ss / t.numel() - 0.2911) < 0.005);
    require_error([&] { Tensor::trunc_normal({2}, 0, 1, 1, -1, r4); }, {"trunc_normal"});
}
