#include "patchgrad/autograd/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "patchgrad/autograd/cpu/threads/parallel.h"

namespace patchgrad {

namespace {

// Shortest text that reads back as the same double: "0.001", "-1", "nan".
std::string number_str(double v) {
    std::ostringstream os;
    os.precision(17);
    os << v;
    const std::string exact = os.str();
    for (int digits = 1; digits < 17; ++digits) {
        std::ostringstream shorter;
        shorter.precision(digits);
        shorter << v;
        if (std::stod(shorter.str()) == v || std::isnan(v)) return shorter.str();
    }
    return exact;
}

// The buffer of `s` called `field`, one of the names an optimizer's state_fields() returns.
template <class State>  // ParamState or const ParamState
auto buffer(State& s, const std::string& field) -> decltype(&s.exp_avg) {
    if (field == "momentum_buffer") return &s.momentum_buffer;
    if (field == "exp_avg") return &s.exp_avg;
    return &s.exp_avg_sq;
}

// The bins Optimizer::step shares out to the threads: 16 threads still take two each. A fixed
// number, so that the bins never depend on the thread count.
constexpr int64_t kParameterBins = 32;

}  // namespace

// ---- Optimizer ----------------------------------------------------------------------------

Optimizer::Optimizer(const std::string& name, std::vector<ParamGroup> groups, double lr, double default_weight_decay)
    : name_(name), groups_(std::move(groups)), lr_(lr) {
    check(lr > 0 && std::isfinite(lr), "learning rate", lr, "positive");
    check(default_weight_decay >= 0 && std::isfinite(default_weight_decay), "weight_decay", default_weight_decay,
          ">= 0");
    std::set<const TensorImpl*> seen;
    std::set<const Storage*> storages;
    for (size_t g = 0; g < groups_.size(); ++g) {
        ParamGroup& group = groups_[g];
        if (!group.weight_decay) group.weight_decay = default_weight_decay;
        const double wd = *group.weight_decay;
        if (!(wd >= 0 && std::isfinite(wd)))
            throw std::invalid_argument(name_ + ": invalid weight_decay " + number_str(wd) + " in parameter group " +
                                        std::to_string(g) + " (must be >= 0)");
        for (size_t i = 0; i < group.params.size(); ++i) {
            const Tensor& p = group.params[i];
            const std::string where = "parameter " + std::to_string(i) + " of group " + std::to_string(g);
            if (!p.defined()) throw std::invalid_argument(name_ + ": " + where + " is an undefined tensor");
            if (!p.is_leaf())
                throw std::invalid_argument(name_ + ": " + where + " " + shape_str(p.shape()) +
                                            " is not a leaf (it is the result of " + p.op() +
                                            "); only leaf tensors can be optimised");
            if (!seen.insert(p.impl_ptr().get()).second)
                throw std::invalid_argument(name_ + ": " + where + " " + shape_str(p.shape()) +
                                            " appears more than once in the parameter groups");
            shared_storage_ = shared_storage_ || !storages.insert(p.impl_ptr()->storage.get()).second;
        }
    }
    if (seen.empty()) throw std::invalid_argument(name_ + ": got an empty parameter list");
    states_.resize(seen.size());
}

void Optimizer::check(bool ok, const char* what, double value, const char* rule) const {
    if (!ok)
        throw std::invalid_argument(name_ + ": invalid " + what + " " + number_str(value) + " (must be " + rule + ")");
}

void Optimizer::set_lr(double lr) {
    check(lr >= 0 && std::isfinite(lr), "learning rate", lr, ">= 0");
    lr_ = lr;
}

void Optimizer::step() {
    NoGradGuard no_grad;
    // The parameters that step, with their state and weight decay. An update touches its own
    // parameter and state only, so threads take whole parameters: the same bits for any thread
    // count. (Parameters that view one storage would share its version counter: in turn.)
    struct Update {
        Tensor* param;
        ParamState* state;
        double weight_decay;
    };
    std::vector<Update> updates;
    size_t index = 0;
    for (ParamGroup& group : groups_)
        for (Tensor& p : group.params) {
            ParamState& state = states_[index++];
            if (!p.has_grad()) continue;
            ++state.step;
            updates.push_back({&p, &state, *group.weight_decay});
        }
    const auto run = [this](const Update& u) { update(*u.param, *u.state, u.weight_decay); };
    if (shared_storage_) {
        for (const Update& u : updates) run(u);
        return;
    }
    // The threads take bins of whole parameters, as even as whole parameters allow: in the order
    // the groups list them, a ViT's weight matrices come first and its biases and norms after, so
    // chunks of parameters would leave most of the work to the first thread.
    std::vector<int64_t> sizes;
    sizes.reserve(updates.size());
    for (const Update& u : updates) sizes.push_back(u.param->numel());
    const std::vector<std::vector<int64_t>> bins = balanced_bins(sizes, kParameterBins);
    parallel_for(static_cast<int64_t>(bins.size()), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b)
            for (const int64_t i : bins[b]) run(updates[i]);
    });
}

void Optimizer::zero_grad() {
    for (ParamGroup& group : groups_)
        for (Tensor& p : group.params) p.zero_grad();
}

