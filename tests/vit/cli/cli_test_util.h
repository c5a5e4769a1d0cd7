// cli_test_util.h — what the end-to-end tests of the commands share: their output captured.
#pragma once

#include <iostream>
#include <sstream>

namespace patchgrad::test {

// std::cout and std::cerr into strings while it lives.
struct Captured {
    std::ostringstream out, err;
    std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
    std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
    ~Captured() {
        std::cout.rdbuf(old_out);
        std::cerr.rdbuf(old_err);
    }
};

}  // namespace patchgrad::test
