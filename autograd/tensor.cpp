// tensor.cpp — Tensor: creation, views that share storage, element access, the backward
// engine (the graph's topological order and the accumulation of gradients), printing, and
// the grad mode that decides which ops are recorded.
#include "patchgrad/autograd/tensor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/grad_fast_paths.h"
#include "patchgrad/autograd/rng.h"

namespace patchgrad {

namespace {
std::atomic<int64_t> calls_recorded{0}, calls_backward{0};  // graph_calls()
}  // namespace

GraphCalls graph_calls() {
    return {calls_recorded.load(std::memory_order_relaxed), calls_backward.load(std::memory_order_relaxed)};
}

std::string shape_str(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

bool product_fits(int64_t a, int64_t b) { return b == 0 || a <= std::numeric_limits<int64_t>::max() / b; }

int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
    check(product_fits(a, b), what, ": ", a, " x ", b, " is more than a 64-bit integer holds");
    return a * b;
}

int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
    check(a <= std::numeric_limits<int64_t>::max() - b, what, ": ", a, " + ", b,
          " is more than a 64-bit integer holds");
    return a + b;
}

int64_t shape_numel(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) {
        // Negative dimensions are the caller's to refuse (with its own message); they
        // cannot overflow towards zero the way huge ones do.
        check(d <= 0 || product_fits(n, d), "shape ", shape, " has more elements than a 64-bit integer holds");
        n *= d;
    }
    return n;
}

int64_t normalize_axis(int64_t axis, const Shape& shape, const char* op) {
    const int64_t ndim = static_cast<int64_t>(shape.size());
    const int64_t a = axis < 0 ? axis + ndim : axis;
    check(a >= 0 && a < ndim, op, ": axis ", axis, " is out of range for a tensor of shape ", shape);
    return a;
}

// ---- creation ----------------------------------------------------------------------------

namespace {
// The element count of a shape a tensor is about to be created with.
int64_t checked_numel(const Shape& shape) {
    for (int64_t d : shape) check(d >= 0, "Tensor: negative dimension in shape ", shape);
    const int64_t n = shape_numel(shape);
    check_fits_in_memory(n);  // before any std::vector of that size is attempted
    return n;
}

Tensor make(const Shape& shape, Storage data, bool requires_grad) {
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = shape;
    impl->numel = data.size();
    impl->storage = std::make_shared<Storage>(std::move(data));
    impl->requires_grad = requires_grad;
    return Tensor(std::move(impl));
}

Tensor make(const Shape& shape, const std::vector<real>& values, bool requires_grad) {
    Storage data(checked_numel(shape));
    std::copy(values.begin(), values.end(), data.data());
    return make(shape, std::move(data), requires_grad);
}
}  // namespace

namespace {
// Memory whose every element the caller is about to write. The sanitizer builds
// (PATCHGRAD_POISON_EMPTY) fill it with NaN, so an element left unwritten fails the tests.
Storage uninitialised(int64_t numel) {
#ifdef PATCHGRAD_POISON_EMPTY
    return Storage(numel, std::numeric_limits<real>::quiet_NaN());
#else
    return Storage(numel);
#endif
}
}  // namespace

Tensor Tensor::empty(const Shape& shape) { return make(shape, uninitialised(checked_numel(shape)), false); }

Tensor Tensor::zeros(const Shape& shape, bool requires_grad) { return full(shape, 0, requires_grad); }

Tensor Tensor::ones(const Shape& shape, bool requires_grad) { return full(shape, 1, requires_grad); }

Tensor Tensor::full(const Shape& shape, real value, bool requires_grad) {
    return make(shape, Storage(checked_numel(shape), value), requires_grad);
}

Tensor Tensor::scalar(real value, bool requires_grad) { return make({}, Storage(1, value), requires_grad); }

Tensor Tensor::arange(real start, real end, real step) {
    check(step != 0 && !((end - start) / step < 0), "arange: step ", step, " never goes from ", start, " to ", end);
    const auto n = static_cast<int64_t>(std::ceil((end - start) / step));
    std::vector<real> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = start + step * static_cast<real>(i);
    return make({n}, std::move(v), false);
}

Tensor Tensor::from_vector(const Shape& shape, std::vector<real> values, bool requires_grad) {
    const int64_t n = shape_numel(shape);
    check(static_cast<int64_t>(values.size()) == n, "from_vector: ", values.size(), " values do not fill shape ", shape,
          " (", n, " elements)");
    return make(shape, std::move(values), requires_grad);
}

Tensor Tensor::uniform(const Shape& shape, real low, real high, Rng& rng, bool requires_grad) {
    std::vector<real> v(checked_numel(shape));
    for (auto& x : v) x = static_cast<real>(rng.uniform(low, high));
    return make(shape, std::move(v), requires_grad);
}

