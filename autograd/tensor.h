// tensor.h — the n-dimensional array at the heart of patchgrad, and its autograd node.
//
// Scalar type. patchgrad trains in float32 and checks gradients in float64 with the very
// same op code. Instead of templating every class and function on the scalar type (which
// would put all code in headers and `Tensor<T>` on every line), the scalar is chosen at
// compile time: every library is built twice from the same sources,
//
//   patchgrad_<module>     with PATCHGRAD_DOUBLE undefined  -> real = float   (training)
//   patchgrad_<module>64   with PATCHGRAD_DOUBLE defined    -> real = double  (gradient checks)
//
// A program links one family or the other, never both. `real` is the only scalar name the
// library uses, so reading an op you never have to think about which build you are in.
//
// Layout. A tensor is always contiguous and row-major: element (i0, i1, ..., ik) lives at
// offset sum_j ij * stride_j, stride_k = 1, stride_j = stride_{j+1} * shape_{j+1}. So a
// tensor is one contiguous run of its storage, and every op is a plain loop over contiguous
// memory. Views exist, but only of that kind: a result that is one contiguous run of its
// input's elements shares the input's storage (an offset into it) instead of copying it, as
// in PyTorch: reshape, and slice/select when the run is contiguous (of the first axis, say
// q, k, v = select(qkv, 0, i)). What PyTorch does with strides (permute, transpose, a slice
// along a later axis) copies here.
//
// Handles. `Tensor` is a cheap handle (a shared pointer) to a `TensorImpl`, like a Python
// reference to a torch.Tensor: copying a Tensor does not copy its data.
//
// Changing a tensor in place. An op's backward reads its inputs and its result as they were
// in the forward pass (matmul's dB needs A, exp's needs exp(x)). A tensor changed between the
// forward and backward() would silently give wrong gradients, so, like PyTorch's version
// counter, every Storage counts the in-place writes made through `data_for_write()` (an
// optimizer step, loading weights, a test planting a NaN), and `record` notes the count of
// every input and of the result. Before an op's backward runs it compares them and throws
// std::logic_error "backward of matmul: input 1 (shape [4, 5]) was changed in place after the
// forward pass (version 1, recorded 0) ..." instead. Views share their base's storage, so a
// write through a view counts for the base too. Two limits: plain `data()` and `at()` are not
// counted (they hand out memory that is also only read through them, and counting reads would
// raise false alarms), so code that changes an existing tensor must use data_for_write(); and
// every input of an op is checked, also those its backward does not read (PyTorch checks only
// the saved ones), because changing any of them between forward and backward is a bug.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "patchgrad/autograd/check.h"
#include "patchgrad/autograd/real.h"
#include "patchgrad/autograd/storage.h"

namespace patchgrad {

class Rng;
class Tensor;

// Shape and shape_str ("[2, 3, 4]") come from check.h, whose check() writes shapes so.
// The element count of a shape. Throws std::invalid_argument naming the shape when it has
// more elements than int64_t counts, instead of wrapping around to a small number.
int64_t shape_numel(const Shape& shape);

// Sizes are multiplied with these, never with a bare `*`: a product that wraps around turns
// "too big" into a small or zero size, which then passes every later check.
// Whether a * b (a, b >= 0) fits in int64_t.
bool product_fits(int64_t a, int64_t b);
// a * b (a, b >= 0), or std::invalid_argument "<what>: <a> x <b> is more than a 64-bit
// integer holds".
int64_t checked_mul(int64_t a, int64_t b, const std::string& what);
// a + b (a, b >= 0), or std::invalid_argument "<what>: <a> + <b> is more than ...".
int64_t checked_add(int64_t a, int64_t b, const std::string& what);
// Normalises a possibly negative axis (-1 = last) for a tensor of shape `shape`,
// throwing "op: axis A is out of range for a tensor of shape [..]" otherwise.
int64_t normalize_axis(int64_t axis, const Shape& shape, const char* op);

// Pushes the gradient of one op result back to the op's inputs. It receives the result
// itself (its data and its .grad are both readable) and adds into the inputs' .grad.
using BackwardFn = std::function<void(Tensor& out)>;

// [snippet:tensor-impl]
struct TensorImpl {
    Shape shape;
    int64_t numel = 0;
    std::shared_ptr<Storage> storage;  // shared by the tensors that view the same memory
    int64_t offset = 0;                // this tensor's first element in storage
    Storage grad;                      // empty until the first gradient arrives; then numel elements, never shared

    bool requires_grad = false;
    bool retain_grad = false;  // keep .grad of a non-leaf after backward (leaves always keep it)

    // Autograd record, set only on results of differentiable ops while grad mode is on.
    const char* op = nullptr;    // name of the op that made this tensor, e.g. "matmul"
    std::vector<Tensor> inputs;  // the op's inputs that require grad
    BackwardFn backward;         // pushes this->grad into inputs[i]->grad
    bool graph_freed = false;    // set once backward() has consumed this node
};
// [/snippet:tensor-impl]

class Tensor {
public:
    Tensor() = default;  // an undefined tensor (no storage); defined() is false
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