const ParamState& Optimizer::state(int64_t i) const {
    patchgrad::check(i >= 0 && i < static_cast<int64_t>(states_.size()), name_, ": parameter index ", i,
                     " is out of range for ", states_.size(), " parameters");
    return states_[i];
}

std::vector<std::pair<std::string, Tensor>> Optimizer::state_tensors() const {
    std::vector<std::pair<std::string, Tensor>> out;
    for (size_t i = 0; i < states_.size(); ++i) {
        const ParamState& s = states_[i];
        if (s.step == 0) continue;
        const std::string prefix = "state." + std::to_string(i) + ".";
        out.emplace_back(prefix + "step", Tensor::scalar(static_cast<real>(s.step)));
        for (const std::string& field : state_fields()) out.emplace_back(prefix + field, buffer(s, field)->detach());
    }
    return out;
}

void Optimizer::load_state_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors) {
    std::vector<const Tensor*> params;
    for (const ParamGroup& group : groups_)
        for (const Tensor& p : group.params) params.push_back(&p);
    std::vector<ParamState> loaded(states_.size());
    for (const auto& [name, t] : tensors) {
        auto bad = [&, &name = name](const std::string& why) {
            return std::invalid_argument(name_ + ": cannot load state tensor '" + name + "': " + why);
        };
        // "state.<i>.<field>"
        const size_t dot = name.find('.', 6);
        if (name.rfind("state.", 0) != 0 || dot == std::string::npos || dot == 6 || dot > 18 ||
            name.find_first_not_of("0123456789", 6) != dot)
            throw bad("expected a name of the form state.<index>.<field>");
        const std::string field = name.substr(dot + 1);
        const int64_t i = std::stoll(name.substr(6, dot - 6));
        if (i >= static_cast<int64_t>(params.size()))
            throw bad("this optimizer has only " + std::to_string(params.size()) + " parameters");
        if (!t.defined()) throw bad("the tensor is undefined");
        ParamState& s = loaded[i];
        if (field == "step") {
            const double step = t.numel() == 1 ? double(t.data()[0]) : -1;
            if (!(step >= 1 && step == std::floor(step))) throw bad("step must be one positive integer");
            s.step = static_cast<int64_t>(step);
            continue;
        }
        const std::vector<std::string> fields = state_fields();
        if (std::find(fields.begin(), fields.end(), field) == fields.end()) {
            std::string known = "step";
            for (const std::string& f : fields) known += ", " + f;
            throw bad("this optimizer keeps no '" + field + "' (its fields: " + known + ")");
        }
        if (t.shape() != params[i]->shape())
            throw bad("shape " + shape_str(t.shape()) + " does not match parameter " + std::to_string(i) + " " +
                      shape_str(params[i]->shape()));
        *buffer(s, field) = t.detach();
    }
    for (size_t i = 0; i < loaded.size(); ++i) {
        ParamState& s = loaded[i];
        for (const std::string& field : state_fields()) {
            const bool has = buffer(s, field)->defined();
            patchgrad::check(has == (s.step > 0), name_, ": cannot load the state of parameter ", i, ": state.", i, ".",
                             has ? "step" : field, " is missing");
        }
    }
    states_ = std::move(loaded);
}

// ---- SGD ----------------------------------------------------------------------------------

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, double dampening, double weight_decay,
         bool nesterov)
    : Optimizer("SGD", std::move(groups), lr, weight_decay),
      momentum(momentum),
      dampening(dampening),
      nesterov(nesterov) {
    check(momentum >= 0 && std::isfinite(momentum), "momentum", momentum, ">= 0");
    check(dampening >= 0 && dampening <= 1, "dampening", dampening, "in [0, 1]");
    if (nesterov && (momentum <= 0 || dampening != 0))
        throw std::invalid_argument(
            "SGD: Nesterov momentum requires a positive momentum and zero dampening, got "
            "momentum " +
            number_str(momentum) + " and dampening " + number_str(dampening));
}

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double dampening, double weight_decay, bool nesterov)
    : SGD(std::vector<ParamGroup>{{std::move(params), std::nullopt}}, lr, momentum, dampening, weight_decay, nesterov) {
}

// With momentum 0 the rule keeps no buffer at all, like PyTorch.
std::vector<std::string> SGD::state_fields() const {
    return momentum != 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
}

void SGD::update(Tensor& param, ParamState& state, double weight_decay) {
    const int64_t n = param.numel();
    real* p = param.data_for_write();
    const real* g = param.grad_data();
    const real wd = static_cast<real>(weight_decay), lr = static_cast<real>(this->lr());
    const real mu = static_cast<real>(momentum), one_minus_tau = static_cast<real>(1 - dampening);
    const bool first = !state.momentum_buffer.defined();
    if (momentum != 0 && first) state.momentum_buffer = Tensor::zeros(param.shape());
    real* buf = momentum != 0 ? state.momentum_buffer.data() : nullptr;
    // [snippet:sgd-update]
    for (int64_t i = 0; i < n; ++i) {
        real d = g[i];
        if (weight_decay != 0) d += wd * p[i];
        if (buf) {
            buf[i] = first ? d : mu * buf[i] + one_minus_tau * d;
            d = nesterov ? d + mu * buf[i] : buf[i];
        }
        p[i] -= lr * d;
    }
    // [/snippet:sgd-update]
}

