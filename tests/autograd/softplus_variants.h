// softplus_variants.h — softplus with its right backward written two ways and with planted
// bugs, for grading chapter 3's exercise softplus-gradcheck (autograd/gradcheck_softplus.cpp):
// a gradient check must accept the right ones and refuse every wrong one. Used by
// tests/autograd/test_softplus.cpp and by the grader's probe (tutorials/tools/probe.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/tensor.h"

namespace patchgrad::test {

struct SoftplusVariant {
    const char* name;
    bool right;  // whether a good gradient check must accept it
};

// The variants, in the order softplus_variant() takes them.
inline const std::vector<SoftplusVariant>& softplus_variants() {
    static const std::vector<SoftplusVariant> all = {
        {"the library's backward", true},
        {"the derivative from the output, 1 - exp(-y)", true},
        {"the sign flipped", false},
        {"the upstream gradient dy ignored (as if it were all ones)", false},
        {"the gradient assigned instead of added (a second use of x overwrites the first)", false},
        {"wrong for negative inputs (sigmoid(|x|))", false},
        {"sigmoid as exp(x) / (1 + exp(x)): nan once exp overflows (x > 709)", false},
        {"only the first 64 elements get a gradient", false},
    };
    return all;
}

// softplus(x) whose forward is the library's and whose backward is variant `which`.
inline Tensor softplus_variant(const Tensor& x, size_t which) {
    if (which == 0) return softplus(x);
    Tensor y;
    {
        NoGradGuard no_grad;
        y = softplus(x);
    }
    Tensor out = Tensor::from_vector(x.shape(), y.to_vector());
    record(out, "softplus_variant", {x}, [x, y, which](Tensor& o) mutable {
        const real* dy = o.grad_data();
        const real* xd = x.data();
        real* dx = x.grad_data();
        const int64_t n = x.numel();
        for (int64_t i = 0; i < n; ++i) {
            const real v = xd[i];
            const real right = 1 / (1 + std::exp(-v));
            switch (which) {
                case 1:
                    dx[i] += dy[i] * -std::expm1(-y.data()[i]);
                    break;
                case 2:
                    dx[i] -= dy[i] * right;
                    break;
                case 3:
                    dx[i] += right;
                    break;
                case 4:
                    dx[i] = dy[i] * right;
                    break;
                case 5:
                    dx[i] += dy[i] / (1 + std::exp(-std::abs(v)));
                    break;
                case 6:
                    dx[i] += dy[i] * (std::exp(v) / (1 + std::exp(v)));
                    break;
                default:
                    dx[i] += i < 64 ? dy[i] * right : 0;
                    break;
            }
        }
    });
    return out;
}

}  // namespace patchgrad::test
