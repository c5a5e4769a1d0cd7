#include "patchgrad/layers/module.h"

#include <stdexcept>

#include "patchgrad/autograd/rng.h"

namespace patchgrad {

namespace {
void check_name(const std::string& name, const std::string& owner) {
    check(!name.empty() && name.find('.') == std::string::npos, owner, ": '", name,
          "' is not a valid name (non-empty, no dots)");
}
}  // namespace

Tensor Module::register_parameter(const std::string& name, Tensor value) {
    check_name(name, type_name());
    for (const auto& [n, p] : params_)
        if (n == name) fail(type_name(), ": parameter '", name, "' registered twice");
    value.requires_grad_(true);
    params_.emplace_back(name, value);
    return value;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
    check_name(name, type_name());
    if (!module) fail(type_name(), ": submodule '", name, "' is null");
    for (const auto& [n, m] : children_)
        if (n == name) fail(type_name(), ": submodule '", name, "' registered twice");
    module->train(training_);
    children_.emplace_back(name, std::move(module));
}

// This module's own parameters first, then each child's, depth first, in registration order;
// a child's names get its own name and a dot in front ("blocks" + "." + "0.fc1.weight"). The
// order and the names are the checkpoint format (state_dict.cpp) and timm's, so they are fixed.
std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
    std::vector<std::pair<std::string, Tensor>> out;
    // [exercise:module-parameters]
    out = params_;
    for (const auto& [name, child] : children_)
        for (auto& [sub, p] : child->named_parameters()) out.emplace_back(name + "." + sub, p);
    // [/exercise:module-parameters]
    return out;
}

std::vector<Tensor> Module::parameters() const {
    std::vector<Tensor> out;
    for (auto& [name, p] : named_parameters()) out.push_back(p);
    return out;
}

int64_t Module::num_parameters() const {
    int64_t n = 0;
    for (const auto& [name, p] : named_parameters()) n += p.numel();
    return n;
}

Tensor Module::parameter(const std::string& dotted_name) const {
    for (const auto& [name, p] : named_parameters())
        if (name == dotted_name) return p;
    fail(type_name(), ": no parameter named '", dotted_name, "'");
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
    std::vector<std::pair<std::string, const Module*>> out;
    for (const auto& [name, child] : children_) {
        out.emplace_back(name, child.get());
        for (auto& [sub, m] : child->named_modules()) out.emplace_back(name + "." + sub, m);
    }
    return out;
}

void Module::train(bool on) {
    training_ = on;
    for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
    for (auto& [name, p] : named_parameters()) p.zero_grad();
}

void scramble_parameters(Module& module, Rng& rng) {
    for (auto& [name, p] : module.named_parameters()) {
        const bool ln_weight = name.find("norm") != std::string::npos && name.size() >= 6 &&
                               name.compare(name.size() - 6, 6, "weight") == 0;
        real* v = p.data_for_write();
        for (int64_t i = 0; i < p.numel(); ++i) v[i] = static_cast<real>(rng.uniform(-0.5, 0.5)) + (ln_weight ? 1 : 0);
    }
}

}  // namespace patchgrad
