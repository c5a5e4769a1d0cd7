#include "patchgrad/vit/positional_encoding.h"

#include <cmath>
#include <stdexcept>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

Tensor sinusoidal_positional_encoding(int64_t num_positions, int64_t dim) {
    check(num_positions > 0 && dim > 0, "sinusoidal_positional_encoding: num_positions (", num_positions, ") and dim (",
          dim, ") must be positive");
    Tensor table = Tensor::zeros({1, num_positions, dim});
    // [exercise:sinusoidal-encoding]
    real* pe = table.data();
    for (int64_t pos = 0; pos < num_positions; ++pos) {
        for (int64_t i2 = 0; i2 < dim; i2 += 2) {
            // Computed in double so the float table is the correctly rounded value.
            const double angle = double(pos) / std::pow(10000.0, double(i2) / double(dim));
            pe[pos * dim + i2] = static_cast<real>(std::sin(angle));
            if (i2 + 1 < dim) pe[pos * dim + i2 + 1] = static_cast<real>(std::cos(angle));
        }
    }
    // [/exercise:sinusoidal-encoding]
    return table;
}

// [snippet:pos-table]
PositionalEncoding::PositionalEncoding(int64_t num_positions, int64_t dim, bool learnable, Rng& init)
    : learnable(learnable) {
    check(num_positions > 0 && dim > 0, "PositionalEncoding: num_positions (", num_positions, ") and dim (", dim,
          ") must be positive");
    table = learnable ? Tensor::trunc_normal({1, num_positions, dim}, 0, 0.02, -2, 2, init)
                      : sinusoidal_positional_encoding(num_positions, dim);
    if (learnable) register_parameter("pos_embed", table);
}
// [/snippet:pos-table]

Tensor PositionalEncoding::forward(const Tensor& x) {
    const Shape& t = table.shape();
    check(x.dim() == 3 && x.size(1) == t[1] && x.size(2) == t[2], "PositionalEncoding: expected x [B, ", t[1], ", ",
          t[2], "], got shape ", x.shape());
    return x + table;
}

}  // namespace patchgrad