// ---- Adam / AdamW -------------------------------------------------------------------------

Adam::Adam(const std::string& name, std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas,
           double eps, double weight_decay, bool decoupled)
    : Optimizer(name, std::move(groups), lr, weight_decay),
      beta1(betas.first),
      beta2(betas.second),
      eps(eps),
      decoupled_(decoupled) {
    check(beta1 >= 0 && beta1 < 1, "beta1", beta1, "in [0, 1)");
    check(beta2 >= 0 && beta2 < 1, "beta2", beta2, "in [0, 1)");
    check(eps >= 0 && std::isfinite(eps), "eps", eps, ">= 0");
}

Adam::Adam(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas, double eps, double weight_decay)
    : Adam("Adam", std::move(groups), lr, betas, eps, weight_decay, false) {}

Adam::Adam(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps, double weight_decay)
    : Adam("Adam", {{std::move(params), std::nullopt}}, lr, betas, eps, weight_decay, false) {}

AdamW::AdamW(std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas, double eps,
             double weight_decay)
    : Adam("AdamW", std::move(groups), lr, betas, eps, weight_decay, true) {}

AdamW::AdamW(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps, double weight_decay)
    : Adam("AdamW", {{std::move(params), std::nullopt}}, lr, betas, eps, weight_decay, true) {}

// The bias corrections are computed in double once per parameter, as PyTorch does in Python;
// the elementwise work runs in `real`.
void Adam::update(Tensor& param, ParamState& state, double weight_decay) {
    if (!state.exp_avg.defined()) {
        state.exp_avg = Tensor::zeros(param.shape());
        state.exp_avg_sq = Tensor::zeros(param.shape());
    }
    const int64_t n = param.numel();
    real* p = param.data_for_write();
    const real* g = param.grad_data();
    real* m = state.exp_avg.data();
    real* v = state.exp_avg_sq.data();
    // [snippet:adam-bias-correction]
    const double t = static_cast<double>(state.step);
    const real step_size = static_cast<real>(lr() / (1 - std::pow(beta1, t)));
    const real bias_correction2_sqrt = static_cast<real>(std::sqrt(1 - std::pow(beta2, t)));
    const real b1 = static_cast<real>(beta1), b2 = static_cast<real>(beta2);
    const real one_minus_b1 = static_cast<real>(1 - beta1), one_minus_b2 = static_cast<real>(1 - beta2);
    const real e = static_cast<real>(eps), wd = static_cast<real>(weight_decay);
    const real decay = static_cast<real>(1 - lr() * weight_decay);
    // [/snippet:adam-bias-correction]
    // [exercise:adamw-step]
    for (int64_t i = 0; i < n; ++i) {
        real gi = g[i];
        if (decoupled_)
            p[i] *= decay;
        else if (weight_decay != 0)
            gi += wd * p[i];
        m[i] = b1 * m[i] + one_minus_b1 * gi;
        v[i] = b2 * v[i] + one_minus_b2 * gi * gi;
        p[i] -= step_size * (m[i] / (std::sqrt(v[i]) / bias_correction2_sqrt + e));
    }
    // [/exercise:adamw-step]
}

// ---- clipping and grouping ----------------------------------------------------------------

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
    if (!(max_norm > 0 && std::isfinite(max_norm)))
        throw std::invalid_argument("clip_grad_norm: max_norm must be positive, got " + number_str(max_norm));
    double sum_sq = 0;
    for (const Tensor& p : params) {
        if (!p.defined() || !p.has_grad()) continue;
        const real* g = p.grad_data();
        for (int64_t i = 0; i < p.numel(); ++i) sum_sq += double(g[i]) * double(g[i]);
    }
    const double total_norm = std::sqrt(sum_sq);
    if (!std::isfinite(total_norm)) return total_norm;
    const double clip_coef = max_norm / (total_norm + 1e-6);
    if (clip_coef < 1) {
        const real c = static_cast<real>(clip_coef);
        for (const Tensor& p : params) {
            if (!p.defined() || !p.has_grad()) continue;
            real* g = p.grad_data();
            for (int64_t i = 0; i < p.numel(); ++i) g[i] *= c;
        }
    }
    return total_norm;
}

std::vector<ParamGroup> split_weight_decay(const std::vector<std::pair<std::string, Tensor>>& named_parameters) {
    ParamGroup decay{{}, std::nullopt}, no_decay{{}, 0.0};
    auto ends_with = [](const std::string& s, const std::string& suffix) {
        return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    // [snippet:split-weight-decay]
    for (const auto& [name, p] : named_parameters) {
        if (!p.requires_grad()) continue;
        const bool exempt = p.dim() <= 1 || ends_with(name, ".bias") || name == "cls_token" || name == "pos_embed";
        (exempt ? no_decay : decay).params.push_back(p);
    }
    // [/snippet:split-weight-decay]
    return {decay, no_decay};
}

}  // namespace patchgrad