Tensor Tensor::normal(const Shape& shape, real mean, real std, Rng& rng, bool requires_grad) {
    std::vector<real> v(checked_numel(shape));
    for (auto& x : v) x = static_cast<real>(mean + std * rng.normal());
    return make(shape, std::move(v), requires_grad);
}

Tensor Tensor::trunc_normal(const Shape& shape, real mean, real std, real a, real b, Rng& rng, bool requires_grad) {
    check(a < b && !(std <= 0), "trunc_normal: need a < b and std > 0, got a=", a, " b=", b, " std=", std);
    std::vector<real> v(checked_numel(shape));
    for (auto& x : v) {
        double draw;
        do draw = mean + std * rng.normal();
        while (draw < a || draw > b);
        x = static_cast<real>(draw);
    }
    return make(shape, std::move(v), requires_grad);
}

// [snippet:view]
Tensor Tensor::view(const Tensor& base, const Shape& shape, int64_t offset) {
    const int64_t n = checked_numel(shape);
    check<std::logic_error>(offset >= 0 && offset + n <= base.numel(), "view: elements ", offset, "..", offset + n,
                            " are outside a tensor of shape ", base.shape());
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = shape;
    impl->numel = n;
    impl->storage = base.impl().storage;
    impl->offset = base.impl().offset + offset;
    return Tensor(std::move(impl));
}
// [/snippet:view]

// ---- shape and elements --------------------------------------------------------------------

TensorImpl& Tensor::impl() {
    if (!impl_) throw std::logic_error("Tensor: use of an undefined tensor");
    return *impl_;
}
const TensorImpl& Tensor::impl() const {
    if (!impl_) throw std::logic_error("Tensor: use of an undefined tensor");
    return *impl_;
}

const Shape& Tensor::shape() const { return impl().shape; }
int64_t Tensor::size(int64_t axis) const { return shape()[normalize_axis(axis, shape(), "size")]; }
int64_t Tensor::numel() const { return impl().numel; }
std::vector<real> Tensor::to_vector() const { return std::vector<real>(data(), data() + numel()); }
real* Tensor::data() { return impl().storage->data() + impl().offset; }
real* Tensor::data_for_write() {
    impl().storage->bump_version();
    return data();
}
const real* Tensor::data() const { return impl().storage->data() + impl().offset; }

real Tensor::item() const {
    check(numel() == 1, "item: tensor of shape ", shape(), " has ", numel(), " elements, not 1");
    return data()[0];
}

namespace {
int64_t flat_offset(const Shape& shape, std::initializer_list<int64_t> index) {
    check(index.size() == shape.size(), "at: ", index.size(), " indices for a tensor of shape ", shape);
    // [snippet:flat-offset]
    int64_t offset = 0;
    size_t axis = 0;
    for (int64_t i : index) {
        check<std::out_of_range>(i >= 0 && i < shape[axis], "at: index ", i, " is out of range for axis ", axis,
                                 " of shape ", shape);
        offset = offset * shape[axis] + i;
        ++axis;
    }
    return offset;
    // [/snippet:flat-offset]
}
}  // namespace

real Tensor::at(std::initializer_list<int64_t> index) const { return data()[flat_offset(shape(), index)]; }
real& Tensor::at(std::initializer_list<int64_t> index) { return data()[flat_offset(shape(), index)]; }

// ---- autograd --------------------------------------------------------------------------------

bool Tensor::requires_grad() const { return impl().requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
    check(is_leaf(), "requires_grad_: only leaves can change requires_grad; this tensor is the result of '", op(),
          "' (use detach() first)");
    impl().requires_grad = on;
    return *this;
}

Tensor& Tensor::retain_grad() {
    impl().retain_grad = true;
    return *this;
}

Tensor Tensor::grad() const {
    if (!has_grad()) return Tensor();
    return make(shape(), impl().grad.clone(), false);
}

// [snippet:grad-data]
real* Tensor::grad_data() const {
    if (!impl_) throw std::logic_error("Tensor: use of an undefined tensor");
    auto& g = impl_->grad;
    if (g.empty()) g = Storage(impl_->numel, real(0));
    return g.data();
}
// [/snippet:grad-data]

void Tensor::zero_grad() { impl().grad.reset(); }

Tensor Tensor::detach() const {
    Storage copy(numel());
    std::copy(data(), data() + numel(), copy.data());
    return make(shape(), std::move(copy), false);
}

void Tensor::backward() {
    check(numel() == 1, "backward: called on a tensor of shape ", shape(),
          " without a seed gradient; only a one-element tensor (a loss) has the implicit seed 1 — pass a seed of the "
          "same shape");
    backward(Tensor::ones(shape()));
}

