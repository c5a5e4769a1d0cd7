#include "patchgrad/autograd/io/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace patchgrad {

namespace {

// The process id written in the lock file, 0 if there is none yet: the holder writes it just
// after taking the lock, so an empty file is read again for a moment.
long holder_of(int fd) {
    for (int attempt = 0; attempt < 50; ++attempt) {
        char text[32] = {};
        const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
        if (n > 0) {
            char* end = nullptr;
            const long pid = std::strtol(text, &end, 10);
            if (end != text && pid > 0) return pid;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
}

}  // namespace

FolderInUse::FolderInUse(const std::string& dir, long holder_pid)
    : std::runtime_error(dir + " is locked by " +
                         (holder_pid > 0 ? "process " + std::to_string(holder_pid) : std::string("another process"))),
      holder(holder_pid) {}

FolderLock::FolderLock(const std::string& dir) {
    const std::string path = (std::filesystem::path(dir) / kFileName).string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot open the lock file '" + path + "': " + std::strerror(errno));
    int result;
    do result = ::flock(fd_, LOCK_EX | LOCK_NB);
    while (result != 0 && errno == EINTR);
    if (result != 0) {
        const int error = errno;
        if (error == EWOULDBLOCK) {
            const long holder = holder_of(fd_);
            ::close(fd_);
            throw FolderInUse(dir, holder);
        }
        unavailable_ = "cannot lock '" + path + "': " + std::strerror(error);
        return;
    }
    // The id is for the message of a program refused; a failed write leaves the old one.
    const std::string id = std::to_string(static_cast<long>(::getpid())) + "\n";
    if (::pwrite(fd_, id.data(), id.size(), 0) == static_cast<ssize_t>(id.size()) &&
        ::ftruncate(fd_, static_cast<off_t>(id.size())) != 0) {
        // A longer old id may remain after ours: holder_of reads the first number only.
    }
}

FolderLock::~FolderLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace patchgrad
