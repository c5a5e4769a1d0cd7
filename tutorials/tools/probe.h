// probe.h — what the coursework grader measures of each exercise (tutorials/tools/probe.cpp).
//
// A probe runs an exercise's functions on inputs drawn from a seed and records the numbers
// they give: forward values, gradients, shapes, counts. The same probe code runs twice:
//   - in the student's program (the hand-in's code linked into patchgrad_probe, in a sandbox),
//     which only writes the numbers to a file;
//   - in the judge (patchgrad_probe built from the teacher's copy), which never runs the
//     student's code: it computes the reference numbers itself, reads the student's file and
//     compares, block by block, and checks the student's gradients against central differences
//     of the reference forward.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/tensor.h"

namespace patchgrad::grading {

// How a block of numbers is compared with the reference.
enum class Kind {
    Exact = 1,     // integers, shapes, flags, text as character codes: equal
    Values = 2,    // forward values: relative difference (2-norm) at most `tolerance`
    Gradient = 3,  // gradients: as Values, and against central differences along a random direction
    Calls = 4,     // {backward() calls, op calls} while the gradients were computed (GraphCalls)
};

struct Block {
    Kind kind = Kind::Exact;
    std::string label;
    std::vector<double> numbers;
    double tolerance = 0;
    int gradient_case = -1;  // Gradient and Calls: the index of the case in Probe::cases
};

// One gradient computation: its leaves, the directional derivative of the reference's loss
// along `direction` by central differences (judge only), and its blocks.
struct GradientCase {
    std::vector<std::vector<double>> direction;  // one per leaf
    double numeric = 0;                          // (L(x + h v) - L(x - h v)) / 2h
    std::vector<int> blocks;                     // the Gradient blocks, one per leaf
};

class Probe {
public:
    Probe(uint64_t seed, bool judge) : rng(seed), judge_(judge), fd_rng_(seed ^ 0x9e3779b97f4a7c15ULL) {}

    Rng rng;  // the inputs' random numbers

    void exact(const std::string& label, std::vector<double> numbers);
    void shape(const std::string& label, const Shape& shape);
    void text(const std::string& label, const std::string& s);  // as character codes
    void values(const std::string& label, const Tensor& t, double tolerance = 1e-9);
    void values(const std::string& label, std::vector<double> numbers, double tolerance = 1e-9);

    // The gradients of `loss` (a one-element tensor) with respect to each leaf, by backward(),
    // and the calls made meanwhile. `loss` must give the same value on every call (reseed any
    // Rng it draws from inside it).
    void gradients(const std::string& label, const std::vector<Tensor>& leaves, const std::vector<std::string>& names,
                   const std::function<Tensor()>& loss);
    // The same, with the gradients computed by `compute` (a hand-written backward) instead;
    // `loss` is what they are the gradients of.
    void gradients_by(const std::string& label, const std::vector<Tensor>& leaves,
                      const std::vector<std::string>& names, const std::function<Tensor()>& loss,
                      const std::function<std::vector<Tensor>()>& compute);

    std::vector<Block> blocks;
    std::vector<GradientCase> cases;

private:
    void finish_case(const std::string& label, const std::vector<Tensor>& leaves, const std::vector<Tensor>& grads,
                     const std::vector<std::string>& names, const std::function<Tensor()>& loss, GraphCalls before,
                     GraphCalls after);
    bool judge_;
    Rng fd_rng_;
};

// An exercise's probe. `derivation`: the exercise is a backward derived by hand, so a gradient
// that agrees with the reference only to finite-difference precision is refused as numerical.
struct ExerciseProbe {
    const char* name;
    bool derivation;
    void (*run)(Probe&);
};

const std::vector<ExerciseProbe>& exercise_probes();

}  // namespace patchgrad::grading
