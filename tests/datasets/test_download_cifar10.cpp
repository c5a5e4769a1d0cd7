// Tests for datasets/download_cifar10.sh, run through bash against a file:// URL of a tiny
// generated archive: never the real URL, no network. Needs bash, curl, tar, gzip and
// md5sum; without them the test says so with a warning rather than passing silently.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "catch.h"
#include "datasets/cifar10.h"
#include "datasets_test_util.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;
namespace fs = std::filesystem;

const fs::path kScript = fs::path(PATCHGRAD_TEST_DATA).parent_path().parent_path() / "datasets" / "download_cifar10.sh";

struct Run {
    int exit_code;
    std::string output;
};

// Runs the script with `dest` as DEST_DIR, the archive `url` and the expected `md5`; the
// fixture's .bin files hold 2 records (6,146 bytes) each.
Run run_script(const TempDir& tmp, const std::string& dest, const std::string& url, const std::string& md5) {
    const std::string log = tmp.file("log.txt"), rc = tmp.file("rc.txt");
    const std::string command = "PATCHGRAD_CIFAR_URL='" + url + "' PATCHGRAD_CIFAR_MD5='" + md5 +
                                "' PATCHGRAD_CIFAR_BIN_BYTES=6146 bash '" + kScript.string() + "' '" + dest + "' >'" +
                                log + "' 2>&1; echo $? >'" + rc + "'";
    REQUIRE(std::system(command.c_str()) == 0);
    return {std::stoi(read_bytes(rc)), read_bytes(log)};
}

bool tools_available() {
    return std::system(
               "{ command -v bash && command -v curl && command -v tar && command -v gzip && command -v md5sum; } "
               ">/dev/null 2>&1") == 0;
}

}  // namespace

TEST_CASE("datasets: download_cifar10.sh fetches, verifies, extracts, and is idempotent", "[datasets][download]") {
    REQUIRE(fs::exists(kScript));
    if (!tools_available()) {
        WARN("download_cifar10.sh test SKIPPED: needs bash, curl, tar, gzip and md5sum on the PATH");
        return;
    }
    TempDir tmp;
    // The archive: cifar-10-batches-bin/ with the six files, like the official one.
    save_synthetic_cifar10(tmp.file("src/cifar-10-batches-bin"), 2, 21);
    const std::string archive = tmp.file("cifar-10-binary.tar.gz");
    REQUIRE(std::system(("tar -czf '" + archive + "' -C '" + tmp.file("src") + "' cifar-10-batches-bin").c_str()) == 0);
    REQUIRE(std::system(("md5sum '" + archive + "' >'" + tmp.file("md5.txt") + "'").c_str()) == 0);
    const std::string md5 = read_bytes(tmp.file("md5.txt")).substr(0, 32);
    const std::string url = "file://" + archive;
    const ImageSet expected_train = load_cifar10_train(tmp.file("src/cifar-10-batches-bin"));
    const ImageSet expected_test = load_cifar10_test(tmp.file("src/cifar-10-batches-bin"));

    SECTION("fresh download, then a second run that touches nothing") {
        const std::string dest = tmp.file("data");
        Run first = run_script(tmp, dest, url, md5);
        INFO(first.output);
        REQUIRE(first.exit_code == 0);
        REQUIRE(load_cifar10_train(dest + "/cifar-10-batches-bin").pixels == expected_train.pixels);
        REQUIRE(load_cifar10_test(dest).labels == expected_test.labels);
        // Only the extracted folder remains: no archive, no temporary directory.
        int entries = 0;
        for (const auto& e : fs::directory_iterator(dest))
            entries += e.path().filename() == "cifar-10-batches-bin" ? 1 : 100;
        REQUIRE(entries == 1);

        // The second run finds everything and does not download: even with the archive gone.
        fs::remove(archive);
        Run second = run_script(tmp, dest, url, md5);
        INFO(second.output);
        REQUIRE(second.exit_code == 0);
        REQUIRE(second.output.find("already present") != std::string::npos);
        REQUIRE(second.output.find("downloading") == std::string::npos);
    }

    SECTION("a truncated file in place is replaced by a fresh extraction") {
        const std::string dest = tmp.file("data");
        REQUIRE(run_script(tmp, dest, url, md5).exit_code == 0);
        write_bytes(dest + "/cifar-10-batches-bin/data_batch_4.bin", "cut");
        Run again = run_script(tmp, dest, url, md5);
        INFO(again.output);
        REQUIRE(again.exit_code == 0);
        REQUIRE(load_cifar10_train(dest).pixels == expected_train.pixels);
    }

    SECTION("checksum mismatch: non-zero exit and nothing left behind") {
        const std::string dest = tmp.file("fresh");
        Run bad = run_script(tmp, dest, url, std::string(32, '0'));
        INFO(bad.output);
        REQUIRE(bad.exit_code != 0);
        REQUIRE(bad.output.find("MD5") != std::string::npos);
        REQUIRE(bad.output.find(md5) != std::string::npos);
        REQUIRE_FALSE(fs::exists(dest));
        // Into an existing directory: it stays, empty.
        fs::create_directories(tmp.file("existing"));
        REQUIRE(run_script(tmp, tmp.file("existing"), url, std::string(32, '0')).exit_code != 0);
        REQUIRE(fs::is_empty(tmp.file("existing")));
    }

    SECTION("an interrupted download resumes from its .part file") {
        const std::string dest = tmp.file("resume");
        fs::create_directories(dest);
        write_bytes(dest + "/cifar-10-binary.tar.gz.part", read_bytes(archive).substr(0, 100));
        Run resumed = run_script(tmp, dest, url, md5);
        INFO(resumed.output);
        REQUIRE(resumed.exit_code == 0);
        REQUIRE(load_cifar10_train(dest).pixels == expected_train.pixels);
        REQUIRE_FALSE(fs::exists(dest + "/cifar-10-binary.tar.gz.part"));
    }

    SECTION("an unreachable URL fails with a message and leaves no directory") {
        const std::string dest = tmp.file("nothing");
        Run failed = run_script(tmp, dest, "file://" + tmp.file("no-such-archive.tar.gz"), md5);
        INFO(failed.output);
        REQUIRE(failed.exit_code != 0);
        REQUIRE(failed.output.find("download of file://") != std::string::npos);
        REQUIRE_FALSE(fs::exists(dest));
    }
}

}  // namespace patchgrad
