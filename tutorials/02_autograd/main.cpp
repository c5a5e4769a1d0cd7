// tutorial_02_autograd — the program of chapter 2, reverse-mode autograd.
//
// First a scalar expression (micrograd's L = (a*b + c) * f): the graph the ops record, the
// chain rule applied by hand in reverse topological order, and the same numbers from
// backward(). Then why backward() walks the graph with an explicit stack (a chain 100,000
// ops deep), why gradients are added (+=) rather than assigned, and tensors: the gradient
// of a broadcast operand is summed over the axes it was stretched along (a bias, the class
// token). Last, one gradient compared with a finite difference (chapter 3 does this
// properly). Float64, no randomness: the output is the same on every machine. This chapter
// draws no pictures; --out is accepted like every chapter's.
#include <cmath>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;

namespace {

// Prints "name = op(input, input)" for every node of a small graph, outputs first. The
// graph is what record() stored: each result's op name and the inputs that need gradients.
// (Recursion is fine for a graph of five nodes; backward() itself never recurses.)
void print_graph(const Tensor& t, const std::map<const TensorImpl*, std::string>& names) {
    if (t.is_leaf()) return;
    std::cout << "  " << names.at(&t.impl()) << " = " << t.op() << "(";
    const auto& inputs = t.impl().inputs;
    for (size_t i = 0; i < inputs.size(); ++i) std::cout << (i ? ", " : "") << names.at(&inputs[i].impl());
    std::cout << ")\n";
    for (const Tensor& in : inputs) print_graph(in, names);
}

void scalar_example() {
    tutorial::heading("1. a scalar expression, micrograd-style");
    // [snippet:scalar-forward]
    Tensor a = Tensor::scalar(2, true), b = Tensor::scalar(-3, true);
    Tensor c = Tensor::scalar(10, true), f = Tensor::scalar(-2, true);
    Tensor e = a * b;  // -6
    Tensor d = e + c;  // 4
    Tensor L = d * f;  // -8
    e.retain_grad();   // keep the gradients of the intermediate results too
    d.retain_grad();
    // [/snippet:scalar-forward]
    const std::map<const TensorImpl*, std::string> names = {{&a.impl(), "a"}, {&b.impl(), "b"}, {&c.impl(), "c"},
                                                            {&f.impl(), "f"}, {&e.impl(), "e"}, {&d.impl(), "d"},
                                                            {&L.impl(), "L"}};
    std::cout << "a = " << a.item() << ", b = " << b.item() << ", c = " << c.item() << ", f = " << f.item()
              << "\ne = a * b = " << e.item() << ", d = e + c = " << d.item() << ", L = d * f = " << L.item() << "\n";
    std::cout << "the graph recorded by the ops (leaves a, b, c, f have no op):\n";
    print_graph(L, names);

    std::cout << "the chain rule by hand, from L back to the leaves:\n";
    const double dL = 1;
    const double dd = dL * f.item(), df = dL * d.item();  // L = d * f
    const double de = dd * 1, dc = dd * 1;                // d = e + c
    const double da = de * b.item(), db = de * a.item();  // e = a * b
    std::cout << "  dL/dL = 1\n  dL/dd = f = " << dd << ", dL/df = d = " << df << "\n  dL/de = dL/dd * 1 = " << de
              << ", dL/dc = dL/dd * 1 = " << dc << "\n  dL/da = dL/de * b = " << da << ", dL/db = dL/de * a = " << db
              << "\n";

    // [snippet:scalar-backward]
    L.backward();
    // [/snippet:scalar-backward]
    std::cout << "L.backward():\n  a.grad = " << a.grad().item() << ", b.grad = " << b.grad().item()
              << ", c.grad = " << c.grad().item() << ", f.grad = " << f.grad().item()
              << "\n  e.grad = " << e.grad().item() << ", d.grad = " << d.grad().item() << " (kept by retain_grad)\n";
    std::cout << "after backward the graph is freed: L.impl().inputs.size() = " << L.impl().inputs.size() << "\n";
}

void accumulation() {
    tutorial::heading("4. gradients are added, not assigned");
    // [snippet:used-twice]
    Tensor x = Tensor::scalar(3, true);
    Tensor y = x * x + x;  // dy/dx = 2x + 1 = 7: x reaches y along three edges
    y.backward();
    // [/snippet:used-twice]
    std::cout << "y = x * x + x at x = 3: y = " << y.item() << ", x.grad = " << x.grad().item()
              << " (= x + x + 1: one term per edge)\n";
    Tensor y2 = x * x + x;  // a second forward pass builds a new graph ...
    y2.backward();          // ... and its backward adds to x.grad again
    std::cout << "a second forward and backward without zero_grad: x.grad = " << x.grad().item() << "\n";
    x.zero_grad();
    Tensor y3 = x * x + x;
    y3.backward();
    std::cout << "after x.zero_grad() and one more: x.grad = " << x.grad().item() << "\n";
}

void deep_graph() {
    tutorial::heading("3. a graph 100,000 ops deep");
    // [snippet:deep-chain]
    Tensor x = Tensor::scalar(1, true);
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y * real(1.00001);  // y = x * 1.00001^100000
    y.backward();                                            // a recursive walk would need 100,000 nested calls here
    // [/snippet:deep-chain]
    std::cout.precision(12);
    std::cout << "y = " << y.item() << ", dy/dx = " << x.grad().item()
              << ", 1.00001^100000 = " << std::pow(1.00001, 100000) << "\n";
    std::cout.precision(6);
}

void tensors() {
    tutorial::heading("5. tensors: a broadcast operand's gradient is a sum");
    // [snippet:bias-backward]
    Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6}, true);
    Tensor bias = Tensor::from_vector({3}, {0.1, 0.2, 0.3}, true);
    Tensor scale = Tensor::from_vector({2, 1}, {1, 0.5}, true);
    Tensor y = (x + bias) * scale;                                // [2, 3] + [3] -> [2, 3], then * [2, 1] -> [2, 3]
    Tensor dy = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});  // pretend dL/dy
    y.backward(dy);
    // [/snippet:bias-backward]
    std::cout << "y = " << y << "\n";
    std::cout << "dL/dy      = " << dy << "\n";
    std::cout << "x.grad     = " << x.grad() << "   (dy * scale, no sum: x was not stretched)\n";
    std::cout << "bias.grad  = " << bias.grad() << "   (dy * scale summed over the rows)\n";
    std::cout << "scale.grad = " << scale.grad() << "   (dy * (x + bias) summed over the columns)\n";

    // [snippet:class-token]
    Tensor cls = Tensor::from_vector({1, 1, 4}, {0.1, 0.2, 0.3, 0.4}, true);  // [1, 1, D]
    Tensor tokens = broadcast_to(cls, {3, 1, 4});                             // [B, 1, D]: one per image
    Tensor g = reshape(Tensor::arange(0, 12), {3, 1, 4});                     // pretend dL/dtokens
    tokens.backward(g);
    // [/snippet:class-token]
    std::cout << "\nclass token [1, 1, 4] broadcast to [3, 1, 4]; dL/dtokens = " << g << "\n";
    std::cout << "cls.grad = " << cls.grad() << "   (summed over the batch)\n";
}

void finite_difference() {
    tutorial::heading("6. checking one gradient with a finite difference");
    // [snippet:finite-difference]
    auto L = [](real a) {  // L(a) = (a * b + c) * f with b = -3, c = 10, f = -2
        Tensor ta = Tensor::scalar(a);
        return ((ta * Tensor::scalar(-3) + Tensor::scalar(10)) * Tensor::scalar(-2)).item();
    };
    const real h = 1e-6;
    const real numeric = (L(2 + h) - L(2 - h)) / (2 * h);
    // [/snippet:finite-difference]
    std::cout.precision(12);
    std::cout << "(L(a + h) - L(a - h)) / 2h at a = 2, h = 1e-6: " << numeric << " (backward gave 6)\n";
    std::cout.precision(6);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        tutorial::out_dir(argc, argv, "tutorial_02_autograd");  // no pictures in this chapter
        scalar_example();
        deep_graph();
        accumulation();
        tensors();
        finite_difference();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
