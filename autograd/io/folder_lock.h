// folder_lock.h — one program at a time in a folder: an advisory lock on a file inside it.
//
// FolderLock(dir) opens dir/.patchgrad.lock (creating it), takes an exclusive flock() on it and
// writes its process id into it. The kernel releases the lock when the file is closed, which it
// also is when the process dies, however it dies: a crash never leaves the folder locked. Any
// other FolderLock on the same folder, in another process or in this one, throws FolderInUse
// with the holder's process id (read from the file). The file stays in the folder after the
// lock is released: removing it could let two programs lock two different files of one name.
#pragma once

#include <stdexcept>
#include <string>

namespace patchgrad {

struct FolderInUse : std::runtime_error {
    FolderInUse(const std::string& dir, long holder);
    long holder;  // the process id of the lock's holder; 0 if it had not written it yet
};

class FolderLock {
public:
    static constexpr const char* kFileName = ".patchgrad.lock";

    // Throws FolderInUse when another holds the lock, std::runtime_error naming the file when
    // it cannot be created. A file system that has no locks (some network ones) leaves the
    // lock not held(), with unavailable() saying why, rather than refusing to work there.
    explicit FolderLock(const std::string& dir);
    ~FolderLock();
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;

    bool held() const { return unavailable_.empty(); }
    const std::string& unavailable() const { return unavailable_; }

private:
    int fd_ = -1;
    std::string unavailable_;
};

}  // namespace patchgrad
