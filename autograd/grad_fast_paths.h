// grad_fast_paths.h — two faster ways for an op's backward to write a gradient, for the op
// files only. Every chapter writes a gradient one way: grad_data() and `+=` (tensor.h). These
// save the zero-fill of a gradient buffer that is about to be overwritten, or a copy of it.
//
//   grad_for_overwrite(x)   for a backward that writes EVERY element of x's gradient, with
//                           beta: g = value (beta == 0), g = g + value (beta == 1), as gemm's
//                           beta does. Never plain `+=`: when no gradient has arrived yet, the
//                           buffer is uninitialised (NaN in the PATCHGRAD_POISON_EMPTY builds).
//   grad_for_overwrite_if_wanted(x)
//                           the same, or {nullptr, 0} when x takes no gradient: the backward
//                           then skips x (gemm is not called for it).
//   add_to_grad(x, g)       x.grad += g[0 .. numel), for a backward that passes dOut on as it
//                           is (a same-shape add): a plain copy for the first gradient.
//   add_into_grad(x, grain, add)
//                           for an elementwise backward whose loop adds (`+=`) into x's
//                           gradient: add(begin, end, g) runs on parallel chunks of [0, numel)
//                           with g the gradient's buffer. A gradient that has not arrived yet
//                           is zero-filled a slice at a time just before `add` runs on it,
//                           while the slice is in cache, not all at once beforehand as
//                           grad_data() does, out to memory and back.
//   add_grad_from(x, out)   x.grad += out.grad, out being the op's result: add_to_grad, except
//                           that the first gradient takes out's buffer itself when backward()
//                           drops it after this backward anyway (an ExpendableGrad scope says
//                           so). Afterwards out.grad may be gone: the last use of it.
//
// When in doubt, use grad_data().
#pragma once

#include <algorithm>
#include <cstdint>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

struct GradOverwrite {
    real* data;
    real beta;  // 0: the buffer is uninitialised, write every element; 1: add
};
GradOverwrite grad_for_overwrite(const Tensor& x);
GradOverwrite grad_for_overwrite_if_wanted(const Tensor& x);

void add_to_grad(const Tensor& x, const real* g);

template <class Add>
void add_into_grad(const Tensor& x, int64_t grain, Add&& add, LoopSite site = {__builtin_FILE(), __builtin_LINE()}) {
    constexpr int64_t kSlice = 4096;  // 16 KiB of float: filled, then added into, in L1
    const GradOverwrite g = grad_for_overwrite(x);
    parallel_for(
        x.numel(), grain,
        [&](int64_t begin, int64_t end) {
            for (int64_t b = begin; b < end; b += kSlice) {
                const int64_t e = std::min(end, b + kSlice);
                if (g.beta == 0) std::fill(g.data + b, g.data + e, real(0));
                add(b, e, g.data);
            }
        },
        site);
}

// Throws std::logic_error if out has no gradient, std::invalid_argument if it has another
// number of elements than x.
void add_grad_from(const Tensor& x, const Tensor& out);

// While it lives, `node`'s gradient may be handed over by add_grad_from (`expendable`: the
// engine drops it after node's backward). backward() opens one around each node's backward.
class ExpendableGrad {
public:
    ExpendableGrad(const TensorImpl& node, bool expendable);
    ~ExpendableGrad();
    ExpendableGrad(const ExpendableGrad&) = delete;
    ExpendableGrad& operator=(const ExpendableGrad&) = delete;

private:
    const TensorImpl* previous_;
};

}  // namespace patchgrad
