#include <cmath>

#include "catch.h"
#include "patchgrad/autograd/optim/lr_schedule.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("lr_schedule: linear warmup, then cosine down to min_lr at step total, one past the last",
          "[lr_schedule][ex:cosine-schedule]") {
    LRSchedule s;
    s.kind = ScheduleKind::Cosine;
    s.base_lr = 1e-3;
    s.warmup = 4;
    s.total = 14;
    s.min_lr = 1e-5;
    s.validate();
    REQUIRE(s.lr_at(0) == Approx(0.25e-3));
    REQUIRE(s.lr_at(1) == Approx(0.5e-3));
    REQUIRE(s.lr_at(3) == Approx(1e-3));
    REQUIRE(s.lr_at(4) == Approx(1e-3));  // t = 0 of the cosine
    // t = 5 of T = 10: halfway, (1 + cos(pi/2)) / 2 = 1/2
    REQUIRE(s.lr_at(9) == Approx(1e-5 + (1e-3 - 1e-5) * 0.5));
    REQUIRE(s.lr_at(14) == Approx(1e-5));
    REQUIRE(s.lr_at(100) == Approx(1e-5));  // stays at the floor past the end
    for (int64_t k = 4; k < 14; ++k) REQUIRE(s.lr_at(k + 1) < s.lr_at(k));
}

TEST_CASE("lr_schedule: step decay and constant", "[lr_schedule][ex:cosine-schedule]") {
    LRSchedule s;
    s.kind = ScheduleKind::Step;
    s.base_lr = 0.1;
    s.total = 100;
    s.step_size = 30;
    s.gamma = 0.5;
    s.validate();
    REQUIRE(s.lr_at(0) == Approx(0.1));
    REQUIRE(s.lr_at(29) == Approx(0.1));
    REQUIRE(s.lr_at(30) == Approx(0.05));
    REQUIRE(s.lr_at(65) == Approx(0.025));
    s.kind = ScheduleKind::Constant;
    s.warmup = 10;
    REQUIRE(s.lr_at(4) == Approx(0.05));
    REQUIRE(s.lr_at(50) == Approx(0.1));
}

TEST_CASE("lr_schedule: no warmup, all warmup, and step decay counted after the warmup",
          "[lr_schedule][ex:cosine-schedule]") {
    LRSchedule s;
    s.kind = ScheduleKind::Cosine;
    s.base_lr = 2e-3;
    s.min_lr = 0;
    s.total = 4;
    s.warmup = 0;  // no warmup: step 0 is already the top of the cosine
    s.validate();
    REQUIRE(s.lr_at(0) == Approx(2e-3));
    REQUIRE(s.lr_at(1) == Approx(2e-3 * 0.5 * (1 + std::cos(M_PI / 4))));
    REQUIRE(s.lr_at(4) == Approx(0).margin(1e-15));
    s.warmup = 4;  // the whole run is warmup; afterwards the cosine has T = 1 and ends at once
    REQUIRE(s.lr_at(0) == Approx(0.5e-3));
    REQUIRE(s.lr_at(3) == Approx(2e-3));
    REQUIRE(s.lr_at(4) == Approx(2e-3));
    REQUIRE(s.lr_at(5) == Approx(0).margin(1e-15));
    s.kind = ScheduleKind::Step;
    s.total = 20;
    s.warmup = 2;
    s.step_size = 5;
    s.gamma = 0.1;
    s.validate();
    REQUIRE(s.lr_at(1) == Approx(2e-3));
    REQUIRE(s.lr_at(6) == Approx(2e-3));   // t = 4
    REQUIRE(s.lr_at(7) == Approx(2e-4));   // t = 5
    REQUIRE(s.lr_at(16) == Approx(2e-5));  // t = 14
}

TEST_CASE("lr_schedule: nonsense is an error naming the field", "[lr_schedule][errors]") {
    auto bad = [](auto change, std::vector<std::string> fragments) {
        LRSchedule s;
        s.total = 10;
        change(s);
        require_error([&] { s.validate(); }, fragments);
    };
    // An unknown kind cannot be stored in the enum; it is refused where text becomes a kind.
    require_error([] { parse_enum<ScheduleKind>("linear", "schedule"); },
                  {"schedule 'linear' is not constant, cosine or step"});
    bad([](LRSchedule& s) { s.base_lr = 0; }, {"LRSchedule", "base_lr", "positive", "0"});
    bad([](LRSchedule& s) { s.total = 0; }, {"LRSchedule", "total"});
    bad([](LRSchedule& s) { s.warmup = 11; }, {"LRSchedule", "warmup", "11"});
    bad([](LRSchedule& s) { s.min_lr = 1; }, {"LRSchedule", "min_lr"});
    bad(
        [](LRSchedule& s) {
            s.kind = ScheduleKind::Step;
            s.step_size = 0;
        },
        {"LRSchedule", "step_size"});
    bad(
        [](LRSchedule& s) {
            s.kind = ScheduleKind::Step;
            s.gamma = 2;
        },
        {"LRSchedule", "gamma", "2"});
}

}  // namespace patchgrad