void Tensor::backward(const Tensor& seed) {
    calls_backward.fetch_add(1, std::memory_order_relaxed);
    if (!requires_grad())
        throw std::invalid_argument(
            "backward: this tensor does not require grad (no input of the ops "
            "that made it has requires_grad, or it was made under NoGradGuard)");
    check(seed.shape() == shape(), "backward: seed of shape ", seed.shape(), " does not match the tensor's shape ",
          shape());

    // [exercise:backward-engine]
    // Topological order by an iterative depth-first search (an explicit stack instead of
    // recursion, so a graph thousands of ops deep cannot overflow the call stack). A node is
    // appended after all of its inputs, so walking `order` backwards visits every node
    // before any of the nodes it was computed from: its .grad is complete when we use it.
    // `order` owns its nodes: freeing a consumer's inputs below must not free a node that
    // is still waiting for its turn.
    std::vector<std::shared_ptr<TensorImpl>> order;
    std::unordered_set<TensorImpl*> visited;
    std::vector<std::pair<std::shared_ptr<TensorImpl>, size_t>> stack;  // node, next input to visit
    stack.emplace_back(impl_, 0);
    visited.insert(impl_.get());
    while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (node->graph_freed)
            throw std::logic_error(std::string("backward: the graph through '") + node->op +
                                   "' was already freed by an earlier backward(); run the forward "
                                   "pass again (patchgrad frees the graph so memory does not grow)");
        if (next < node->inputs.size()) {
            const auto& input = node->inputs[next++].impl_ptr();
            if (visited.insert(input.get()).second) stack.emplace_back(input, 0);
        } else {
            order.push_back(std::move(node));
            stack.pop_back();
        }
    }

    {
        real* g = grad_data();
        const real* s = seed.data();
        for (int64_t i = 0; i < numel(); ++i) g[i] += s[i];
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        TensorImpl& node = **it;
        if (!node.backward) continue;  // a leaf
        Tensor out(*it);
        if (!node.grad.empty()) {
            // .grad is dropped below, so an input may take the buffer (grad_fast_paths.h).
            const ExpendableGrad handed_over(node, !node.retain_grad && &node != impl_.get());
            node.backward(out);
        }
        node.backward = nullptr;
        node.inputs.clear();
        node.graph_freed = true;
        if (!node.retain_grad && &node != impl_.get()) {
            node.grad.reset();
        }
        it->reset();  // the node dies here unless someone outside still holds it
    }
    // [/exercise:backward-engine]
}

// ---- grad_fast_paths.h ---------------------------------------------------------------------

GradOverwrite grad_for_overwrite(const Tensor& x) {
    if (!x.defined()) throw std::logic_error("Tensor: use of an undefined tensor");
    Storage& g = x.impl_ptr()->grad;
    if (!g.empty()) return {g.data(), real(1)};
    g = uninitialised(x.impl_ptr()->numel);
    return {g.data(), real(0)};
}

GradOverwrite grad_for_overwrite_if_wanted(const Tensor& x) {
    return x.requires_grad() ? grad_for_overwrite(x) : GradOverwrite{nullptr, 0};
}

void add_to_grad(const Tensor& x, const real* g) {
    const GradOverwrite target = grad_for_overwrite(x);
    real* dx = target.data;
    parallel_for(x.numel(), kElementGrain, [=](int64_t begin, int64_t end) {
        if (target.beta == 0)  // the first gradient to arrive: a copy (dx is uninitialised)
            std::copy(g + begin, g + end, dx + begin);
        else
            for (int64_t i = begin; i < end; ++i) dx[i] += g[i];
    });
}

namespace {
thread_local const TensorImpl* expendable_grad = nullptr;  // the node of the open ExpendableGrad
}

ExpendableGrad::ExpendableGrad(const TensorImpl& node, bool expendable) : previous_(expendable_grad) {
    expendable_grad = expendable ? &node : nullptr;
}
ExpendableGrad::~ExpendableGrad() { expendable_grad = previous_; }

void add_grad_from(const Tensor& x, const Tensor& out) {
    if (!x.defined() || !out.defined()) throw std::logic_error("Tensor: use of an undefined tensor");
    Storage& theirs = out.impl_ptr()->grad;
    if (theirs.empty())
        throw std::logic_error(std::string("add_grad_from: the result of '") + (out.op() ? out.op() : "?") +
                               "' has no gradient (already handed over?)");
    check(theirs.size() == x.numel(), "add_grad_from: the result of '", out.op() ? out.op() : "?", "' has ",
          theirs.size(), " gradient elements, this tensor ", x.numel());
    Storage& mine = x.impl_ptr()->grad;
    if (mine.empty() && expendable_grad == out.impl_ptr().get()) {
        mine = std::move(theirs);  // no copy: those were 2.5% of a cifar-tiny step
        return;
    }
    add_to_grad(x, theirs.data());
}

