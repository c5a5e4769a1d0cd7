// lr_schedule.h — the learning rate as a function of the optimizer step.
//
// Every schedule starts with an optional linear warmup: lr rises from base_lr / warmup to
// base_lr over the first `warmup` steps (Transformers trained with Adam diverge or stall
// when the first updates, made with poor second-moment estimates, are full size). After
// the warmup, step t = step - warmup of T = total - warmup:
//
//   constant:  base_lr
//   cosine:    min_lr + (base_lr - min_lr) (1 + cos(pi t / T)) / 2     (SGDR without restarts)
//   step:      base_lr * gamma ^ floor(t / step_size)                  (torch StepLR)
//
// A pure function of the step, so a resumed run only needs the step count to continue the
// schedule exactly.
#pragma once

#include <cstdint>
#include <utility>

#include "patchgrad/autograd/enum_names.h"

namespace patchgrad {

enum class ScheduleKind { Constant, Cosine, Step };
template <>
struct EnumNames<ScheduleKind> {  // as --schedule and checkpoints spell them
    static constexpr std::pair<ScheduleKind, const char*> table[] = {
        {ScheduleKind::Constant, "constant"}, {ScheduleKind::Cosine, "cosine"}, {ScheduleKind::Step, "step"}};
};

struct LRSchedule {
    ScheduleKind kind = ScheduleKind::Cosine;
    double base_lr = 1e-3;
    int64_t warmup = 0;     // steps
    int64_t total = 1;      // steps in the whole run (cosine reaches min_lr there)
    double min_lr = 0;      // cosine
    int64_t step_size = 1;  // step: steps between decays
    double gamma = 0.1;     // step: factor per decay

    // Throws std::invalid_argument naming the field for a non-positive lr or total, a
    // negative warmup or min_lr, warmup > total, ...
    void validate() const;
    double lr_at(int64_t step) const;  // step 0 is the first optimizer step
};

}  // namespace patchgrad
