#include "patchgrad/layers/state_dict.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace patchgrad {

NamedTensors state_dict(const Module& module) {
    NamedTensors out;
    for (const auto& [name, p] : module.named_parameters()) out.tensors.emplace_back(name, p.detach());
    return out;
}

namespace {
// "a, b, c" — at most `limit` names, then how many more.
std::string name_list(const std::vector<std::string>& names, size_t limit = 8) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < limit; ++i) s += (i ? ", " : "") + names[i];
    if (names.size() > limit) s += ", ... (" + std::to_string(names.size() - limit) + " more)";
    return s;
}
}  // namespace

void load_state_dict(Module& module, const NamedTensors& named, bool strict) {
    const auto params = module.named_parameters();
    std::set<std::string> model_names;
    for (const auto& [name, p] : params) model_names.insert(name);

    std::set<std::string> seen;
    std::vector<std::string> unexpected;
    for (const auto& [name, t] : named.tensors) {
        check(seen.insert(name).second, "load_state_dict: ", name, " appears twice");
        if (!model_names.count(name)) unexpected.push_back(name);
    }
    std::vector<std::string> missing;
    for (const auto& [name, p] : params)
        if (!seen.count(name)) missing.push_back(name);

    if (strict && !missing.empty())
        fail("load_state_dict: ", module.type_name(), " parameter", missing.size() > 1 ? "s " : " ", name_list(missing),
             " missing from the file");
    if (strict && !unexpected.empty())
        fail("load_state_dict: unexpected ", name_list(unexpected), " in the file: ", module.type_name(),
             " has no such parameter");

    std::vector<std::pair<Tensor, Tensor>> copies;  // (model parameter, value)
    for (const auto& [name, p] : params) {
        if (!seen.count(name)) continue;
        const Tensor value = named.get(name);
        check(value.shape() == p.shape(), "load_state_dict: ", name, " has shape ", value.shape(), " in the file but ",
              p.shape(), " in the model");
        copies.emplace_back(p, value);
    }
    for (auto& [p, value] : copies) std::copy(value.data(), value.data() + value.numel(), p.data_for_write());
}

void save_module(const std::string& path, const Module& module, const std::map<std::string, std::string>& metadata) {
    NamedTensors named = state_dict(module);
    named.metadata = metadata;
    save_safetensors(path, named);
}

std::map<std::string, std::string> load_module(const std::string& path, Module& module, bool strict) {
    NamedTensors named = load_safetensors(path);
    load_state_dict(module, named, strict);
    return named.metadata;
}

}  // namespace patchgrad
