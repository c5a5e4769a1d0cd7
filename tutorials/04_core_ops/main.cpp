// tutorial_04_core_ops — the program of chapter 4, the core ops and their derivatives.
//
// For each op of the ViT's forward pass (matmul, softmax, LayerNorm, GELU, cross-entropy) it
// evaluates the op on a small input, computes the backward formula of the chapter by hand
// with other ops and prints it next to what backward() leaves in .grad, shows the numerical
// trap the op's code avoids (softmax's overflow, LayerNorm's constant row, log of an
// underflowed softmax) and ends with the op's gradient check. It draws gelu.png: GELU exact
// and tanh-approximated, ReLU, and GELU's derivative. Float64 build; the seeds are fixed.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/gradcheck.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/vit/pictures/canvas.h"
#include "patchgrad/vit/pictures/chart.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;

namespace {

std::string fmt(const char* format, double v) {
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, format, v);
    return buffer;
}

// The gradient check every op's test runs (tests/test_util.h's check_gradients): the scalar
// sum(op(x) * w) for fixed random weights w, so every output element gets its own dL/dy.
void check(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& op,
           const std::vector<Tensor>& inputs, uint64_t seed) {
    Tensor w;
    {
        NoGradGuard no_grad;
        Rng rng(seed);
        w = Tensor::uniform(op(inputs).shape(), -1, 1, rng);
    }
    const GradcheckResult result = gradcheck([&](const std::vector<Tensor>& xs) { return sum(op(xs) * w); }, inputs);
    std::cout << "gradcheck " << what << ": " << (result.passed() ? "ok" : "FAIL");
    for (size_t i = 0; i < result.inputs.size(); ++i)
        std::cout << (i ? ", " : " (max rel error ") << fmt("%.1e", result.inputs[i].max_rel_error);
    std::cout << ")\n";
}

// ---- matmul ----------------------------------------------------------------------------

void matmul_section() {
    tutorial::heading("1. matmul");
    const Tensor a = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6}, true);
    const Tensor b = Tensor::from_vector({3, 2}, {7, 8, 9, 10, 11, 12}, true);
    // C = A @ B, then a loss whose gradient dL/dC is a matrix G we choose.
    Tensor c = matmul(a, b);                                        // [2, 3] @ [3, 2] -> [2, 2]
    const Tensor g = Tensor::from_vector({2, 2}, {1, -1, 0.5, 2});  // dL/dC
    sum(c * g).backward();
    std::cout << "C = A @ B       " << c.detach() << "\n";
    std::cout << "A.grad          " << a.grad() << "\n";
    std::cout << "B.grad          " << b.grad() << "\n";

    // Batched with broadcasting: the batch dimensions [2, 1] and [5] broadcast to [2, 5].
    Rng rng(1);
    const Tensor x = Tensor::uniform({2, 1, 3, 4}, -1, 1, rng, true);
    const Tensor w = Tensor::uniform({5, 4, 6}, -1, 1, rng, true);
    const Tensor y = matmul(x, w);
    sum(y).backward();
    std::cout << "batched: " << shape_str(x.shape()) << " @ " << shape_str(w.shape()) << " -> " << shape_str(y.shape())
              << "; x.grad " << shape_str(x.grad().shape()) << " (summed over the 5), w.grad "
              << shape_str(w.grad().shape()) << " (summed over the 2)\n";
    const auto mm = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
    check("matmul [3, 4] @ [4, 5]", mm,
          {Tensor::uniform({3, 4}, -1, 1, rng, true), Tensor::uniform({4, 5}, -1, 1, rng, true)}, 10);
    check("matmul [2, 1, 3, 4] @ [5, 4, 6]", mm,
          {Tensor::uniform({2, 1, 3, 4}, -1, 1, rng, true), Tensor::uniform({5, 4, 6}, -1, 1, rng, true)}, 11);
}

// ---- softmax ---------------------------------------------------------------------------

// [snippet:naive-softmax]
// The textbook formula, p_i = exp(x_i) / sum_j exp(x_j), for any scalar type T.
template <class T>
std::vector<T> naive_softmax(const std::vector<T>& x) {
    T total = 0;
    for (T v : x) total += std::exp(v);
    std::vector<T> p;
    for (T v : x) p.push_back(std::exp(v) / total);
    return p;
}
// [/snippet:naive-softmax]

template <class T>
std::string list(const std::vector<T>& v) {
    std::string s = "[";
    // NaN prints as "nan" whatever its sign bit (glibc's printf would say "-nan").
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + (std::isnan(v[i]) ? "nan" : fmt("%.4g", double(v[i])));
    return s + "]";
}

