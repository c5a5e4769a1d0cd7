// test_util.h — shared helpers for patchgrad's tests.
#pragma once

#include <cmath>
#include <filesystem>
#include <random>
#include <functional>
#include <string>
#include <vector>

#include "autograd/rng.h"
#include "autograd/tensor.h"
#include "catch.h"

#ifdef PATCHGRAD_DOUBLE
#include "autograd/gradcheck.h"
#endif

namespace patchgrad::test {

// Uniform values in [low, high): non-trivial inputs for gradient checks.
inline Tensor rand_tensor(const Shape& shape, Rng& rng, real low = -1, real high = 1, bool requires_grad = true) {
    return Tensor::uniform(shape, low, high, rng, requires_grad);
}

// sum(y * w) for a fixed w of y's shape: turns any op's output into the scalar a gradient
// check needs, with dL/dy = w. A random w exercises every output element with a different
// weight, so a backward that mixes up two output positions cannot pass. It is a test-only
// op written on `record` directly, so an op's test depends on nothing but the op itself;
// its own gradient is checked in tests/autograd/test_gradcheck.cpp.
inline Tensor weighted_sum(const Tensor& y, const Tensor& w) {
    if (y.shape() != w.shape())
        throw std::invalid_argument("weighted_sum: shapes " + shape_str(y.shape()) + " and " + shape_str(w.shape()));
    double s = 0;
    for (int64_t i = 0; i < y.numel(); ++i) s += double(y.data()[i]) * w.data()[i];
    Tensor out = Tensor::scalar(static_cast<real>(s));
    record(out, "weighted_sum", {y}, [y, w](Tensor& o) mutable {
        const real g = o.grad_data()[0];
        real* gy = y.grad_data();
        for (int64_t i = 0; i < y.numel(); ++i) gy[i] += g * w.data()[i];
    });
    return out;
}

inline void require_close(const Tensor& actual, const Tensor& expected, double tol = 1e-6,
                          const std::string& what = "") {
    INFO(what << " actual " << actual.str() << "\nexpected " << expected.str());
    REQUIRE(actual.shape() == expected.shape());
    for (int64_t i = 0; i < actual.numel(); ++i) {
        INFO("element " << i);
        REQUIRE(std::abs(double(actual.data()[i]) - double(expected.data()[i])) <=
                tol * (1 + std::abs(double(expected.data()[i]))));
    }
}

#ifdef PATCHGRAD_DOUBLE
// Gradient check of a tensor-valued op: checks the scalar weighted_sum(op(inputs), W) for a
// random W, with the default tight tolerances (relative error <= 1e-6, or the PyTorch rule
// atol 1e-8, rtol 1e-6). Fails the test with the per-input report.
inline void check_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& op,
                            const std::vector<Tensor>& inputs, uint64_t seed = 1,
                            GradcheckOptions options = {}) {
    Tensor probe;
    {
        NoGradGuard no_grad;
        probe = op(inputs);
    }
    Rng rng(seed);
    Tensor w = Tensor::uniform(probe.shape(), -1, 1, rng);
    auto result = gradcheck([&](const std::vector<Tensor>& xs) { return weighted_sum(op(xs), w); }, inputs, options);
    INFO(result.summary());
    REQUIRE(result.passed());
}
#endif

// A fresh directory under the system's temporary directory, removed with its contents.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::random_device rd;
        path = std::filesystem::temp_directory_path() /
               ("patchgrad_test_" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(const std::string& name) const { return (path / name).string(); }
};

// Runs `f` and requires it to throw std::invalid_argument whose message contains every one
// of `fragments` (the op name, the shapes...).
template <class F>
void require_error(F&& f, const std::vector<std::string>& fragments) {
    try {
        f();
    } catch (const std::exception& e) {
        const std::string msg = e.what();
        for (const auto& frag : fragments) {
            INFO("message: " << msg << "\nmissing: " << frag);
            CHECK(msg.find(frag) != std::string::npos);
        }
        return;
    }
    FAIL("expected an exception mentioning " << (fragments.empty() ? std::string() : fragments[0]));
}

}  // namespace patchgrad::test
