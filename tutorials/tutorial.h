// tutorial.h — what the chapter programs share: their one option, their section headings and
// two helpers for printing comparisons.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/tensor.h"

namespace patchgrad::tutorial {

// The chapter programs take one option, --out DIR: where they write their pictures (default:
// the current directory). Anything else is an error that names the program.
inline std::string out_dir(int argc, char** argv, const std::string& program) {
    std::string dir = ".";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--out" && i + 1 < argc)
            dir = argv[++i];
        else
            throw std::invalid_argument(program + ": unknown argument '" + arg + "' (usage: [--out DIR])");
    }
    return dir;
}

// "\n== 3. LayerNorm ==": the heading of the part of the output that section 3 of the chapter
// shows (the checker holds the numbers to that), so "section 3" means one thing everywhere.
inline void heading(const std::string& title) { std::cout << "\n== " << title << " ==\n"; }

// max |a[i] - b[i]| over two tensors of one size, in double.
inline double max_abs_difference(const Tensor& a, const Tensor& b) {
    double m = 0;
    const std::vector<real> x = a.to_vector(), y = b.to_vector();
    for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(double(x[i]) - double(y[i])));
    return m;
}

// v with `decimals` digits after the point: fixed(0.12345, 3) is "0.123".
inline std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

}  // namespace patchgrad::tutorial
