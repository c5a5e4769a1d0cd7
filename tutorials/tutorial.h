// tutorial.h — what the chapter programs share: their one option and their section headings.
#pragma once

#include <iostream>
#include <stdexcept>
#include <string>

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

}  // namespace patchgrad::tutorial
