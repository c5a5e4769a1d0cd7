// The README's map ("What is where") against the tree: every folder of the four libraries
// (autograd/, layers/, vit/, datasets/ and the job folders inside them) is named in the first
// column of the map, and every folder the map names exists. A folder added or moved without
// the map is a failure here, not a surprise for the next reader. And the test names that the
// Markdown files outside the chapters quote are real (the chapters' own check does theirs).
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "tutorials/tools/chapter_check.h"
#include "tutorials/tools/tool_io.h"

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(PATCHGRAD_TEST_DATA).parent_path().parent_path();

// The `folder/` names in the first cell of each row of the README's "What is where" table.
std::set<std::string> folders_in_map() {
    std::ifstream in(kRoot / "README.md");
    std::set<std::string> folders;
    std::string line;
    bool in_section = false;
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) in_section = line == "## What is where";
        if (!in_section || line.rfind("| `", 0) != 0) continue;
        const std::string cell = line.substr(1, line.find(" |", 1));
        for (size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', at + 1)) {
            const size_t end = cell.find('`', at + 1);
            if (end == std::string::npos) break;
            const std::string name = cell.substr(at + 1, end - at - 1);
            if (!name.empty() && name.back() == '/') folders.insert(name.substr(0, name.size() - 1));
            at = end;
        }
    }
    return folders;
}

}  // namespace

TEST_CASE("README: the map names every folder of the libraries, and only folders that exist", "[readme]") {
    const std::set<std::string> map = folders_in_map();
    INFO("README.md's table under \"## What is where\" names " << map.size() << " folders");
    REQUIRE(map.count("autograd") == 1);
    for (const char* library : {"autograd", "layers", "vit", "datasets"})
        for (const auto& entry : fs::recursive_directory_iterator(kRoot / library)) {
            const std::string name = entry.path().filename().string();
            if (!entry.is_directory() || name.rfind("__", 0) == 0 || name.rfind(".", 0) == 0)
                continue;  // Python's __pycache__ and hidden folders are no part of the tree
            const std::string folder = fs::relative(entry.path(), kRoot).generic_string();
            INFO("the folder " << folder << "/ is not in README.md's map");
            CHECK(map.count(folder) == 1);
        }
    for (const std::string& folder : map) {
        INFO("README.md's map names " << folder << "/, which does not exist");
        CHECK(fs::is_directory(kRoot / folder));
    }
}

TEST_CASE("README: the test names that README.md, tutorials/README.md and the measurement log quote exist",
          "[readme]") {
    using namespace patchgrad::tutorials;
    const std::vector<std::string> names = test_names_in_tree(kRoot);
    REQUIRE(names.size() > 500);
    for (const char* markdown : {"README.md", "tutorials/README.md", "tutorials/12_speed/measurements.md"}) {
        const std::optional<std::string> text = read_file(kRoot / markdown);
        REQUIRE(text);
        std::vector<Problem> problems;
        check_quoted_test_names(*text, names, markdown, problems);
        for (const Problem& p : problems) FAIL_CHECK(p.str());
    }
}