// ---- printing --------------------------------------------------------------------------------

namespace {
// NaN prints as "nan" whatever its sign bit, as in PyTorch (the C library may say "-nan").
void print_value(std::ostream& os, real v) {
    if (std::isnan(v))
        os << "nan";
    else
        os << v;
}

// Prints dimension `axis` of the block starting at `offset`; long dimensions show their first
// and last three entries, like NumPy and PyTorch.
void print_dim(std::ostream& os, const Tensor& t, size_t axis, int64_t offset) {
    const Shape& shape = t.shape();
    const int64_t n = shape[axis];
    int64_t stride = 1;
    for (size_t j = axis + 1; j < shape.size(); ++j) stride *= shape[j];
    const int64_t edge = 3;
    os << "[";
    for (int64_t i = 0; i < n; ++i) {
        if (n > 2 * edge && i == edge) {
            os << "...";
            i = n - edge - 1;
            if (axis + 1 < shape.size())
                os << ",\n" << std::string(axis + 8, ' ');
            else
                os << ", ";
            continue;
        }
        if (axis + 1 == shape.size())
            print_value(os, t.data()[offset + i]);
        else
            print_dim(os, t, axis + 1, offset + i * stride);
        if (i + 1 < n) {
            if (axis + 1 < shape.size())
                os << ",\n" << std::string(axis + 8, ' ');
            else
                os << ", ";
        }
    }
    os << "]";
}
}  // namespace

std::string Tensor::str() const {
    if (!defined()) return "tensor(undefined)";
    std::ostringstream os;
    os << std::setprecision(4) << "tensor(";
    if (shape().empty())
        os << data()[0];
    else
        print_dim(os, *this, 0, 0);
    os << ", shape=" << shape_str(shape());
    if (op())
        os << ", op=" << op();
    else if (requires_grad())
        os << ", requires_grad";
    os << ")";
    return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// ---- grad mode and recording --------------------------------------------------------------------

namespace {
thread_local bool grad_mode = true;
}

bool grad_enabled() { return grad_mode; }
NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

namespace {
// `backward`, preceded by the check that neither the inputs nor the result `out` of `op` were
// changed in place since now (tensor.h, "Changing a tensor in place"). Inputs are held weakly:
// one that no longer exists cannot have been changed, and holding it would keep its memory.
BackwardFn checking_versions(const Tensor& out, const char* op, const std::vector<Tensor>& inputs,
                             BackwardFn backward) {
    std::vector<std::pair<std::weak_ptr<TensorImpl>, int64_t>> seen;
    seen.reserve(inputs.size());
    for (const Tensor& in : inputs) seen.emplace_back(in.impl_ptr(), in.defined() ? in.impl().storage->version() : 0);
    return [op, seen = std::move(seen), out_version = out.impl().storage->version(),
            backward = std::move(backward)](Tensor& o) {
        const char* changed = ") was changed in place after the forward pass (version ";
        const char* rule =
            "); an op's inputs and result must stay unchanged until backward() has run (writes through "
            "data_for_write() are counted, e.g. an optimizer step)";
        for (size_t i = 0; i < seen.size(); ++i) {
            const std::shared_ptr<TensorImpl> in = seen[i].first.lock();
            if (in && in->storage->version() != seen[i].second)
                fail<std::logic_error>("backward of ", op, ": input ", i, " (shape ", in->shape, changed,
                                       in->storage->version(), ", recorded ", seen[i].second, rule);
        }
        const int64_t now = o.impl().storage->version();
        check<std::logic_error>(now == out_version, "backward of ", op, ": its result (shape ", o.shape(), changed, now,
                                ", recorded ", out_version, rule);
        backward(o);
    };
}
}  // namespace

// [snippet:record]
void record(Tensor& out, const char* op, const std::vector<Tensor>& inputs, BackwardFn backward) {
    if (!grad_mode) return;
    TensorImpl& o = out.impl();
    for (const Tensor& in : inputs)
        if (in.defined() && in.requires_grad()) o.inputs.push_back(in);
    if (o.inputs.empty()) return;
    o.requires_grad = true;
    o.op = op;
    o.backward = checking_versions(out, op, inputs, std::move(backward));
}
// [/snippet:record]

void record(Tensor& out, const char* op, std::initializer_list<Tensor> inputs, BackwardFn backward) {
    calls_recorded.fetch_add(1, std::memory_order_relaxed);
    record(out, op, std::vector<Tensor>(inputs), std::move(backward));
}

}  // namespace patchgrad
