// FolderLock: one holder per folder, named to whoever is refused, released with its file.
#include <unistd.h>

#include <memory>
#include <string>

#include "datasets/datasets_test_util.h"
#include "patchgrad/autograd/io/folder_lock.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

TEST_CASE("folder lock: a second lock is refused naming the holder, and free again once released",
          "[folder_lock][errors]") {
    TempDir dir;
    auto lock = std::make_unique<FolderLock>(dir.path.string());
    CHECK(lock->held());
    const std::string pid = std::to_string(::getpid());
    CHECK(read_bytes(dir.file(FolderLock::kFileName)) == pid + "\n");
    try {
        FolderLock second(dir.path.string());
        FAIL("a second lock was granted");
    } catch (const FolderInUse& e) {
        CHECK(e.holder == ::getpid());
        CHECK(std::string(e.what()) == dir.path.string() + " is locked by process " + pid);
    }
    lock.reset();
    FolderLock again(dir.path.string());
    CHECK(again.held());
    CHECK(std::filesystem::exists(dir.file(FolderLock::kFileName)));
}

TEST_CASE("folder lock: a folder that does not exist is refused naming the lock file", "[folder_lock][errors]") {
    TempDir dir;
    const std::string missing = dir.file("no/such/dir");
    require_error([&] { FolderLock lock(missing); },
                  {"cannot open the lock file '" + missing + "/.patchgrad.lock'", "No such file or directory"});
}

}  // namespace patchgrad
