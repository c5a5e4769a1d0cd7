// optimizer.h — the update rules that turn gradients into new weights: SGD, Adam, AdamW,
// plus gradient clipping by global norm and timm's no-weight-decay grouping.
//
// Each optimiser is torch.optim's of PyTorch 1.13, step for step: the same defaults, the
// same order of operations, the same bias correction, so a trajectory can be compared with
// PyTorch's to the last few bits in float64 (tests/autograd/optim/test_optimizer.cpp reads
// golden trajectories written by autograd/scripts/make_optimizer_golden.py).
//
// Usage, like PyTorch:
//
//   AdamW optimizer(split_weight_decay(model.named_parameters()), 1e-3, {0.9, 0.999}, 1e-8, 0.05);
//   for (...) {
//       Tensor loss = cross_entropy(model.forward(images), labels);
//       loss.backward();
//       clip_grad_norm(model.parameters(), 1.0);
//       optimizer.set_lr(schedule.lr_at(step));
//       optimizer.step();
//       optimizer.zero_grad();
//   }
//
// Parameters are grouped (torch's param_groups): every group may have its own weight decay,
// which is how biases and LayerNorm weights are excluded from it. A parameter whose .grad
// is absent at step() is skipped entirely (no update, no weight decay, its step count does
// not advance), exactly as PyTorch skips p.grad is None. zero_grad() drops the gradients
// (PyTorch's set_to_none=True), so a parameter that a step did not reach stays untouched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

// A list of parameters sharing hyper-parameters. weight_decay unset: the optimiser's own.
struct ParamGroup {
    std::vector<Tensor> params;
    std::optional<double> weight_decay;
};

// The per-parameter state PyTorch keeps in optimizer.state[p]. Tensors stay undefined until
// the rule needs them (momentum_buffer only with momentum, exp_avg/exp_avg_sq for Adam).
struct ParamState {
    int64_t step = 0;        // how many updates this parameter has had
    Tensor momentum_buffer;  // SGD
    Tensor exp_avg;          // Adam/AdamW: m, the running mean of the gradient
    Tensor exp_avg_sq;       // Adam/AdamW: v, the running mean of its square
};

class Optimizer {
public:
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    virtual std::string name() const = 0;  // "SGD", "Adam", "AdamW": the prefix of every error

    // One update of every parameter that has a gradient.
    void step();
    // Drops every parameter's gradient (PyTorch's zero_grad(set_to_none=True)).
    void zero_grad();

    // The learning rate step() uses. Schedules change it between steps; 0 is allowed here
    // (a cosine schedule ends there) though not at construction.
    double lr() const { return lr_; }
    void set_lr(double lr);

    // The groups with every weight_decay filled in.
    const std::vector<ParamGroup>& param_groups() const { return groups_; }

    // The state for checkpoints, as named tensors in PyTorch's optimizer.state_dict()
    // numbering: parameters are counted 0, 1, ... through the groups in order, and
    // parameter i contributes "state.<i>.step" (a one-element tensor) and its defined
    // buffers, "state.<i>.exp_avg" etc. Parameters never updated have no entries.
    std::vector<std::pair<std::string, Tensor>> state_tensors() const;
    // Restores what state_tensors() returned (copies the values). Throws naming the tensor
    // for an unknown name, a parameter index out of range, a shape that does not match, or a
    // parameter whose buffers are not the ones this optimiser keeps (Adam state into SGD).
    void load_state_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors);
    // State of the i-th parameter in the numbering above.
    const ParamState& state(int64_t i) const;

protected:
    // Checks the groups (not empty, leaves, no parameter twice, weight decay >= 0) and lr > 0.
    Optimizer(const std::string& name, std::vector<ParamGroup> groups, double lr, double default_weight_decay);
    // Updates one parameter that has a gradient; state.step has already been incremented. step()
    // runs it for several parameters at once on threads: it may touch only param, its gradient
    // and state, and must record no ops (a thread of the pool is not under step's NoGradGuard).
    virtual void update(Tensor& param, ParamState& state, double weight_decay) = 0;
    // The buffers every updated parameter has ("exp_avg", ...): what a loaded state must hold.
    virtual std::vector<std::string> state_fields() const = 0;
    // Throws "<name>: invalid <what> <value> (must be <rule>)".
    void check(bool ok, const char* what, double value, const char* rule) const;

