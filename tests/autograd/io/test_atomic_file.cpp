// atomic_write: the old file or the complete new one, never a part, and never a write through
// whatever stands at the temporary name.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "autograd/io/atomic_file.h"
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
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

// A symlinked last.safetensors.tmp made a save overwrite the symlink's target.
TEST_CASE("atomic_write: a symlink or a stale file at the temporary name is never written through",
          "[atomic_file][errors]") {
    TempDir dir;
    const std::string victim = dir.file("victim.txt"), path = dir.file("ckpt");
    { std::ofstream(victim) << "precious"; }
    std::filesystem::create_symlink(victim, path + ".tmp");
    atomic_write(path, "test", [](std::ostream& out) { out << "new"; });
    CHECK(contents(victim) == "precious");
    CHECK(contents(path) == "new");
    CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(path)));

    {
        std::ofstream(path + ".tmp") << "half of an older save";  // a killed run's temporary file
    }
    atomic_write(path, "test", [](std::ostream& out) { out << "newer"; });
    CHECK(contents(path) == "newer");
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
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

    const std::string nowhere = dir.file("no/such/dir/x");
    require_error([&] { atomic_write(nowhere, "save_x", [](std::ostream& out) { out << "x"; }); },
                  {"save_x", "cannot open", nowhere + ".tmp", "No such file or directory"});
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
    CHECK(message.find(path + ".tmp") != std::string::npos);
    CHECK(message.find("File too large") != std::string::npos);
    CHECK(message.find("the old file is untouched") != std::string::npos);
    CHECK(contents(path) == "old");
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

}  // namespace patchgrad
