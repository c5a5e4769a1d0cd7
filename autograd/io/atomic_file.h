// atomic_file.h — writing a file so that a crash or a full disk never leaves half of it.
//
// atomic_write(path, what, write) calls write(stream) on a temporary file beside `path`
// (temporary_path: path + ".<process id>-<serial>.tmp"), flushes it to the disk (fsync),
// renames it over `path` and syncs the directory, so the rename too survives a power cut: a
// reader, or a run resumed after a crash, sees the old file or the complete new one, never a
// part. The temporary name is unique to the writer, so two programs saving the same file never
// remove each other's temporary file: each rename is complete, the last one wins. The file is
// created exclusively and never through a symbolic link (O_EXCL | O_NOFOLLOW): whatever
// stands at its name (a symlink, a stale file of an earlier process of the same id) is
// unlinked first, so the save can never write into another file. On any failure the temporary file is
// removed, `path` is left as it was, and std::runtime_error names `what`, the file and the
// reason ("No space left on device"). Every file patchgrad writes (checkpoints, metrics,
// pictures, CIFAR-format files) goes through here.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace patchgrad {

void atomic_write(const std::string& path, const std::string& what, const std::function<void(std::ostream&)>& write);

// "runs/x/last.safetensors.4242-7.tmp": the temporary file of the `serial`-th atomic_write of
// process `pid` for `path`.
std::string temporary_path(const std::string& path, long pid, uint64_t serial);

// Whether `name` (a file name, no directory) is a temporary file of atomic_write for a file
// named `target`: "<target>.<digits>-<digits>.tmp".
bool is_temporary_name(const std::string& name, const std::string& target);

}  // namespace patchgrad
