// gradcheck.h — compare analytic gradients with central finite differences.
//
// For every element x_i of every input that requires grad:
//     numeric_i  = (f(x + h e_i) - f(x - h e_i)) / 2h          (error O(h^2))
//     analytic_i = the .grad that backward() leaves in x_i
// and an element passes when EITHER rule holds:
//     relative: |a - n| / max(|a|, |n|, tiny)  <=  max_rel_error    (CS231n's formula; it
//              grades the error on a sliding scale, 1e-7 and below good: 1e-6 is our bound)
//     PyTorch:  |a - n|  <=  atol + rtol * |n|   (the rule torch.autograd.gradcheck uses)
// The second rule is what lets gradients that are truly ~0 pass: there the relative error
// is meaningless noise.
//
// This only makes sense in float64: in float32 the rounding error of f (~1e-7 |f|) divided
// by 2h swamps the check. So gradcheck exists only in the double build (patchgrad_*64).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "patchgrad/autograd/tensor.h"

#ifndef PATCHGRAD_DOUBLE
#error "gradcheck.h needs the float64 build: link patchgrad_autograd64 (it defines PATCHGRAD_DOUBLE)"
#endif

namespace patchgrad {

// [snippet:gradcheck-options]
struct GradcheckOptions {
    double step = 1e-6;           // h
    double max_rel_error = 1e-6;  // relative error (CS231n's formula; the bound is ours)
    double atol = 1e-8;           // PyTorch rule
    double rtol = 1e-6;
    // Check at most this many elements per input, drawn at random (0 = check all). Big
    // inputs (a whole ViT's weights) are sampled; every element is still in the analytic pass.
    int64_t max_elements_per_input = 0;
    uint64_t seed = 0;  // for the sample
};
// [/snippet:gradcheck-options]

struct InputReport {
    int64_t checked = 0;       // elements compared
    double max_abs_error = 0;  // max |a - n|
    double max_rel_error = 0;  // max relative error
    int64_t worst_index = -1;  // flat index of the element with the largest relative error
    double worst_analytic = 0, worst_numeric = 0;
    int64_t failures = 0;  // elements failing both rules
    bool passed() const { return failures == 0; }
};

struct GradcheckResult {
    std::vector<InputReport> inputs;  // one per input; inputs without requires_grad are skipped (checked = 0)
    bool passed() const;
    std::string summary() const;  // one line per input
};

// [snippet:gradcheck-function]
using ScalarFunction = std::function<Tensor(const std::vector<Tensor>&)>;

// `f` maps the inputs to a one-element tensor. The inputs' values are restored afterwards and
// their .grad cleared. `f` must be deterministic: reseed any Rng it uses inside it.
GradcheckResult gradcheck(const ScalarFunction& f, std::vector<Tensor> inputs, const GradcheckOptions& options = {});
// [/snippet:gradcheck-function]

// Chapter 3's exercise softplus-gradcheck: whether `softplus_op` (softplus, ops.h: its forward
// and backward) has a backward that matches its forward, decided with gradcheck. Graded on the
// library's softplus, which it must accept, and on planted wrong backwards, which it must refuse.
bool softplus_gradient_is_right(const std::function<Tensor(const Tensor&)>& softplus_op);

}  // namespace patchgrad
