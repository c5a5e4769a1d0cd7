// tutorial_00_setup — the program of chapter 0: "hello, patchgrad".
//
// The smallest complete use of the library: make a tensor that asks for gradients, run one
// op and a reduction on it, call backward(), and print the shapes, the values and the
// gradient. If this builds, links and prints the numbers the chapter shows, your toolchain
// is ready for the other twelve chapters. Float64, no randomness: the output is the same on
// every machine. This chapter draws no pictures; --out is accepted like every chapter's.
#include <iostream>
#include <stdexcept>
#include <string>

#include "patchgrad/autograd/ops.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;

int main(int argc, char** argv) {
    try {
        tutorial::out_dir(argc, argv, "tutorial_00_setup");  // no pictures in this chapter
        std::cout << "hello, patchgrad (scalar type: " << (sizeof(real) == 8 ? "double" : "float") << ")\n\n";

        // [snippet:hello]
        // A 2x3 tensor that asks for gradients (a "leaf", like torch.tensor(..., requires_grad=True)).
        Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6}, /*requires_grad=*/true);
        Tensor w = Tensor::from_vector({3}, {0.5, -1, 2});  // a constant, broadcast over the rows

        Tensor y = x * w;      // [2, 3] * [3] -> [2, 3]
        Tensor loss = sum(y);  // [2, 3] -> [] (a scalar)
        loss.backward();       // d loss / d x, into x.grad()

        std::cout << "x    = " << x << "\n";
        std::cout << "y    = " << y << "\n";
        std::cout << "loss = " << loss << "\n";
        std::cout << "dloss/dx = " << x.grad() << "\n";
        // [/snippet:hello]

        std::cout << "\nshapes: x " << shape_str(x.shape()) << ", w " << shape_str(w.shape()) << ", y "
                  << shape_str(y.shape()) << ", loss " << shape_str(loss.shape()) << "\n";
        std::cout << "w needs no gradient, so it has none: w.has_grad() = " << std::boolalpha << w.has_grad() << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
