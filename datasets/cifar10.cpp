// cifar10.cpp — the CIFAR-10 binary reader and writer, synthetic stand-in data, and the
// data directory lookup.
#include "patchgrad/datasets/cifar10.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "patchgrad/autograd/io/atomic_file.h"
#include "patchgrad/autograd/io/files.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/datasets/batcher.h"

namespace patchgrad {

namespace fs = std::filesystem;

namespace {

const char* const kMissingHint =
    "run datasets/scripts/download_cifar10.sh, or pass --data DIR / set PATCHGRAD_DATA to a directory "
    "holding data_batch_1..5.bin and test_batch.bin";

// What a wrong file probably is, from its size and first bytes, for the error message.
std::string foreign_hint(uintmax_t bytes, const std::string& head) {
    if (head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x1f && static_cast<uint8_t>(head[1]) == 0x8b)
        return " (it is gzip-compressed: extract the .tar.gz first, e.g. with datasets/scripts/download_cifar10.sh)";
    if (!head.empty() && static_cast<uint8_t>(head[0]) == 0x80)
        return " (it looks like a Python pickle: the 'python version' of CIFAR-10, not the binary one)";
    if (bytes > 0 && bytes % (kCifar10RecordBytes + 1) == 0)
        return " (it is a multiple of 3074 bytes: CIFAR-100's binary layout, with two label bytes?)";
    return "";
}

// The first two bytes of the file (for foreign_hint), read only on the way to an error.
std::string read_head(std::istream& in) {
    in.clear();
    in.seekg(0);
    char head[2] = {0, 0};
    in.read(head, 2);
    return std::string(head, static_cast<size_t>(in.gcount()));
}

// Appends the records in `in`, `bytes` long, to `set` (already holding the CIFAR-10 class
// names); `path` names the file in messages.
void append_cifar10_records(std::istream& in, uintmax_t bytes, const std::string& path, ImageSet& set) {
    if (bytes == 0)
        throw std::invalid_argument("cifar10: " + path +
                                    " is empty; expected 3073-byte records (10,000 in an official file)");
    if (bytes % kCifar10RecordBytes != 0)
        throw std::invalid_argument("cifar10: " + path + " has " + std::to_string(bytes) +
                                    " bytes, not a multiple of the 3073-byte record (truncated, or not a CIFAR-10 "
                                    "binary file)" +
                                    foreign_hint(bytes, read_head(in)));

    // Straight into the set's storage through a small reused buffer: fresh memory is paid for
    // by page faults, which on some machines cost more than reading the file, so the 150 MiB
    // of pixels are the only large allocation.
    const int64_t records = static_cast<int64_t>(bytes / kCifar10RecordBytes);
    const int64_t first = set.size();
    set.labels.resize(first + records);
    set.pixels.resize((first + records) * kCifar10ImageBytes);
    constexpr int64_t kChunkRecords = 256;
    std::vector<uint8_t> chunk(std::min(records, kChunkRecords) * kCifar10RecordBytes);
    for (int64_t begin = 0; begin < records; begin += kChunkRecords) {
        const int64_t n = std::min(kChunkRecords, records - begin);
        in.read(reinterpret_cast<char*>(chunk.data()), n * kCifar10RecordBytes);
        check<std::runtime_error>(in && in.gcount() == n * kCifar10RecordBytes, "cifar10: could not read all ", bytes,
                                  " bytes of ", path);
        for (int64_t k = 0; k < n; ++k) {
            const uint8_t* record = chunk.data() + k * kCifar10RecordBytes;
            const int64_t r = begin + k;
            if (record[0] >= kCifar10ClassNames.size())
                throw std::invalid_argument(
                    "cifar10: " + path + ": label " + std::to_string(record[0]) + " at record " + std::to_string(r) +
                    " (byte " + std::to_string(r * kCifar10RecordBytes) + ") is not a CIFAR-10 class; expected 0-9" +
                    foreign_hint(bytes, read_head(in)));
            set.labels[first + r] = record[0];
            std::memcpy(set.pixels.data() + (first + r) * kCifar10ImageBytes, record + 1, kCifar10ImageBytes);
        }
    }
}

bool is_official_file_name(const std::string& name) {
    return name == kCifar10TestFile ||
           std::find(kCifar10TrainFiles.begin(), kCifar10TrainFiles.end(), name) != kCifar10TrainFiles.end();
}

// Appends the records of one file to `set` (already holding the CIFAR-10 class names).
void append_cifar10_file(const std::string& path, ImageSet& set, std::ostream* warnings) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        const fs::path parent = fs::path(path).parent_path();
        const std::string where = parent.empty() || fs::is_directory(parent, ec) ? ""
                                  : fs::exists(parent, ec) ? " (" + parent.string() + " is a file, not a directory)"
                                                           : " (directory " + parent.string() + " does not exist)";
        throw std::runtime_error("cifar10: missing " + path + where + "; " + kMissingHint);
    }
    const std::string not_regular = not_a_regular_file(path);
    check<std::runtime_error>(not_regular.empty(), "cifar10: ", path, ": ", not_regular,
                              "; expected a CIFAR-10 .bin file");
    const uintmax_t bytes = fs::file_size(path, ec);
    if (ec) throw std::runtime_error("cifar10: cannot read the size of " + path + ": " + ec.message());
    std::ifstream in(path, std::ios::binary);
    check<std::runtime_error>(!in.fail(), "cifar10: cannot open ", path, " for reading");
    const int64_t before = set.size();
    append_cifar10_records(in, bytes, path, set);
    // A file cut at a record boundary is still a valid file; say so rather than train on
    // 44,999 images without a word. Files under other names (test fixtures, subsets) may
    // hold any number of records.
    const int64_t records = set.size() - before;
    if (warnings && records != kCifar10RecordsPerFile && is_official_file_name(fs::path(path).filename().string()))
        *warnings << "warning: " << path << " holds " << records << " records; the official CIFAR-10 file has "
                  << kCifar10RecordsPerFile << "\n";
}

