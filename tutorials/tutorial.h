// tutorial.h — what the chapter programs share: their one option, their section headings,
// and scrambled parameters for comparisons.
#pragma once

#include <iostream>
#include <stdexcept>
#include <string>

#include "autograd/rng.h"
#include "layers/module.h"

namespace patchgrad::tutorial {

// The chapter programs take one option, --out DIR: where they write their pictures (default:
// the current directory). Anything else is an error that names the program.
inline std::string out_dir(int argc, char** argv, const std::string& program) {
    std::string dir = ".";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--out" && i + 1 < argc) dir = argv[++i];
        else throw std::invalid_argument(program + ": unknown argument '" + arg + "' (usage: [--out DIR])");
    }
    return dir;
}

// "\n== 3. LayerNorm ==": the section headings the chapters' output blocks quote.
inline void heading(const std::string& title) { std::cout << "\n== " << title << " ==\n"; }

// Fresh weights (trunc-normal std 0.02, zero biases) make a layer's output nearly constant,
// which hides the difference between two formulas in the 4th decimal. For comparisons every
// parameter gets a uniform value in [-0.5, 0.5) instead, plus 1 for LayerNorm weights (the
// tests' randomize_parameters in tests/vit/vit_test_util.h does the same).
inline void scramble(Module& module, Rng& rng) {
    for (auto& [name, p] : module.named_parameters()) {
        const bool ln_weight = name.find("norm") != std::string::npos && name.size() >= 6 &&
                               name.compare(name.size() - 6, 6, "weight") == 0;
        real* v = p.data();
        for (int64_t i = 0; i < p.numel(); ++i) v[i] = real(rng.uniform(-0.5, 0.5)) + (ln_weight ? 1 : 0);
    }
}

}  // namespace patchgrad::tutorial
