#include "patchgrad/autograd/io/files.h"

#include <filesystem>

namespace patchgrad {

std::string not_a_regular_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    switch (status.type()) {
        case fs::file_type::regular:
            return "";
        case fs::file_type::not_found:
            return "no such file";
        case fs::file_type::directory:
            return "is a directory, not a regular file";
        case fs::file_type::fifo:
            return "is a FIFO (named pipe), not a regular file";
        case fs::file_type::socket:
            return "is a socket, not a regular file";
        case fs::file_type::block:
        case fs::file_type::character:
            return "is a device, not a regular file";
        default:
            return ec ? "cannot be examined: " + ec.message() : "is not a regular file";
    }
}

}  // namespace patchgrad