private:
    std::string name_;
    std::vector<ParamGroup> groups_;
    std::vector<ParamState> states_;  // one per parameter, in the numbering above
    double lr_;
    bool shared_storage_ = false;  // two parameters view one storage: step updates them in turn
};

// torch.optim.SGD: with weight decay wd, momentum mu, dampening tau, per step
//   g = grad + wd * p
//   b = g on the first step, then b = mu * b + (1 - tau) * g       (only if mu != 0)
//   g = g + mu * b (Nesterov)  or  g = b                            (only if mu != 0)
//   p = p - lr * g
class SGD : public Optimizer {
public:
    SGD(std::vector<ParamGroup> groups, double lr, double momentum = 0, double dampening = 0, double weight_decay = 0,
        bool nesterov = false);
    SGD(std::vector<Tensor> params, double lr, double momentum = 0, double dampening = 0, double weight_decay = 0,
        bool nesterov = false);
    std::string name() const override { return "SGD"; }

    const double momentum, dampening;
    const bool nesterov;

private:
    void update(Tensor& param, ParamState& state, double weight_decay) override;
    std::vector<std::string> state_fields() const override;
};

// torch.optim.Adam (Kingma & Ba), weight decay coupled: added to the gradient, so it is
// rescaled by the adaptive denominator like the gradient itself. At step t:
//   g = grad + wd * p
//   m = b1 * m + (1 - b1) * g          v = b2 * v + (1 - b2) * g^2
//   p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
class Adam : public Optimizer {
public:
    Adam(std::vector<ParamGroup> groups, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
         double eps = 1e-8, double weight_decay = 0);
    Adam(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
         double eps = 1e-8, double weight_decay = 0);
    std::string name() const override { return "Adam"; }

    const double beta1, beta2, eps;

protected:
    Adam(const std::string& name, std::vector<ParamGroup> groups, double lr, std::pair<double, double> betas,
         double eps, double weight_decay, bool decoupled);

private:
    void update(Tensor& param, ParamState& state, double weight_decay) override;
    std::vector<std::string> state_fields() const override { return {"exp_avg", "exp_avg_sq"}; }
    bool decoupled_;
};

// torch.optim.AdamW (Loshchilov & Hutter): the same moments, but weight decay decoupled
// from the gradient, p = p * (1 - lr * wd) before the Adam step, so every weight decays at
// the same rate whatever its gradient history. PyTorch's defaults, weight_decay 1e-2.
class AdamW : public Adam {
public:
    AdamW(std::vector<ParamGroup> groups, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
          double eps = 1e-8, double weight_decay = 1e-2);
    AdamW(std::vector<Tensor> params, double lr = 1e-3, std::pair<double, double> betas = {0.9, 0.999},
          double eps = 1e-8, double weight_decay = 1e-2);
    std::string name() const override { return "AdamW"; }
};

// torch.nn.utils.clip_grad_norm_: the L2 norm of all gradients together, as if concatenated
// into one vector; if it exceeds max_norm, every gradient is scaled by
// max_norm / (norm + 1e-6). Returns the norm before clipping. Parameters without a gradient
// are ignored (no gradients at all: returns 0). A non-finite norm is returned as is and the
// gradients are left alone (PyTorch would multiply them by NaN), so the caller can skip the
// step. The norm is accumulated in double whatever `real` is.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

// timm's grouping (param_groups_weight_decay with VisionTransformer.no_weight_decay()):
// returns {decay, no_decay}. The second group, with weight_decay 0, gets every parameter
// with fewer than 2 dimensions (biases, LayerNorm weights), any name ending in ".bias", and
// cls_token and pos_embed; the first gets the rest (the matrices), with weight_decay left
// unset so the optimiser's applies. Parameters that do not require grad are left out, like
// timm. Weight decay is meant to keep the weight matrices small; pulling a LayerNorm gain or
// a bias towards 0 only distorts a scale or offset the layer should be free to learn, so
// timm exempts them, and the two embeddings with them.
std::vector<ParamGroup> split_weight_decay(const std::vector<std::pair<std::string, Tensor>>& named_parameters);

}  // namespace patchgrad
