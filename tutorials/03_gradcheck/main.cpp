// tutorial_03_gradcheck — the program of chapter 3, checking gradients.
//
// It measures the error of forward and central differences against the exact derivative of
// sin for step sizes from 1e-1 to 1e-12, in double and in float (truncation error falling
// as h or h^2, round-off error rising as 1/h), draws that as finite_differences.png, then
// runs patchgrad's gradcheck: on a library op, on a new op written with `record` (SiLU),
// on three deliberately wrong backwards of it (one of which only random output weights
// catch), and at kinks (ReLU at 0, a tie in max) next to the smooth cases (softmax's max
// shift, GELU at 0). Float64 build; the seeds are fixed.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
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

std::string sci(double v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1e", v);
    return buffer;
}

// ---- 1. finite differences by hand -------------------------------------------------------

// [snippet:differences]
// The two ways to estimate f'(x) from values of f, for any scalar type T (float or double):
//   forward:  (f(x + h) - f(x)) / h            error ~ h/2 |f''|  + eps |f| / h
//   central:  (f(x + h) - f(x - h)) / (2h)     error ~ h^2/6 |f'''| + eps |f| / h
template <class T, class F>
T forward_difference(F f, T x, T h) {
    return (f(x + h) - f(x)) / h;
}
template <class T, class F>
T central_difference(F f, T x, T h) {
    return (f(x + h) - f(x - h)) / (2 * h);
}
// [/snippet:differences]

struct ErrorTable {
    std::vector<double> log_h, forward64, central64, forward32, central32;  // log10 of h / of the errors
};

ErrorTable difference_table() {
    tutorial::heading("1. forward vs central differences of sin at x = 1 (relative error)");
    const double exact = std::cos(1.0);
    const auto sin64 = [](double v) { return std::sin(v); };
    const auto sin32 = [](float v) { return std::sin(v); };
    ErrorTable table;
    std::cout << "     h   forward f64  central f64  forward f32  central f32\n";
    for (int k = 1; k <= 12; ++k) {
        const double h = std::pow(10.0, -k);
        const auto error = [exact](double estimate) { return std::abs(estimate - exact) / exact; };
        const double f64 = error(forward_difference(sin64, 1.0, h));
        const double c64 = error(central_difference(sin64, 1.0, h));
        const double f32 = error(forward_difference(sin32, 1.0f, static_cast<float>(h)));
        const double c32 = error(central_difference(sin32, 1.0f, static_cast<float>(h)));
        std::cout << " 1e-" << (k < 10 ? "0" : "") << k << "      " << sci(f64) << "      " << sci(c64) << "      "
                  << sci(f32) << "      " << sci(c32) << "\n";
        // log10 of 0 (an exact hit) would be -inf: the chart skips such points.
        table.log_h.push_back(-k);
        table.forward64.push_back(std::log10(f64));
        table.central64.push_back(std::log10(c64));
        table.forward32.push_back(std::log10(f32));
        table.central32.push_back(std::log10(c32));
    }
    return table;
}

void draw_table(const ErrorTable& t, const std::string& dir) {
    const std::vector<Series> series = {
        {"forward, double", t.log_h, t.forward64, false},
        {"central, double", t.log_h, t.central64, false},
        {"forward, float", t.log_h, t.forward32, false},
        {"central, float", t.log_h, t.central32, false},
    };
    const std::string path = (std::filesystem::path(dir) / "finite_differences.png").string();
    save(line_chart("error of d/dx sin(x) at x = 1", "log10 h", "log10 relative error", series, 400, 260), path);
    std::cout << "wrote " << std::filesystem::path(path).filename().string() << "\n";
}

// ---- 3. gradcheck on a tensor op --------------------------------------------------------