void softmax_section() {
    tutorial::heading("2. softmax");
    std::cout << "naive, double, x = [1, 2, 3]          " << list(naive_softmax<double>({1, 2, 3})) << "\n";
    std::cout << "naive, double, x = [1000, 1001, 1002] " << list(naive_softmax<double>({1000, 1001, 1002}))
              << "   exp(1000) = " << std::exp(1000.0) << "\n";
    std::cout << "naive, float,  x = [90, 91, 92]       " << list(naive_softmax<float>({90, 91, 92}))
              << "   expf(89) = " << std::exp(89.0f) << "\n";
    std::cout << "patchgrad, x = [1000, 1001, 1002]     " << softmax(Tensor::from_vector({3}, {1000, 1001, 1002}), 0)
              << "\n";

    // The gradient a derived backward must reproduce, for a chosen upstream gradient dy.
    const Tensor x = Tensor::from_vector({4}, {0.5, -1, 2, 0}, true);
    const Tensor dy = Tensor::from_vector({4}, {1, 0, -2, 0.5});
    sum(softmax(x, 0) * dy).backward();
    std::cout << "x.grad                  " << x.grad() << "\n";

    Rng rng(2);
    const auto sm = [](int64_t axis) { return [axis](const std::vector<Tensor>& in) { return softmax(in[0], axis); }; };
    check("softmax [4, 7] axis -1", sm(-1), {Tensor::uniform({4, 7}, -3, 3, rng, true)}, 20);
    check("softmax [4, 7] axis 0", sm(0), {Tensor::uniform({4, 7}, -3, 3, rng, true)}, 21);
    check("softmax [4, 7] around 1000", sm(-1), {Tensor::uniform({4, 7}, 997, 1003, rng, true)}, 22);
}

// ---- LayerNorm -------------------------------------------------------------------------

void layernorm_section() {
    tutorial::heading("3. LayerNorm");
    const Tensor x = Tensor::from_vector({2, 4}, {1, 2, 3, 4, 0.5, -1, 2, 0}, true);
    const Tensor y = layer_norm(x, Tensor(), Tensor(), 1e-5);
    std::cout << "x               " << x << "\n";
    std::cout << "layer_norm(x)   " << y.detach() << "\n";
    std::cout << "row means " << mean(y.detach(), -1) << ", row variances " << mean(y.detach() * y.detach(), -1)
              << "\n";

    // A constant row has variance 0: eps is what keeps (x - mean) / sqrt(var + eps) finite.
    const Tensor flat = Tensor::full({1, 4}, 3);
    const Tensor centred = flat - mean(flat, -1, true);
    std::cout << "constant row, (x - mean) / sqrt(var):       " << centred / sqrt(mean(centred * centred, -1, true))
              << "\n";
    std::cout << "constant row, layer_norm (eps = 1e-5):      " << layer_norm(flat, Tensor(), Tensor(), 1e-5) << "\n";

    const Tensor dy = Tensor::from_vector({2, 4}, {1, 0, -2, 0.5, 0.3, 0.3, -1, 2});
    sum(y * dy).backward();
    std::cout << "x.grad          " << x.grad() << "\n";

    Rng rng(3);
    const auto ln = [](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2], 1e-5); };
    check("layer_norm x [3, 8], weight [8], bias [8]", ln,
          {Tensor::uniform({3, 8}, -2, 2, rng, true), Tensor::uniform({8}, -2, 2, rng, true),
           Tensor::uniform({8}, -2, 2, rng, true)},
          30);
}

// ---- GELU ------------------------------------------------------------------------------

