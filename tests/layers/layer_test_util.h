// layer_test_util.h — helpers shared by the tests of layers/.
#pragma once

#include <cmath>
#include <vector>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/tensor.h"
#include "patchgrad/layers/module.h"

namespace patchgrad::test {

// Overwrites every parameter of `m` with uniform values in [low, high). The default init
// (weights of std 0.02, LayerNorm weight 1, zero biases) would make many gradient terms
// tiny or identical, and a gradient check could not tell those apart from a bug.
inline void randomize_parameters(Module& m, Rng& rng, real low = -1, real high = 1) {
    for (Tensor& p : m.parameters())
        for (int64_t i = 0; i < p.numel(); ++i) p.data()[i] = static_cast<real>(rng.uniform(low, high));
}

// {x, every parameter of m}: the inputs of a gradient check of m's forward. They are the
// module's own tensors, so the check's in-place perturbations reach the forward.
inline std::vector<Tensor> with_parameters(const Tensor& x, const Module& m) {
    std::vector<Tensor> inputs{x};
    for (const Tensor& p : m.parameters()) inputs.push_back(p);
    return inputs;
}

// x [rows, in] @ weight[out, in]^T + bias, one dot product at a time in double.
inline std::vector<double> naive_linear(const std::vector<double>& x, int64_t rows, int64_t in, const Tensor& weight,
                                        const Tensor& bias) {
    const int64_t out = weight.size(0);
    std::vector<double> y(rows * out);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < out; ++o) {
            double s = bias.defined() ? bias.data()[o] : 0;
            for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * weight.data()[o * in + i];
            y[r * out + o] = s;
        }
    return y;
}

inline std::vector<double> to_doubles(const Tensor& t) { return std::vector<double>(t.data(), t.data() + t.numel()); }

inline Tensor from_doubles(const Shape& shape, const std::vector<double>& v) {
    return Tensor::from_vector(shape, std::vector<real>(v.begin(), v.end()));
}

inline double gelu_exact(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

}  // namespace patchgrad::test
