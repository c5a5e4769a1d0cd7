// atomic_write: the old file or the complete new one, never a part, and never a write through
// whatever stands at the temporary name.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "patchgrad/autograd/io/atomic_file.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {
std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
}  // namespace

TEST_CASE("atomic_write: writes the whole file and leaves no temporary behind", "[atomic_file]") {
    TempDir dir;
    const std::string path = dir.file("a.txt");
    atomic_write(path, "test", [](std::ostream& out) { out << std::string(200000, 'x') << "end"; });
    CHECK(contents(path) == std::string(200000, 'x') + "end");  // more than one buffer's worth
    atomic_write(path, "test", [](std::ostream& out) { out << "second"; });
    CHECK(contents(path) == "second");
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());
}

TEST_CASE("atomic_write: the temporary file's name is the writer's own", "[atomic_file]") {
    CHECK(temporary_path("runs/x/last.safetensors", 4242, 7) == "runs/x/last.safetensors.4242-7.tmp");
    CHECK(is_temporary_name("last.safetensors.4242-7.tmp", "last.safetensors"));
    CHECK_FALSE(is_temporary_name("last.safetensors.tmp", "last.safetensors"));
    CHECK_FALSE(is_temporary_name("last.safetensors.42-.tmp", "last.safetensors"));
    CHECK_FALSE(is_temporary_name("last.safetensors.4a-7.tmp", "last.safetensors"));
    CHECK_FALSE(is_temporary_name("best.safetensors.4242-7.tmp", "last.safetensors"));
    TempDir dir;
    std::vector<std::string> seen;
    atomic_write(dir.file("a"), "test", [&](std::ostream&) { seen = files_ending_in(dir.path.string(), ".tmp"); });
    REQUIRE(seen.size() == 1);
    CHECK(is_temporary_name(seen[0], "a"));
    CHECK(seen[0].find("." + std::to_string(::getpid()) + "-") != std::string::npos);
}

// Two programs saving one file: each unlinked the other's fixed-name temporary file, and one
// failed with "cannot rename ... No such file or directory".
TEST_CASE("atomic_write: two processes writing the same file never break each other's writes",
          "[atomic_file][errors]") {
    TempDir dir;
    const std::string path = dir.file("best.safetensors");
    const std::string mine(100000, 'p'), theirs(100000, 'c');
    const auto write_often = [&](const std::string& text) {
        for (int i = 0; i < 60; ++i) atomic_write(path, "test", [&](std::ostream& out) { out << text; });
    };
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        try {
            write_often(theirs);
        } catch (...) {
            ::_exit(1);
        }
        ::_exit(0);
    }
    std::string error;
    try {
        write_often(mine);
    } catch (const std::exception& e) {
        error = e.what();
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(error == "");
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    const std::string last = contents(path);
    CHECK((last == mine || last == theirs));
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());
}

// A symlinked last.safetensors.tmp made a save overwrite the symlink's target.
TEST_CASE("atomic_write: a symlink or a stale file at the temporary name is never written through",
          "[atomic_file][errors]") {
    TempDir dir;
    const std::string victim = dir.file("victim.txt"), path = dir.file("ckpt");
    { std::ofstream(victim) << "precious"; }
    // The serial of this process's next write: one more than that of a write now.
    std::string name;
    atomic_write(path, "test", [&](std::ostream&) { name = files_ending_in(dir.path.string(), ".tmp").at(0); });
    const size_t dash = name.rfind('-');
    const uint64_t serial = std::stoull(name.substr(dash + 1));
    const std::string next = dir.file(name.substr(0, dash + 1) + std::to_string(serial + 1) + ".tmp");
    const std::string after = dir.file(name.substr(0, dash + 1) + std::to_string(serial + 2) + ".tmp");

    std::filesystem::create_symlink(victim, next);
    atomic_write(path, "test", [](std::ostream& out) { out << "new"; });
    CHECK(contents(victim) == "precious");
    CHECK(contents(path) == "new");
    CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(path)));

    {
        std::ofstream(after) << "half of an older save";  // a file of an earlier process of this id
    }
    atomic_write(path, "test", [](std::ostream& out) { out << "newer"; });
    CHECK(contents(path) == "newer");
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());
}

TEST_CASE("atomic_write: a failure leaves the old file as it was and names the file", "[atomic_file][errors]") {
    TempDir dir;
    const std::string path = dir.file("metrics.csv");
    atomic_write(path, "test", [](std::ostream& out) { out << "old"; });
    REQUIRE_THROWS_WITH(atomic_write(path, "test",
                                     [](std::ostream& out) {
                                         out << "partial";
                                         throw std::runtime_error("the writer failed");
                                     }),
                        "the writer failed");
    CHECK(contents(path) == "old");
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());

    const std::string nowhere = dir.file("no/such/dir/x");
    require_error(
        [&] { atomic_write(nowhere, "save_x", [](std::ostream& out) { out << "x"; }); },
        {"save_x", "cannot open '" + nowhere + ".", ".tmp' to write '" + nowhere, "No such file or directory"});
}

TEST_CASE("atomic_write: a disk that fills up mid-file leaves the old file and no temporary", "[atomic_file][errors]") {
    TempDir dir;
    const std::string path = dir.file("last.safetensors");
    atomic_write(path, "test", [](std::ostream& out) { out << "old"; });
    std::string message;
    {
        FileSizeLimit full(1000);  // the first 1,000 bytes of the 1 MB reach the disk, the rest not
        try {
            atomic_write(path, "save_checkpoint", [](std::ostream& out) { out << std::string(1 << 20, 'x'); });
        } catch (const std::runtime_error& e) {
            message = e.what();
        }
    }
    INFO(message);
    CHECK(message.find("save_checkpoint") != std::string::npos);
    CHECK(message.find("writing '" + path + ".") != std::string::npos);
    CHECK(message.find("File too large") != std::string::npos);
    CHECK(message.find("the old file is untouched") != std::string::npos);
    CHECK(contents(path) == "old");
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());
}

}  // namespace patchgrad