void gelu_section(const std::string& dir) {
    tutorial::heading("4. GELU");
    const Tensor x = Tensor::from_vector({7}, {-3, -1, -0.5, 0, 0.5, 1, 3}, true);
    const Tensor exact = gelu(x, GeluApproximation::None);
    const Tensor approx = gelu(x.detach(), GeluApproximation::Tanh);
    sum(exact).backward();
    std::cout << "   x      exact       tanh   exact - tanh   d/dx exact\n";
    for (int64_t i = 0; i < 7; ++i)
        std::cout << fmt("%4.1f", x.data()[i]) << fmt("%11.6f", exact.data()[i]) << fmt("%11.6f", approx.data()[i])
                  << fmt("%15.2e", exact.data()[i] - approx.data()[i]) << fmt("%13.6f", x.grad().data()[i]) << "\n";

    // On a fine grid: the largest gap between the two forms, and the extremes of the derivative.
    Tensor grid = Tensor::arange(-6, 6.0005, 0.001);
    grid.requires_grad_();
    const Tensor g_exact = gelu(grid, GeluApproximation::None);
    const Tensor g_tanh = gelu(grid.detach(), GeluApproximation::Tanh);
    sum(g_exact).backward();
    double gap = 0, at = 0, dmax = -1, dmax_at = 0, dmin = 1, dmin_at = 0;
    const Tensor slope = grid.grad();
    for (int64_t i = 0; i < grid.numel(); ++i) {
        const double d = std::abs(g_exact.data()[i] - g_tanh.data()[i]);
        if (d > gap) gap = d, at = grid.data()[i];
        if (slope.data()[i] > dmax) dmax = slope.data()[i], dmax_at = grid.data()[i];
        if (slope.data()[i] < dmin) dmin = slope.data()[i], dmin_at = grid.data()[i];
    }
    std::cout << "on [-6, 6]: max |exact - tanh| = " << fmt("%.2e", gap) << " at x = " << fmt("%.3f", at) << "\n";
    std::cout << "derivative of the exact form: max " << fmt("%.4f", dmax) << " at x = " << fmt("%.3f", dmax_at)
              << ", min " << fmt("%.4f", dmin) << " at x = " << fmt("%.3f", dmin_at) << "\n";

    // The picture, on [-4, 3] with a coarser grid.
    std::vector<double> xs, y_exact, y_tanh, y_relu, dy_exact;
    for (int64_t i = 0; i < grid.numel(); i += 20)
        if (grid.data()[i] >= -4 && grid.data()[i] <= 3) {
            xs.push_back(grid.data()[i]);
            y_exact.push_back(g_exact.data()[i]);
            y_tanh.push_back(g_tanh.data()[i]);
            y_relu.push_back(std::max(0.0, double(grid.data()[i])));
            dy_exact.push_back(slope.data()[i]);
        }
    const std::vector<Series> series = {
        {"GELU (erf)", xs, y_exact, false},
        {"GELU (tanh)", xs, y_tanh, false},
        {"ReLU", xs, y_relu, false},
        {"d/dx GELU (erf)", xs, dy_exact, false},
    };
    const std::string path = (std::filesystem::path(dir) / "gelu.png").string();
    save(line_chart("GELU and its derivative", "x", "y", series, 400, 260), path);
    std::cout << "wrote gelu.png\n";

    Rng rng(4);
    check(
        "gelu exact [5, 6]", [](const std::vector<Tensor>& in) { return gelu(in[0]); },
        {Tensor::uniform({5, 6}, -4, 4, rng, true)}, 40);
    check(
        "gelu tanh [5, 6]", [](const std::vector<Tensor>& in) { return gelu(in[0], GeluApproximation::Tanh); },
        {Tensor::uniform({5, 6}, -4, 4, rng, true)}, 41);
}

// ---- cross-entropy ---------------------------------------------------------------------

void cross_entropy_section() {
    tutorial::heading("5. cross-entropy");
    Tensor logits = Tensor::from_vector({2, 3}, {1, 2, 3, 0.5, -1, 2}, true);
    const std::vector<int64_t> labels = {2, 1};
    const Tensor one_hot = Tensor::from_vector({2, 3}, {0, 0, 1, 0, 1, 0});
    // [snippet:cross-entropy-unfused]
    // The same loss from two ops: the mean over the batch of -log softmax(logits)[label].
    const Tensor unfused = -sum(log_softmax(logits.detach(), 1) * one_hot) / 2;
    // [/snippet:cross-entropy-unfused]
    Tensor loss = cross_entropy(logits, labels);
    loss.backward();
    std::cout << "cross_entropy(logits, labels)           " << fmt("%.10f", loss.item()) << "\n";
    std::cout << "-mean(log_softmax(logits)[label])       " << fmt("%.10f", unfused.item()) << "\n";
    std::cout << "logits.grad                             " << logits.grad() << "\n";

    // Label smoothing e = 0.1: the target is 0.9 one_hot + 0.1 / 3 everywhere.
    logits.zero_grad();
    Tensor smoothed = cross_entropy(logits, labels, 0.1);
    smoothed.backward();
    const Tensor target = 0.9 * one_hot + 0.1 / 3;
    std::cout << "label smoothing 0.1: loss " << fmt("%.10f", smoothed.item()) << ", target " << target << "\n";
    std::cout << "logits.grad                             " << logits.grad() << "\n";

    // Far-apart logits: softmax underflows to 0 and its log is -inf; the fused loss is exact.
    const Tensor far = Tensor::from_vector({1, 3}, {1000, 0, -1000});
    std::cout << "logits [1000, 0, -1000], label 2: -log(softmax)[2] = " << -std::log(softmax(far, 1).data()[2])
              << ", cross_entropy = " << cross_entropy(far, {2}).item() << "\n";

    Rng rng(5);
    check(
        "cross_entropy [6, 10]",
        [](const std::vector<Tensor>& in) {
            return cross_entropy(in[0], {0, 3, 9, 3, 5, 1});
        },
        {Tensor::uniform({6, 10}, -3, 3, rng, true)}, 50);
    check(
        "cross_entropy [6, 10], smoothing 0.1",
        [](const std::vector<Tensor>& in) {
            return cross_entropy(in[0], {0, 3, 9, 3, 5, 1}, 0.1);
        },
        {Tensor::uniform({6, 10}, -3, 3, rng, true)}, 51);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::string out = tutorial::out_dir(argc, argv, "tutorial_04_core_ops");
        matmul_section();
        softmax_section();
        layernorm_section();
        gelu_section(out);
        cross_entropy_section();
    } catch (const std::exception& e) {
        std::cerr << "tutorial_04_core_ops: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
