// cifar10.h — CIFAR-10 in its binary layout: reading, writing, and finding the files.
//
// The binary version of CIFAR-10 (https://www.cs.toronto.edu/~kriz/cifar.html) is six files:
// data_batch_1.bin … data_batch_5.bin (50,000 training images) and test_batch.bin (10,000),
// each nothing but a sequence of 3,073-byte records
//
//   1 byte       the label, 0-9 (kCifar10ClassNames)
//   3 × 1,024    the red, green and blue planes, each 32 × 32 row-major
//
// so a record is a label followed by exactly one image of ImageSet::pixels [N, 3, 32, 32].
// The reader checks what can be checked (the file exists, its size is a positive multiple of
// 3,073, every label is 0-9) and says which file is wrong and what was expected. The writer
// makes the same files (the test fixtures are tiny ones), and synthetic_cifar10 makes
// learnable stand-in data for tests of the trainer.
//
// Where the files are: the --data flag, else $PATCHGRAD_DATA, else data/cifar-10-batches-bin
// (what datasets/scripts/download_cifar10.sh creates), resolved by resolve_data_dir.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "patchgrad/datasets/image_set.h"

namespace patchgrad {

constexpr int64_t kCifar10ImageBytes = 3 * 32 * 32;
constexpr int64_t kCifar10RecordBytes = 1 + kCifar10ImageBytes;
constexpr int64_t kCifar10RecordsPerFile = 10000;  // in each of the six official files
constexpr std::array<const char*, 10> kCifar10ClassNames = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                            "dog",      "frog",       "horse", "ship", "truck"};
constexpr std::array<const char*, 5> kCifar10TrainFiles = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                                           "data_batch_4.bin", "data_batch_5.bin"};
constexpr const char* kCifar10TestFile = "test_batch.bin";

// One file of records -> ImageSet [N, 3, 32, 32] with the CIFAR-10 class names. A missing
// or unreadable file, or anything but a regular file (a FIFO would block), throws
// std::runtime_error, a file that is not CIFAR-10 (wrong size, label out of range)
// std::invalid_argument; both name the path and what was expected. A file named like an
// official one (data_batch_3.bin) that holds other than 10,000 records is read, with one
// line "warning: <path> holds 9999 records; ..." to `warnings` if given: a file cut at a
// record boundary is otherwise indistinguishable from a small one.
ImageSet load_cifar10_file(const std::string& path, std::ostream* warnings = nullptr);
// The same reader on a file's bytes already in memory; `name` stands for the file in the
// messages (std::invalid_argument). The fuzz tests drive this one.
ImageSet parse_cifar10(const std::string& bytes, const std::string& name);
// The five training files in order (50,000 images), or test_batch.bin, from `dir`. `dir` may
// also be the folder that holds cifar-10-batches-bin/ (the download script's DEST_DIR).
ImageSet load_cifar10_train(const std::string& dir, std::ostream* warnings = nullptr);
ImageSet load_cifar10_test(const std::string& dir, std::ostream* warnings = nullptr);

// Writes `set` (images [3, 32, 32], labels 0-9) as CIFAR-10 records to a temporary file beside
// `path` and renames it over `path` once complete (atomic_write), so a failed write never
// leaves a partial file.
void save_cifar10_file(const std::string& path, const ImageSet& set);

// `count` images [3, 32, 32] with labels cycling 0..9 (so every class is equally common):
// each class a fixed colour with stripes (horizontal for even labels, vertical for odd)
// plus noise, so a model can learn them. The same seed gives the same bytes.
ImageSet synthetic_cifar10(int64_t count, uint64_t seed);
// The six files of a synthetic CIFAR-10 in `dir` (created if needed), `images_per_file` each.
void save_synthetic_cifar10(const std::string& dir, int64_t images_per_file, uint64_t seed);

// ---- where the data is ---------------------------------------------------------------
constexpr const char* kDataDirEnv = "PATCHGRAD_DATA";
constexpr const char* kDefaultDataDir = "data/cifar-10-batches-bin";  // relative to the cwd

struct DataDir {
    std::string path;
    std::string source;  // "--data", "PATCHGRAD_DATA" or "default": for the trainer's log line
};
// The flag's value if given (non-empty), else the environment value if set and non-empty,
// else kDefaultDataDir. Pure, so it is testable; `env_value` may be null.
DataDir resolve_data_dir(const std::string& flag_value, const char* env_value);
// The same with env_value = getenv("PATCHGRAD_DATA").
DataDir resolve_data_dir(const std::string& flag_value);

}  // namespace patchgrad