// [snippet:check-op]
// Gradient check of a tensor-valued op, the way tests/test_util.h's check_gradients does it:
// reduce the output to a scalar with fixed random weights w, sum(op(x) * w), so dL/dy = w
// differs at every output element, then compare backward() with central differences.
GradcheckResult check_op(const std::function<Tensor(const std::vector<Tensor>&)>& op, const std::vector<Tensor>& inputs,
                         uint64_t seed = 1) {
    Tensor w;
    {
        NoGradGuard no_grad;
        Rng rng(seed);
        w = Tensor::uniform(op(inputs).shape(), -1, 1, rng);
    }
    return gradcheck([&](const std::vector<Tensor>& xs) { return sum(op(xs) * w); }, inputs);
}
// [/snippet:check-op]

void report(const std::string& what, const GradcheckResult& result) {
    const InputReport& r = result.inputs.at(0);
    std::cout << what << ": " << (result.passed() ? "ok  " : "FAIL") << " max rel error " << sci(r.max_rel_error);
    if (!result.passed())
        std::cout << " at element " << r.worst_index << " (analytic " << r.worst_analytic << ", numeric "
                  << r.worst_numeric << ")";
    std::cout << "\n";
}

void library_op() {
    tutorial::heading("3. gradcheck of a library op: tanh on [3, 4]");
    // [snippet:gradcheck-call]
    Rng rng(3);
    Tensor x = Tensor::uniform({3, 4}, -2, 2, rng, /*requires_grad=*/true);
    GradcheckResult result = check_op([](const std::vector<Tensor>& in) { return tanh(in[0]); }, {x});
    std::cout << result.summary();
    // [/snippet:gradcheck-call]
}

// ---- 4. your own op ----------------------------------------------------------------------

// [snippet:silu]
// SiLU (swish), y = x * sigmoid(x), elementwise: [...] -> [...]
//   with s = sigmoid(x):  dy/dx = s + x s (1 - s) = s (1 + x (1 - s))
Tensor silu(const Tensor& x) {
    Tensor out = Tensor::empty(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
        const real s = 1 / (1 + std::exp(-x.data()[i]));
        out.data()[i] = x.data()[i] * s;
    }
    record(out, "silu", {x}, [x](Tensor& o) mutable {
        const real* dy = o.grad_data();  // dL/dy, the gradient arriving from above
        real* dx = x.grad_data();        // accumulate: x may feed other ops too
        for (int64_t i = 0; i < x.numel(); ++i) {
            const real v = x.data()[i];
            const real s = 1 / (1 + std::exp(-v));
            dx[i] += dy[i] * s * (1 + v * (1 - s));
        }
    });
    return out;
}
// [/snippet:silu]

enum class Bug { ForgetsUpstream, SignTypo, OnePercentAtOneElement };

// SiLU again, with the forward above and one of three mistakes in the backward.
Tensor silu_with_bug(const Tensor& x, Bug bug) {
    Tensor out = Tensor::empty(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) out.data()[i] = x.data()[i] / (1 + std::exp(-x.data()[i]));
    record(out, "silu_with_bug", {x}, [x, bug](Tensor& o) mutable {
        const real* dy = o.grad_data();
        real* dx = x.grad_data();
        for (int64_t i = 0; i < x.numel(); ++i) {
            const real v = x.data()[i];
            const real s = 1 / (1 + std::exp(-v));
            // [snippet:silu-bugs]
            switch (bug) {
                case Bug::ForgetsUpstream:  // the local derivative alone: dy never enters
                    dx[i] += s * (1 + v * (1 - s));
                    break;
                case Bug::SignTypo:  // - instead of +
                    dx[i] += dy[i] * s * (1 - v * (1 - s));
                    break;
                case Bug::OnePercentAtOneElement:  // right everywhere but element 5, 1% off there
                    dx[i] += dy[i] * s * (1 + v * (1 - s)) * (i == 5 ? real(1.01) : real(1));
                    break;
            }
            // [/snippet:silu-bugs]
        }
    });
    return out;
}