    // ---- creation --------------------------------------------------------------------
    // Contents unspecified: for ops that overwrite every element. Builds with
    // PATCHGRAD_POISON_EMPTY (the sanitizer builds) fill it with NaN, so an op that forgets
    // an element produces NaN in the tests instead of passing by luck.
    static Tensor empty(const Shape& shape);
    static Tensor zeros(const Shape& shape, bool requires_grad = false);
    static Tensor ones(const Shape& shape, bool requires_grad = false);
    static Tensor full(const Shape& shape, real value, bool requires_grad = false);
    static Tensor scalar(real value, bool requires_grad = false);  // shape []
    static Tensor arange(real start, real end, real step = 1);     // [start, end)
    static Tensor from_vector(const Shape& shape, std::vector<real> values, bool requires_grad = false);
    static Tensor uniform(const Shape& shape, real low, real high, Rng& rng, bool requires_grad = false);
    static Tensor normal(const Shape& shape, real mean, real std, Rng& rng, bool requires_grad = false);
    // Normal(mean, std) redrawn until it lies in [a, b] (absolute bounds, like
    // torch.nn.init.trunc_normal_ and timm; for std 0.02 timm passes a=-2, b=2).
    static Tensor trunc_normal(const Shape& shape, real mean, real std, real a, real b, Rng& rng,
                               bool requires_grad = false);
    // A tensor of `shape` over `base`'s elements offset .. offset + numel(shape) - 1,
    // sharing base's memory (writes show through both). Its .grad is its own. For ops;
    // they record how the gradient flows back to base.
    static Tensor view(const Tensor& base, const Shape& shape, int64_t offset);

    // ---- shape and elements ----------------------------------------------------------
    bool defined() const { return impl_ != nullptr; }
    const Shape& shape() const;
    int64_t dim() const { return static_cast<int64_t>(shape().size()); }
    int64_t size(int64_t axis) const;  // negative axis counts from the end
    int64_t numel() const;

    // Reading, or filling a tensor no op has used yet (an op's fresh result). Writes through
    // it are not counted: see "Changing a tensor in place" above.
    real* data();
    const real* data() const;
    // data() for changing a tensor that ops may already have used, in place: counts the write
    // (Storage::version), so a backward that would read the old values throws instead.
    real* data_for_write();
    std::vector<real> to_vector() const;
    real item() const;  // the value of a one-element tensor
    real at(std::initializer_list<int64_t> index) const;
    real& at(std::initializer_list<int64_t> index);  // not counted as a write, like data()

    // ---- autograd ----------------------------------------------------------------------
    bool requires_grad() const;
    Tensor& requires_grad_(bool on = true);  // only on leaves, like PyTorch
    bool is_leaf() const { return impl().op == nullptr; }
    const char* op() const { return impl().op; }
    Tensor& retain_grad();  // keep this non-leaf's .grad after backward()

    bool has_grad() const { return !impl().grad.empty(); }
    Tensor grad() const;  // a copy of .grad (undefined tensor if none yet)
    // .grad storage, allocated as zeros on first use: a backward adds into it with `+=`.
    // Callable through a const handle: a Tensor is a shared handle (like a shared_ptr), and
    // backward closures hold their inputs as const copies yet must add into their gradients.
    real* grad_data() const;
    void zero_grad();  // drops .grad (like set_to_none=True in PyTorch)

    // A new leaf holding a copy of the values, cut off from the graph.
    Tensor detach() const;

    // Reverse-mode differentiation from this tensor. Without a seed the tensor must hold
    // one element and the seed is 1. Gradients are *added* to the .grad of every leaf that
    // requires grad. The graph is freed afterwards; a second backward() through it throws.
    void backward();
    void backward(const Tensor& seed);

    // ---- printing ----------------------------------------------------------------------
    std::string str() const;  // "tensor([[1, 2], [3, 4]], shape=[2, 2])", long dims cut with ...

    TensorImpl& impl();
    const TensorImpl& impl() const;
    const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
    bool same(const Tensor& other) const { return impl_ == other.impl_; }

private:
    std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- grad mode -----------------------------------------------------------------------
// While a NoGradGuard lives, ops record no graph (evaluation, optimizer updates), exactly
// like `with torch.no_grad():`. The flag is thread-local so a guard on one thread does not
// affect others.
bool grad_enabled();
class NoGradGuard {
public:
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

// ---- recording an op (used by every op file) -------------------------------------------
// If grad mode is on and any of `inputs` requires grad, marks `out` as the result of `op`,
// remembers the inputs that require grad and the function that pushes out.grad back to
// them, and the storage versions of all inputs and of `out`, which that function checks
// before it runs. Otherwise does nothing, so evaluation builds no graph at all.
void record(Tensor& out, const char* op, std::initializer_list<Tensor> inputs, BackwardFn backward);
void record(Tensor& out, const char* op, const std::vector<Tensor>& inputs, BackwardFn backward);

// ---- counting calls (the coursework grader) ----------------------------------------------
// Op calls (record() with an initializer list: every op but concat; grad mode on or off) and
// backward() calls in this process. The grader (tutorials/tools/probe.cpp) reads them around a
// student's backward: a derived one neither runs the engine nor calls forward ops again.
struct GraphCalls {
    int64_t records = 0;
    int64_t backwards = 0;
};
GraphCalls graph_calls();

}  // namespace patchgrad
