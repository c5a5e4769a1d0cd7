// Tests for datasets/cifar10.cpp. Files are written to a fresh temporary directory; the
// reader is checked against records assembled byte by byte here, not only against our writer.
#include "patchgrad/datasets/cifar10.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "catch.h"
#include "datasets_test_util.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;
namespace fs = std::filesystem;

// Record r of a hand-made file: label labels[r], pixel byte p of the 3,072 = (7 r + p) % 251.
std::string hand_records(const std::vector<int>& labels) {
    std::string bytes;
    for (size_t r = 0; r < labels.size(); ++r) {
        bytes += static_cast<char>(labels[r]);
        for (int p = 0; p < 3072; ++p) bytes += static_cast<char>((7 * r + p) % 251);
    }
    return bytes;
}

}  // namespace

TEST_CASE("datasets: cifar10 reader reads records assembled byte by byte", "[datasets][cifar10]") {
    TempDir dir;
    write_bytes(dir.file("data_batch_1.bin"), hand_records({3, 0, 9}));
    const ImageSet set = load_cifar10_file(dir.file("data_batch_1.bin"));
    REQUIRE(set.size() == 3);
    REQUIRE(set.channels == 3);
    REQUIRE(set.height == 32);
    REQUIRE(set.width == 32);
    REQUIRE(set.labels == std::vector<int64_t>{3, 0, 9});
    REQUIRE(set.pixels.size() == 3 * 3072);
    REQUIRE(set.class_names.size() == 10);
    CHECK(set.class_names[0] == "airplane");
    CHECK(set.class_names[3] == "cat");
    CHECK(set.class_names[9] == "truck");
    // Red plane first, then green, then blue, each row-major: (c, y, x) is byte c*1024 + y*32 + x.
    ImageSet copy = set;
    for (int64_t r = 0; r < 3; ++r)
        for (auto [c, y, x] : {std::array<int64_t, 3>{0, 0, 0}, {0, 0, 31}, {0, 1, 0}, {1, 5, 7}, {2, 31, 31}}) {
            INFO("record " << r << " pixel " << c << "," << y << "," << x);
            REQUIRE(copy.view(r).at(c, y, x) == (7 * r + c * 1024 + y * 32 + x) % 251);
        }
}

TEST_CASE("datasets: cifar10 writer writes the binary layout atomically and reloads", "[datasets][cifar10]") {
    TempDir dir;
    write_bytes(dir.file("hand.bin"), hand_records({1, 8, 2, 2}));
    const ImageSet set = load_cifar10_file(dir.file("hand.bin"));
    save_cifar10_file(dir.file("copy.bin"), set);
    REQUIRE(read_bytes(dir.file("copy.bin")) == hand_records({1, 8, 2, 2}));
    REQUIRE(files_ending_in(dir.path.string(), ".tmp").empty());

    const ImageSet synthetic = synthetic_cifar10(13, 5);
    save_cifar10_file(dir.file("synthetic.bin"), synthetic);
    REQUIRE(fs::file_size(dir.file("synthetic.bin")) == 13 * 3073);
    const ImageSet back = load_cifar10_file(dir.file("synthetic.bin"));
    REQUIRE(back.labels == synthetic.labels);
    REQUIRE(back.pixels == synthetic.pixels);
    // An existing file is replaced whole.
    save_cifar10_file(dir.file("synthetic.bin"), synthetic.subset({0, 1}));
    REQUIRE(load_cifar10_file(dir.file("synthetic.bin")).size() == 2);
}

TEST_CASE("datasets: cifar10 training and test sets from a directory", "[datasets][cifar10]") {
    TempDir dir;
    const std::string files = dir.file("cifar-10-batches-bin");
    save_synthetic_cifar10(files, 4, 11);
    const ImageSet train = load_cifar10_train(files);
    const ImageSet test = load_cifar10_test(files);
    REQUIRE(train.size() == 20);
    REQUIRE(test.size() == 4);
    // The five files in order: data_batch_3's images are images 8..11 of the training set.
    const ImageSet third = load_cifar10_file(files + "/data_batch_3.bin");
    REQUIRE(train.subset({8, 9, 10, 11}).pixels == third.pixels);
    REQUIRE(train.subset({8, 9, 10, 11}).labels == third.labels);
    REQUIRE(test.pixels == load_cifar10_file(files + "/test_batch.bin").pixels);
    REQUIRE(train.pixels != std::vector<uint8_t>(train.pixels.size(), train.pixels[0]));

    // The folder holding cifar-10-batches-bin/ (the download script's DEST_DIR) works too.
    REQUIRE(load_cifar10_train(dir.path.string()).pixels == train.pixels);
    REQUIRE(load_cifar10_test(dir.path.string()).labels == test.labels);
}

