// softmax's row kernel in float32, at the instruction-set level the run forces (the rows are
// vectorised per level: cpu_isa.h). softmax_rows_forward runs its passes over groups of 8
// rows; what it promises is that a row comes out the same whichever rows share its group.
#include <cstring>
#include <vector>

#include "patchgrad/autograd/cpu/rows/softmax_rows.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("softmax: rows in groups of 8 give the bits of one row at a time, in place too",
          "[op:softmax][op:log_softmax][forward]") {
    Rng rng(11);
    for (int64_t n : {1, 7, 16, 17, 65}) {
        for (int64_t rows : {1, 7, 8, 9, 17, 19}) {
            INFO(rows << " rows of " << n);
            const Tensor x = rand_tensor({rows, n}, rng, -30, 30, false);
            std::vector<real> together(rows * n), alone(rows * n), in_place(x.data(), x.data() + rows * n);
            softmax_rows_forward(x.data(), together.data(), rows, n, false);
            for (int64_t r = 0; r < rows; ++r)
                softmax_rows_forward(x.data() + r * n, alone.data() + r * n, 1, n, false);
            softmax_rows_forward(in_place.data(), in_place.data(), rows, n, false);
            REQUIRE(std::memcmp(together.data(), alone.data(), together.size() * sizeof(real)) == 0);
            REQUIRE(std::memcmp(in_place.data(), alone.data(), alone.size() * sizeof(real)) == 0);

            // log_softmax takes the same row kernel, through the op: a row alone is a [1, n] tensor.
            const Tensor all = log_softmax(x, 1);
            for (int64_t r = 0; r < rows; ++r) {
                const Tensor one = log_softmax(slice(x, 0, r, r + 1), 1);
                REQUIRE(std::memcmp(all.data() + r * n, one.data(), n * sizeof(real)) == 0);
            }
        }
    }
}
