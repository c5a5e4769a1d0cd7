// tool_io.h — the file and process helpers of the two tutorial tools (check_chapter.cpp and
// grade.cpp), kept apart from chapter_check.h, whose logic stays free of files and processes.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "chapter_check.h"

namespace patchgrad::tutorials {

// The whole file, or nullopt when it cannot be opened.
inline std::optional<std::string> read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The name of every test in the tree at `root` (test_names_in_source): the TEST_CASEs of the
// .cpp files under tests/, and the CTest names in the CMake files of the root, tests/ and
// tutorials/.
inline std::vector<std::string> test_names_in_tree(const std::filesystem::path& root) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files{root / "CMakeLists.txt"};
    std::error_code ec;
    for (const char* folder : {"tests", "tutorials"})
        for (const auto& e : fs::recursive_directory_iterator(root / folder, ec)) {
            const fs::path& f = e.path();
            if ((std::string(folder) == "tests" && f.extension() == ".cpp") || f.filename() == "CMakeLists.txt" ||
                f.extension() == ".cmake")
                files.push_back(f);
        }
    std::sort(files.begin(), files.end());
    std::vector<std::string> names;
    for (const fs::path& file : files)
        for (std::string& name : test_names_in_source(read_file(file).value_or(""))) names.push_back(std::move(name));
    return names;
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