TEST_CASE("datasets: cifar10 missing files name the path and the way out", "[datasets][cifar10][errors]") {
    TempDir dir;
    save_cifar10_file(dir.file("data_batch_1.bin"), synthetic_cifar10(2, 1));
    save_cifar10_file(dir.file("data_batch_2.bin"), synthetic_cifar10(2, 2));
    require_error([&] { load_cifar10_train(dir.path.string()); },
                  {"cifar10: missing", dir.file("data_batch_3.bin"), "datasets/scripts/download_cifar10.sh", "--data",
                   "PATCHGRAD_DATA"});
    require_error([&] { load_cifar10_test(dir.path.string()); }, {"missing", dir.file("test_batch.bin")});
    const std::string nowhere = dir.file("no/such/dir");
    require_error([&] { load_cifar10_train(nowhere); },
                  {"missing", "data_batch_1.bin", "directory " + nowhere + " does not exist"});
    require_error([&] { load_cifar10_file(dir.path.string()); }, {dir.path.string(), "not a regular file"});
    REQUIRE(mkfifo(dir.file("test_batch.bin").c_str(), 0600) == 0);
    require_error([&] { load_cifar10_test(dir.path.string()); },
                  {"cifar10: " + dir.file("test_batch.bin"), "is a FIFO (named pipe), not a regular file"});
}

// A file cut at a record boundary is a valid file of fewer records, and training would go on
// with 44,999 images without a word: a file named like an official one says so.
TEST_CASE("datasets: cifar10 warns when an official file does not hold 10,000 records", "[datasets][cifar10]") {
    TempDir dir;
    save_synthetic_cifar10(dir.path.string(), 3, 4);
    std::ostringstream warnings;
    CHECK(load_cifar10_train(dir.path.string(), &warnings).size() == 15);
    std::string expected;
    for (const char* name : kCifar10TrainFiles)
        expected += "warning: " + dir.file(name) + " holds 3 records; the official CIFAR-10 file has 10000\n";
    CHECK(warnings.str() == expected);

    // Other names may hold any number (fixtures, subsets); no stream, no warning.
    std::ostringstream quiet;
    save_cifar10_file(dir.file("subset.bin"), synthetic_cifar10(3, 1));
    CHECK(load_cifar10_file(dir.file("subset.bin"), &quiet).size() == 3);
    CHECK(load_cifar10_test(dir.path.string()).size() == 3);
    CHECK(quiet.str().empty());
}

TEST_CASE("datasets: cifar10 bytes in memory read exactly like the file, errors naming them", "[datasets][cifar10]") {
    TempDir dir;
    write_bytes(dir.file("hand.bin"), hand_records({3, 0, 9}));
    const ImageSet from_file = load_cifar10_file(dir.file("hand.bin"));
    const ImageSet from_bytes = parse_cifar10(hand_records({3, 0, 9}), "download");
    CHECK(from_bytes.labels == from_file.labels);
    CHECK(from_bytes.pixels == from_file.pixels);
    CHECK(from_bytes.class_names == from_file.class_names);
    require_error(
        [] {
            parse_cifar10(hand_records({1, 2}).substr(0, 6145), "download");
        },
        {"cifar10: download", "6145 bytes"});
    require_error([] { parse_cifar10(std::string("\x80\x02") + std::string(3071, 'x'), "download"); },
                  {"cifar10: download", "label 128", "pickle"});
}

// A few thousand inputs a few mutations away from valid files (tests/fuzz/fuzz_cifar10.cpp
// runs the same reader under libFuzzer).
TEST_CASE("datasets: cifar10 fuzzed files load or are refused naming the file, nothing else",
          "[datasets][cifar10][fuzz]") {
    const std::vector<std::string> seeds = {hand_records({3, 0, 9}), hand_records({7})};
    const int64_t loaded = fuzz<std::invalid_argument>(
        seeds, 3000, 30, [](const std::string& bytes, const std::string& name) { parse_cifar10(bytes, name); });
    CHECK(loaded > 0);
    CHECK(loaded < 3000);
}

