#include "patchgrad/autograd/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "patchgrad/autograd/rng.h"

namespace patchgrad {

bool GradcheckResult::passed() const {
    return std::all_of(inputs.begin(), inputs.end(), [](const InputReport& r) { return r.passed(); });
}

std::string GradcheckResult::summary() const {
    std::ostringstream os;
    os.precision(3);
    for (size_t i = 0; i < inputs.size(); ++i) {
        const InputReport& r = inputs[i];
        os << "input " << i << ": " << (r.passed() ? "ok  " : "FAIL") << " checked " << r.checked << ", max abs error "
           << r.max_abs_error << ", max rel error " << r.max_rel_error;
        if (r.worst_index >= 0)
            os << " at element " << r.worst_index << " (analytic " << r.worst_analytic << ", numeric "
               << r.worst_numeric << ")";
        if (r.failures) os << ", " << r.failures << " failing";
        os << "\n";
    }
    return os.str();
}

namespace {
void require_one_element(const Tensor& y) {
    if (!y.defined()) fail("gradcheck: the function must return a one-element tensor, got shape undefined");
    check(y.numel() == 1, "gradcheck: the function must return a one-element tensor, got shape ", y.shape());
}

double evaluate(const ScalarFunction& f, const std::vector<Tensor>& inputs) {
    NoGradGuard no_grad;
    Tensor y = f(inputs);
    require_one_element(y);
    return y.item();
}
}  // namespace

GradcheckResult gradcheck(const ScalarFunction& f, std::vector<Tensor> inputs, const GradcheckOptions& options) {
    // Analytic pass.
    for (Tensor& x : inputs) x.zero_grad();
    Tensor y = f(inputs);
    require_one_element(y);
    check(y.requires_grad(), "gradcheck: the function's result does not depend on any input that requires grad");
    y.backward();

    GradcheckResult result;
    Rng rng(options.seed);
    for (Tensor& x : inputs) {
        InputReport report;
        if (!x.requires_grad()) {
            result.inputs.push_back(report);
            continue;
        }
        const int64_t n = x.numel();
        std::vector<real> analytic(n, real(0));
        if (x.has_grad()) std::copy(x.grad_data(), x.grad_data() + n, analytic.begin());

        std::vector<int64_t> indices(n);
        std::iota(indices.begin(), indices.end(), 0);
        if (options.max_elements_per_input > 0 && options.max_elements_per_input < n) {
            // Partial Fisher–Yates: a uniform sample without repeats.
            for (int64_t i = 0; i < options.max_elements_per_input; ++i)
                std::swap(indices[i], indices[i + static_cast<int64_t>(rng.below(n - i))]);
            indices.resize(options.max_elements_per_input);
        }

        // [exercise:numerical-gradient]
        real* v = x.data();
        for (int64_t i : indices) {
            const real saved = v[i];
            v[i] = saved + options.step;
            const double plus = evaluate(f, inputs);
            v[i] = saved - options.step;
            const double minus = evaluate(f, inputs);
            v[i] = saved;
            const double numeric = (plus - minus) / (2 * options.step);
            const double a = analytic[i];
            const double abs_err = std::abs(a - numeric);
            const double rel_err = abs_err / std::max({std::abs(a), std::abs(numeric), 1e-30});
            const bool ok =
                rel_err <= options.max_rel_error || abs_err <= options.atol + options.rtol * std::abs(numeric);
            ++report.checked;
            report.failures += ok ? 0 : 1;
            report.max_abs_error = std::max(report.max_abs_error, abs_err);
            if (report.worst_index < 0 || rel_err > report.max_rel_error) {
                report.max_rel_error = rel_err;
                report.worst_index = i;
                report.worst_analytic = a;
                report.worst_numeric = numeric;
            }
        }
        // [/exercise:numerical-gradient]
        x.zero_grad();
        result.inputs.push_back(report);
    }
    return result;
}

}  // namespace patchgrad
