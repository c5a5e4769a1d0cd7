// atomic_file.h — writing a file so that a crash or a full disk never leaves half of it.
//
// atomic_write(path, what, write) calls write(stream) on a temporary file beside `path`
// (path + ".tmp"), flushes it to the disk (fsync), renames it over `path` and syncs the
// directory, so the rename too survives a power cut: a reader, or a run resumed after a
// crash, sees the old file or the complete new one, never a part. The temporary file is
// created exclusively and never through a symbolic link (O_EXCL | O_NOFOLLOW): whatever
// stands at its name (a stale temporary file of a killed run, or a symlink) is unlinked
// first, so the save can never write into another file. On any failure the temporary file is
// removed, `path` is left as it was, and std::runtime_error names `what`, the file and the
// reason ("No space left on device"). Every file patchgrad writes (checkpoints, metrics,
// pictures, CIFAR-format files) goes through here.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace patchgrad {

void atomic_write(const std::string& path, const std::string& what, const std::function<void(std::ostream&)>& write);

}  // namespace patchgrad