ImageSet empty_cifar10() {
    ImageSet set;
    set.class_names.assign(kCifar10ClassNames.begin(), kCifar10ClassNames.end());
    return set;
}

// `dir`, or dir/cifar-10-batches-bin when the files are there instead (the user pointed at
// the download script's DEST_DIR rather than at the extracted folder).
fs::path files_dir(const std::string& dir) {
    const fs::path d(dir);
    const fs::path nested = d / "cifar-10-batches-bin";
    std::error_code ec;
    if (!fs::exists(d / kCifar10TestFile, ec) && !fs::exists(d / kCifar10TrainFiles[0], ec) &&
        fs::is_directory(nested, ec))
        return nested;
    return d;
}

}  // namespace

ImageSet load_cifar10_file(const std::string& path, std::ostream* warnings) {
    ImageSet set = empty_cifar10();
    append_cifar10_file(path, set, warnings);
    return set;
}

ImageSet parse_cifar10(const std::string& bytes, const std::string& name) {
    ImageSet set = empty_cifar10();
    std::istringstream in(bytes);
    append_cifar10_records(in, bytes.size(), name, set);
    return set;
}

ImageSet load_cifar10_train(const std::string& dir, std::ostream* warnings) {
    const fs::path d = files_dir(dir);
    ImageSet set = empty_cifar10();
    set.labels.reserve(50000);
    set.pixels.reserve(50000 * kCifar10ImageBytes);
    for (const char* name : kCifar10TrainFiles) append_cifar10_file((d / name).string(), set, warnings);
    return set;
}

ImageSet load_cifar10_test(const std::string& dir, std::ostream* warnings) {
    return load_cifar10_file((files_dir(dir) / kCifar10TestFile).string(), warnings);
}

void save_cifar10_file(const std::string& path, const ImageSet& set) {
    const std::string where = "save_cifar10_file: " + path;
    check_image_shape(set, {3, 32, 32}, where, "CIFAR-10 records hold");
    check(set.pixels.size() == set.labels.size() * kCifar10ImageBytes, where, ": ", set.pixels.size(),
          " pixel bytes for ", set.labels.size(), " labels; expected ", set.labels.size() * kCifar10ImageBytes);
    for (int64_t i = 0; i < set.size(); ++i)
        check(set.labels[i] >= 0 && set.labels[i] <= 9, where, ": label ", set.labels[i], " of image ", i,
              " does not fit CIFAR-10; expected 0-9");

    atomic_write(path, "save_cifar10_file", [&](std::ostream& out) {
        for (int64_t i = 0; i < set.size(); ++i) {
            out.put(static_cast<char>(set.labels[i]));
            out.write(reinterpret_cast<const char*>(set.image(i)), kCifar10ImageBytes);
        }
    });
}

ImageSet synthetic_cifar10(int64_t count, uint64_t seed) {
    check(count >= 0, "synthetic_cifar10: count ", count, " must be >= 0");
    // One colour per class, far enough apart that the mean colour alone separates most.
    static constexpr uint8_t kColours[10][3] = {{200, 60, 60},  {60, 200, 60},  {60, 60, 200},   {200, 200, 60},
                                                {200, 60, 200}, {60, 200, 200}, {150, 150, 150}, {230, 140, 40},
                                                {40, 140, 230}, {100, 40, 100}};
    ImageSet set = empty_cifar10();
    set.labels.resize(count);
    set.pixels.resize(count * kCifar10ImageBytes);
    Rng rng(seed);
    for (int64_t i = 0; i < count; ++i) {
        const int64_t label = i % 10;
        set.labels[i] = label;
        ImageView img = set.view(i);
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t y = 0; y < 32; ++y)
                for (int64_t x = 0; x < 32; ++x) {
                    const int64_t along = label % 2 == 0 ? y : x;
                    const int64_t stripe = (along / 4) % 2 == 0 ? 30 : -30;
                    const int64_t noise = static_cast<int64_t>(rng.below(41)) - 20;
                    img.at(c, y, x) =
                        static_cast<uint8_t>(std::clamp<int64_t>(kColours[label][c] + stripe + noise, 0, 255));
                }
    }
    return set;
}

void save_synthetic_cifar10(const std::string& dir, int64_t images_per_file, uint64_t seed) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error("save_synthetic_cifar10: cannot create directory " + dir + ": " + ec.message());
    uint64_t file = 0;
    for (const char* name : kCifar10TrainFiles)
        save_cifar10_file((fs::path(dir) / name).string(),
                          synthetic_cifar10(images_per_file, derive_seed(seed, {file++})));
    save_cifar10_file((fs::path(dir) / kCifar10TestFile).string(),
                      synthetic_cifar10(images_per_file, derive_seed(seed, {file})));
}

DataDir resolve_data_dir(const std::string& flag_value, const char* env_value) {
    if (!flag_value.empty()) return {flag_value, "--data"};
    if (env_value != nullptr && env_value[0] != '\0') return {env_value, kDataDirEnv};
    return {kDefaultDataDir, "default"};
}

DataDir resolve_data_dir(const std::string& flag_value) {
    return resolve_data_dir(flag_value, std::getenv(kDataDirEnv));
}

}  // namespace patchgrad
