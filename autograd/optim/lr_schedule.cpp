#include "patchgrad/autograd/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace patchgrad {

void LRSchedule::validate() const {
    std::ostringstream problem;
    if (!(base_lr > 0) || !std::isfinite(base_lr))
        problem << "base_lr must be positive, got " << base_lr;
    else if (total < 1)
        problem << "total must be at least 1 step, got " << total;
    else if (warmup < 0 || warmup > total)
        problem << "warmup must be in [0, total = " << total << "] steps, got " << warmup;
    else if (!(min_lr >= 0) || min_lr > base_lr)
        problem << "min_lr must be in [0, base_lr = " << base_lr << "], got " << min_lr;
    else if (kind == ScheduleKind::Step && step_size < 1)
        problem << "step_size must be at least 1 step, got " << step_size;
    else if (kind == ScheduleKind::Step && !(gamma > 0 && gamma <= 1))
        problem << "gamma must be in (0, 1], got " << gamma;
    if (!problem.str().empty()) throw std::invalid_argument("LRSchedule: " + problem.str());
}

// The schedules of lr_schedule.h, step by step.
// [hide:cosine-schedule]
// Warmup: step + 1 so that step 0 already moves (lr > 0) and step warmup - 1 reaches base_lr.
// After it, t counts from 0: cosine from base_lr at t = 0 down to min_lr at t = T (and stays
// there), step multiplies by gamma every step_size steps, constant stays at base_lr.
// [/hide:cosine-schedule]
double LRSchedule::lr_at(int64_t step) const {
    // [exercise:cosine-schedule]
    if (step < warmup) return base_lr * double(step + 1) / double(warmup);
    const int64_t t = step - warmup;
    if (kind == ScheduleKind::Cosine) {
        const int64_t T = std::max<int64_t>(total - warmup, 1);
        const double progress = std::min(double(t) / double(T), 1.0);
        return min_lr + (base_lr - min_lr) * 0.5 * (1 + std::cos(3.14159265358979323846 * progress));
    }
    if (kind == ScheduleKind::Step) return base_lr * std::pow(gamma, double(t / step_size));  // integer t / step_size
    return base_lr;
    // [/exercise:cosine-schedule]
}

}  // namespace patchgrad
