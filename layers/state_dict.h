// state_dict.h — a module's parameters as named tensors, and back; saving modules to files.
//
// Like PyTorch's model.state_dict() / model.load_state_dict(): the names are the dotted
// parameter names ("blocks.0.attn.qkv.weight"), the same as timm's, so a file written here
// loads into timm and the other way round (see vit/ for the one reshape, the patch
// projection). Files are safetensors (autograd/io/safetensors.h).
#pragma once

#include <map>
#include <string>

#include "patchgrad/autograd/io/safetensors.h"
#include "patchgrad/layers/module.h"

namespace patchgrad {

// A copy of every parameter, under its dotted name, in registration order.
NamedTensors state_dict(const Module& module);

// Copies the values into the module's existing parameter tensors (their identity, and so
// any optimizer holding them, is kept; gradients are left alone). Everything is checked
// before anything is copied, so a failed load leaves the module unchanged. Errors name the
// tensor: a shape mismatch always; a parameter missing from `named` or a name in `named`
// that the module does not have only when `strict`.
void load_state_dict(Module& module, const NamedTensors& named, bool strict = true);

// state_dict + save_safetensors, with `metadata` in the file's header.
void save_module(const std::string& path, const Module& module,
                 const std::map<std::string, std::string>& metadata = {});
// load_safetensors + load_state_dict; returns the file's metadata.
std::map<std::string, std::string> load_module(const std::string& path, Module& module, bool strict = true);

}  // namespace patchgrad
