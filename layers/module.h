// module.h — the base of every layer: a tree of named parameters and submodules.
//
// Like torch.nn.Module: a module registers its parameters and children under short names,
// and the tree gives every parameter a dotted name ("blocks.3.attn.qkv.weight") that is the
// same as in PyTorch/timm, so weights can move between the two without renaming.
// Modules are held by std::shared_ptr and are not copyable (a copy would share the
// parameter tensors without anyone noticing).
//
// One way to call a module: `fc->forward(x)` (or `fc.forward(x)`). A Layer below takes
// exactly one tensor and returns one; a module whose forward also takes a patch mask
// (MultiHeadSelfAttention, ViTBlock, TransformerEncoder, VisionTransformer) derives from
// Module and declares `forward(x, patch_mask = {})` itself, so it is not a Layer and cannot
// be put in a Sequential by mistake.
//
// One way to hand randomness in. A constructor takes `Rng& init`, the generator its initial
// weights are drawn from; it is used only while constructing and not kept. A module that
// draws dropout masks (Dropout, DropPath, and every module that contains them) also takes,
// right after it, `std::shared_ptr<Rng> dropout_rng`, which those layers keep and draw from
// at every training step; it may be null when every dropout rate is 0. The VisionTransformer
// makes both from its seed, so a model and its dropout masks are reproducible from one number.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

class Rng;

class Module {
public:
    Module() = default;
    virtual ~Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // The class name shown by summaries and error messages ("Linear", "ViTBlock").
    virtual std::string type_name() const = 0;

    // Every parameter of this module and its descendants, in registration order, with
    // dotted names relative to this module.
    std::vector<std::pair<std::string, Tensor>> named_parameters() const;
    std::vector<Tensor> parameters() const;
    int64_t num_parameters() const;
    // The parameter with this dotted name; throws naming it (and the module) if absent.
    Tensor parameter(const std::string& dotted_name) const;

    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }
    // Every descendant with its dotted name, depth first (this module itself is not listed).
    std::vector<std::pair<std::string, const Module*>> named_modules() const;

    // Train/eval mode, propagated to every descendant (dropout and drop path look at it).
    void train(bool on = true);
    void eval() { train(false); }
    bool training() const { return training_; }

    void zero_grad();

protected:
    // Registers `value` as a leaf that requires grad, under `name`, and returns it.
    Tensor register_parameter(const std::string& name, Tensor value);
    template <class M>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
        add_child(name, module);
        return module;
    }

private:
    void add_child(const std::string& name, std::shared_ptr<Module> module);
    std::vector<std::pair<std::string, Tensor>> params_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
    bool training_ = true;
};

// While an EvalModeGuard lives, `module` is in eval mode (dropout and drop path off); after,
// it is back in the mode it had, however the scope ends, like NoGradGuard for grad mode. What
// evaluation, inspection and prediction wrap a forward pass in.
class EvalModeGuard {
public:
    explicit EvalModeGuard(Module& module) : module_(module), was_training_(module.training()) { module_.eval(); }
    ~EvalModeGuard() { module_.train(was_training_); }
    EvalModeGuard(const EvalModeGuard&) = delete;
    EvalModeGuard& operator=(const EvalModeGuard&) = delete;

private:
    Module& module_;
    bool was_training_;
};

// Overwrites every parameter with a uniform value in [-0.5, 0.5), plus 1 for LayerNorm
// weights (names containing "norm" and ending in "weight"). Fresh weights (std 0.02, zero
// biases, LayerNorm 1/0) make attention nearly uniform and a layer's output nearly constant,
// which hides the difference between two formulas; the tests and the chapters' comparisons
// use these values instead.
void scramble_parameters(Module& module, Rng& rng);

// A module with exactly one tensor in and one out (Linear, LayerNorm, GELU, Dropout, ...):
// what Sequential chains. Modules that also take a patch mask derive from Module instead
// (see the top of this file).
class Layer : public Module {
public:
    virtual Tensor forward(const Tensor& x) = 0;
};

}  // namespace patchgrad
