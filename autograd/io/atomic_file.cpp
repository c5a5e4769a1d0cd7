#include "patchgrad/autograd/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <streambuf>

namespace patchgrad {

namespace {

std::string reason(int error) { return std::strerror(error); }

// A std::ostream's buffer over a POSIX file descriptor: std::ofstream cannot open a file with
// O_EXCL | O_NOFOLLOW. Remembers the first write error.
class FileDescriptorBuffer : public std::streambuf {
public:
    explicit FileDescriptorBuffer(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof buffer_); }
    int error() const { return error_; }

protected:
    int_type overflow(int_type c) override {
        if (!drain()) return traits_type::eof();
        if (c != traits_type::eof()) {
            *pptr() = static_cast<char>(c);
            pbump(1);
        }
        return traits_type::not_eof(c);
    }
    int sync() override { return drain() ? 0 : -1; }

private:
    bool drain() {
        for (const char* p = pbase(); p < pptr();) {
            const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                if (!error_) error_ = n < 0 ? errno : EIO;
                return false;
            }
            p += n;
        }
        setp(buffer_, buffer_ + sizeof buffer_);
        return true;
    }

    int fd_;
    int error_ = 0;
    char buffer_[1 << 16];
};

}  // namespace

std::string temporary_path(const std::string& path, long pid, uint64_t serial) {
    return path + "." + std::to_string(pid) + "-" + std::to_string(serial) + ".tmp";
}

bool is_temporary_name(const std::string& name, const std::string& target) {
    const std::string suffix = ".tmp";
    if (name.size() < target.size() + 4 + suffix.size() || name.compare(0, target.size(), target) != 0 ||
        name[target.size()] != '.' || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        return false;
    const std::string middle = name.substr(target.size() + 1, name.size() - target.size() - 1 - suffix.size());
    const size_t dash = middle.find('-');
    const auto digits = [](const std::string& s) {
        return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
    };
    return dash != std::string::npos && digits(middle.substr(0, dash)) && digits(middle.substr(dash + 1));
}

void atomic_write(const std::string& path, const std::string& what, const std::function<void(std::ostream&)>& write) {
    static std::atomic<uint64_t> serial{0};
    const std::string tmp = temporary_path(path, static_cast<long>(::getpid()), ++serial);
    ::unlink(tmp.c_str());  // a symlink, or a file of an earlier process of this id: the link goes, never its target
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        throw std::runtime_error(what + ": cannot open '" + tmp + "' to write '" + path + "': " + reason(errno));
    int error = 0;
    try {
        FileDescriptorBuffer buffer(fd);
        std::ostream out(&buffer);
        write(out);
        out.flush();
        error = buffer.error();
        if (!error && !out) error = EIO;
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    if (!error && ::fsync(fd) != 0) error = errno;
    if (::close(fd) != 0 && !error) error = errno;
    if (error) {
        ::unlink(tmp.c_str());
        throw std::runtime_error(what + ": writing '" + tmp + "' for '" + path + "' failed: " + reason(error) +
                                 " (the old file is untouched)");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        error = errno;
        ::unlink(tmp.c_str());
        throw std::runtime_error(what + ": cannot rename '" + tmp + "' to '" + path + "': " + reason(error));
    }
    // The rename is an entry in the directory, which a power cut can still lose until the
    // directory itself reaches the disk. Errors are ignored: the new file is in place, and some
    // file systems refuse to sync a directory (EINVAL), which leaves it as durable as they make it.
    const std::string parent = std::filesystem::path(path).parent_path().string();
    const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
}

}  // namespace patchgrad
