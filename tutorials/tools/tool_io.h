// tool_io.h — the file and process helpers of the two tutorial tools (check_chapter.cpp and
// grade.cpp), kept apart from chapter_check.h, whose logic stays free of files and processes.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace patchgrad::tutorials {

// The whole file, or nullopt when it cannot be opened.
inline std::optional<std::string> read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// s as one single-quoted shell word.
inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// std::system's result on POSIX is a wait status: exit code in bits 8-15, or a signal number.
inline std::string describe_status(int status) {
    if (status == -1) return "could not be started";
    if ((status & 0x7f) == 0) return "exit code " + std::to_string((status >> 8) & 0xff);
    return "killed by signal " + std::to_string(status & 0x7f);
}

}  // namespace patchgrad::tutorials
