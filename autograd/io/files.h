// files.h — the check every reader of a data file makes before opening it.
#pragma once

#include <string>

namespace patchgrad {

// "" when `path` is a regular file (symlinks followed); otherwise why not, phrased to follow
// "<path>: ": "no such file", "is a directory, not a regular file", "is a FIFO (named pipe),
// not a regular file", ... Readers refuse anything else before opening it: opening a FIFO
// blocks until another program writes to it, and a device can be endless.
std::string not_a_regular_file(const std::string& path);

}  // namespace patchgrad