void own_op() {
    tutorial::heading("4. checking your own op: SiLU on [2, 5]");
    Rng rng(4);
    const Tensor x = Tensor::uniform({2, 5}, -3, 3, rng, true);
    report("silu, random output weights  ", check_op([](const std::vector<Tensor>& in) { return silu(in[0]); }, {x}));
    std::cout << "the same check with deliberately wrong backwards:\n";
    const auto buggy = [](Bug bug) {
        return [bug](const std::vector<Tensor>& in) { return silu_with_bug(in[0], bug); };
    };
    // [snippet:plain-sum]
    // A plain sum(y) sends dL/dy = 1 to every element: a backward that forgets dy passes.
    GradcheckResult plain =
        gradcheck([](const std::vector<Tensor>& in) { return sum(silu_with_bug(in[0], Bug::ForgetsUpstream)); }, {x});
    // [/snippet:plain-sum]
    report("forgets dy, through a plain sum ", plain);
    report("forgets dy, random weights      ", check_op(buggy(Bug::ForgetsUpstream), {x}));
    report("sign typo, random weights       ", check_op(buggy(Bug::SignTypo), {x}));
    report("1% off at element 5             ", check_op(buggy(Bug::OnePercentAtOneElement), {x}));
}

// ---- 5. kinks ----------------------------------------------------------------------------

// [snippet:relu]
// ReLU, y = max(x, 0) elementwise; dy/dx = 1 for x > 0, else 0 (at 0 we pick 0, like PyTorch).
Tensor relu(const Tensor& x) {
    Tensor out = Tensor::empty(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) out.data()[i] = x.data()[i] > 0 ? x.data()[i] : 0;
    record(out, "relu", {x}, [x](Tensor& o) mutable {
        for (int64_t i = 0; i < x.numel(); ++i)
            if (x.data()[i] > 0) x.grad_data()[i] += o.grad_data()[i];
    });
    return out;
}
// [/snippet:relu]

void kinks() {
    tutorial::heading("5. kinks: where f is not differentiable, central differences straddle the corner");
    const auto relu_op = [](const std::vector<Tensor>& in) { return relu(in[0]); };
    report("relu at [-0.5, 0.3, 0.5]       ", check_op(relu_op, {Tensor::from_vector({3}, {-0.5, 0.3, 0.5}, true)}));
    report("relu at [-0.5, 3e-7, 0.5]      ", check_op(relu_op, {Tensor::from_vector({3}, {-0.5, 3e-7, 0.5}, true)}));
    // max over a row whose two largest entries are 1e-7 apart: within h = 1e-6 of a tie.
    const auto max_op = [](const std::vector<Tensor>& in) { return max(in[0], 0, true); };
    report("max of [0.3, 0.2, 0.3 + 1e-7]  ",
           check_op(max_op, {Tensor::from_vector({3}, {0.3, 0.2, 0.3 + 1e-7}, true)}));
    // softmax subtracts max(x) but is smooth: softmax(x - c) = softmax(x) for every c, so the
    // kink of max cancels out. An exact tie is harmless.
    const auto softmax_op = [](const std::vector<Tensor>& in) { return softmax(in[0], -1); };
    report("softmax of [0.3, 0.2, 0.3]     ", check_op(softmax_op, {Tensor::from_vector({3}, {0.3, 0.2, 0.3}, true)}));
    const auto gelu_op = [](const std::vector<Tensor>& in) { return gelu(in[0]); };
    report("gelu at [-1e-7, 0, 1e-7]       ", check_op(gelu_op, {Tensor::from_vector({3}, {-1e-7, 0, 1e-7}, true)}));
}

void build_info() {
    tutorial::heading("2. gradcheck needs float64");
    std::cout << "this program links the float64 libraries: real is " << sizeof(real) * 8 << "-bit\n";
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::string out = tutorial::out_dir(argc, argv, "tutorial_03_gradcheck");
        const ErrorTable table = difference_table();
        draw_table(table, out);
        build_info();
        library_op();
        own_op();
        kinks();
    } catch (const std::exception& e) {
        std::cerr << "tutorial_03_gradcheck: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