TEST_CASE("datasets: cifar10 truncated, empty and foreign files", "[datasets][cifar10][errors]") {
    TempDir dir;
    // 1,000 images without their label bytes: not a whole number of records.
    write_bytes(dir.file("data_batch_3.bin"), std::string(3072000, '\0'));
    require_error(
        [&] { load_cifar10_file(dir.file("data_batch_3.bin")); },
        {"cifar10: " + dir.file("data_batch_3.bin"), "has 3072000 bytes", "not a multiple of the 3073-byte record"});
    write_bytes(dir.file("cut.bin"), hand_records({1, 2}).substr(0, 6145));
    require_error([&] { load_cifar10_file(dir.file("cut.bin")); }, {"6145 bytes", "3073"});

    write_bytes(dir.file("empty.bin"), "");
    require_error([&] { load_cifar10_file(dir.file("empty.bin")); }, {dir.file("empty.bin"), "is empty"});

    // CIFAR-100's binary layout has a coarse and a fine label byte: 3,074-byte records.
    write_bytes(dir.file("cifar100.bin"), std::string(2 * 3074, '\1'));
    require_error([&] { load_cifar10_file(dir.file("cifar100.bin")); }, {"6148 bytes", "CIFAR-100"});
    // The archive itself, not extracted.
    write_bytes(dir.file("archive.bin"), std::string("\x1f\x8b\x08") + std::string(5000, 'x'));
    require_error([&] { load_cifar10_file(dir.file("archive.bin")); }, {"archive.bin", "gzip"});
    // A Python pickle (the "python version" of CIFAR-10) of a record-multiple size.
    write_bytes(dir.file("pickle.bin"), std::string("\x80\x02") + std::string(3071, 'x'));
    require_error([&] { load_cifar10_file(dir.file("pickle.bin")); }, {"label 128 at record 0", "pickle"});
}

TEST_CASE("datasets: cifar10 label out of range names the record", "[datasets][cifar10][errors]") {
    TempDir dir;
    write_bytes(dir.file("bad.bin"), hand_records({0, 1, 2, 3, 4, 12, 6}));
    require_error([&] { load_cifar10_file(dir.file("bad.bin")); },
                  {"cifar10: " + dir.file("bad.bin"), "label 12 at record 5", "byte 15365", "expected 0-9"});
}

TEST_CASE("datasets: cifar10 writer rejects what CIFAR-10 cannot hold", "[datasets][cifar10][errors]") {
    TempDir dir;
    ImageSet grey = random_images(2, 1, 32, 32, 10, 3);
    require_error([&] { save_cifar10_file(dir.file("g.bin"), grey); },
                  {"save_cifar10_file", dir.file("g.bin"), "[1, 32, 32]", "[3, 32, 32]"});
    ImageSet eleven = random_images(12, 3, 32, 32, 12, 3);
    require_error([&] { save_cifar10_file(dir.file("e.bin"), eleven); }, {"label 10 of image 10", "expected 0-9"});
    ImageSet short_pixels = synthetic_cifar10(2, 1);
    short_pixels.pixels.pop_back();
    require_error([&] { save_cifar10_file(dir.file("s.bin"), short_pixels); },
                  {"6143 pixel bytes for 2 labels", "6144"});
    const std::string unwritable = dir.file("no/such/dir/x.bin");
    require_error([&] { save_cifar10_file(unwritable, synthetic_cifar10(1, 1)); },
                  {"cannot open '" + unwritable + "."});
    REQUIRE(fs::is_empty(dir.path));
}

TEST_CASE("datasets: synthetic CIFAR-10 is seeded, balanced and learnable", "[datasets][cifar10]") {
    const ImageSet a = synthetic_cifar10(40, 9);
    REQUIRE(a.size() == 40);
    REQUIRE(a.class_counts() == std::vector<int64_t>(10, 4));
    REQUIRE(synthetic_cifar10(40, 9).pixels == a.pixels);
    REQUIRE(synthetic_cifar10(40, 10).pixels != a.pixels);
    // Class 0 is reddish and class 2 bluish: the mean colour tells them apart.
    const auto mean = [&](int64_t image, int64_t c) {
        double s = 0;
        for (int64_t p = 0; p < 1024; ++p) s += a.image(image)[c * 1024 + p];
        return s / 1024;
    };
    CHECK(mean(0, 0) > mean(0, 2) + 100);
    CHECK(mean(2, 2) > mean(2, 0) + 100);
    require_error([] { synthetic_cifar10(-1, 0); }, {"synthetic_cifar10", "-1"});
}

TEST_CASE("datasets: data directory is the flag, else PATCHGRAD_DATA, else the default", "[datasets][cifar10]") {
    CHECK(resolve_data_dir("/flag", "/env").path == "/flag");
    CHECK(resolve_data_dir("/flag", "/env").source == "--data");
    CHECK(resolve_data_dir("/flag", nullptr).path == "/flag");
    CHECK(resolve_data_dir("", "/env").path == "/env");
    CHECK(resolve_data_dir("", "/env").source == "PATCHGRAD_DATA");
    CHECK(resolve_data_dir("", "").path == "data/cifar-10-batches-bin");
    CHECK(resolve_data_dir("", nullptr).path == "data/cifar-10-batches-bin");
    CHECK(resolve_data_dir("", nullptr).source == "default");
    // The wrapper reads the real environment; a flag wins whatever it holds.
    CHECK(resolve_data_dir("").path == resolve_data_dir("", std::getenv("PATCHGRAD_DATA")).path);
    CHECK(resolve_data_dir("/flag").path == "/flag");
}

}  // namespace patchgrad
