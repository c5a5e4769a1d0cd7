// thread_choice.h: `--threads auto` times a sample of the step (step_sample.h) and picks the
// fewest threads within 5% of the fastest, never more than the sample's main loops have tasks.
#include <algorithm>
#include <cstdint>

#include "autograd/determinism_util.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/vit/train/thread_choice.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("thread choice: the step sample's main loops offer at least 16 tasks, so 16 threads have work",
          "[thread_choice][parallel]") {
    // Every loop of the sample that holds 5% of its time: the weight gradients split across K
    // (gemm_k_groups), the bias and LayerNorm sums in blocks (sum_row_block), the rows.
    CHECK(step_sample_task_limit(StepSample()) >= 16);
}

TEST_CASE("thread choice: choose_thread_count picks a count it tried and leaves the setting alone",
          "[thread_choice][parallel]") {
    ThreadCount guard(3);
    const ThreadChoice one = choose_thread_count(1);  // nothing to choose: no measurement
    CHECK(one.threads == 1);
    CHECK(one.candidates == 1);
    CHECK(one.speedup == 1);
    const ThreadChoice choice = choose_thread_count(4);
    CHECK(choice.candidates >= 1);
    CHECK(choice.candidates <= 4);
    CHECK(choice.threads >= 1);
    CHECK(choice.threads <= choice.candidates);
    CHECK(choice.candidates <= std::max<int64_t>(1, choice.task_limit));      // never more threads than tasks
    CHECK((choice.threads == 1 ? choice.speedup == 1 : choice.speedup > 1));  // never slower than one
    CHECK(choice.speedup * 1.05 >= choice.best_speedup);                      // within 5% of the fastest
    if (choice.threads > 1) CHECK(choice.best_speedup > 1.05);                // more threads must pay
    CHECK(num_threads() == 3);
}
