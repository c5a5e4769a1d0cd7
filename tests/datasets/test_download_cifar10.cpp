// Tests for datasets/scripts/download_cifar10.sh, run through bash against a file:// URL of a tiny
// generated archive: never the real URL, no network. They need bash, curl, tar, gzip and one
// MD5 tool (md5sum, macOS's md5, or openssl) and fail, naming what is missing, without them:
// a script that cannot check its download must not hide behind a green suite.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.h"
#include "datasets_test_util.h"
#include "patchgrad/datasets/cifar10.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;
namespace fs = std::filesystem;

const fs::path kScript =
    fs::path(PATCHGRAD_TEST_DATA).parent_path().parent_path() / "datasets" / "scripts" / "download_cifar10.sh";
const char* const kMd5Tools[] = {"md5sum", "md5", "openssl"};

bool on_path(const std::string& tool) { return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0; }

// The path of `tool` ("" if it is not installed).
std::string locate(const TempDir& tmp, const std::string& tool) {
    const std::string out = tmp.file("which.txt");
    if (std::system(("command -v " + tool + " >'" + out + "' 2>/dev/null").c_str()) != 0) return "";
    std::string path = read_bytes(out);
    return path.substr(0, path.find('\n'));
}

// A folder to use as the whole PATH: links to what the script runs besides an MD5 tool,
// plus the MD5 tools named in `md5_tools`. (tar runs gzip itself.)
std::string path_with(const TempDir& tmp, const std::vector<std::string>& md5_tools) {
    std::string dir = tmp.file("path");
    for (const auto& t : md5_tools) dir += "-" + t;
    fs::create_directories(dir);
    std::vector<std::string> tools = {"curl", "tar", "gzip", "mkdir", "mv", "rm", "rmdir", "mktemp", "wc", "cut"};
    tools.insert(tools.end(), md5_tools.begin(), md5_tools.end());
    for (const auto& t : tools) {
        const std::string target = locate(tmp, t);
        REQUIRE(!target.empty());
        fs::create_symlink(target, dir + "/" + t);
    }
    return dir;
}

struct Run {
    int exit_code;
    std::string output;
};

// Runs the script with `dest` as DEST_DIR, the archive `url` and the expected `md5`; the
// fixture's .bin files hold 2 records (6,146 bytes) each. A non-empty `path` replaces PATH.
Run run_script(const TempDir& tmp, const std::string& dest, const std::string& url, const std::string& md5,
               const std::string& path = "") {
    const std::string log = tmp.file("log.txt"), rc = tmp.file("rc.txt");
    const std::string command = (path.empty() ? "" : "PATH='" + path + "' ") + "PATCHGRAD_CIFAR_URL='" + url +
                                "' PATCHGRAD_CIFAR_MD5='" + md5 + "' PATCHGRAD_CIFAR_BIN_BYTES=6146 '" +
                                locate(tmp, "bash") + "' '" + kScript.string() + "' '" + dest + "' >'" + log +
                                "' 2>&1; echo $? >'" + rc + "'";
    REQUIRE(std::system(command.c_str()) == 0);
    return {std::stoi(read_bytes(rc)), read_bytes(log)};
}

// The archive's MD5 as the first MD5 tool there computes it ("" if there is none).
std::string md5_of(const TempDir& tmp, const std::string& file) {
    const std::string out = tmp.file("md5.txt");
    const std::string quoted = " '" + file + "' >'" + out + "'";
    for (const std::string& command : {"md5sum" + quoted, "md5 -q" + quoted, "openssl dgst -md5 -r" + quoted})
        if (on_path(command.substr(0, command.find(' '))) && std::system(command.c_str()) == 0)
            return read_bytes(out).substr(0, 32);
    return "";
}

}  // namespace

TEST_CASE("datasets: download_cifar10.sh fetches, verifies, extracts, and is idempotent", "[datasets][download]") {
    REQUIRE(fs::exists(kScript));
    for (const char* tool : {"bash", "curl", "tar", "gzip"}) {
        INFO("download_cifar10.sh's tests need " << tool << " on the PATH");
        REQUIRE(on_path(tool));
    }
    TempDir tmp;
    // The archive: cifar-10-batches-bin/ with the six files, like the official one.
    save_synthetic_cifar10(tmp.file("src/cifar-10-batches-bin"), 2, 21);
    const std::string archive = tmp.file("cifar-10-binary.tar.gz");
    REQUIRE(std::system(("tar -czf '" + archive + "' -C '" + tmp.file("src") + "' cifar-10-batches-bin").c_str()) == 0);
    const std::string md5 = md5_of(tmp, archive);
    INFO("no MD5 tool (md5sum, md5 or openssl) works here, so download_cifar10.sh cannot check a download");
    REQUIRE(md5.size() == 32);
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

    SECTION("a folder of the same name holding other files is not replaced") {
        const std::string dest = tmp.file("mine");
        fs::create_directories(dest + "/cifar-10-batches-bin");
        write_bytes(dest + "/cifar-10-batches-bin/data_batch_1.bin", "cut");
        write_bytes(dest + "/cifar-10-batches-bin/my_notes.txt", "precious");
        Run refused = run_script(tmp, dest, url, md5);
        INFO(refused.output);
        REQUIRE(refused.exit_code != 0);
        REQUIRE(refused.output.find("holds my_notes.txt, which is not a CIFAR-10 file") != std::string::npos);
        REQUIRE(refused.output.find("downloading") == std::string::npos);
        REQUIRE(read_bytes(dest + "/cifar-10-batches-bin/my_notes.txt") == "precious");
        fs::remove_all(dest + "/cifar-10-batches-bin");
        write_bytes(dest + "/cifar-10-batches-bin", "a file");  // not a folder either
        Run file = run_script(tmp, dest, url, md5);
        INFO(file.output);
        REQUIRE(file.exit_code != 0);
        REQUIRE(file.output.find("cifar-10-batches-bin is not a folder") != std::string::npos);
        REQUIRE(read_bytes(dest + "/cifar-10-batches-bin") == "a file");
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

    SECTION("each MD5 tool there accepts the archive and rejects a wrong sum") {
        int tools = 0;
        for (const std::string tool : kMd5Tools) {
            if (!on_path(tool)) continue;  // md5 is macOS's; Linux has md5sum and openssl
            ++tools;
            INFO("with only " << tool);
            const std::string path = path_with(tmp, {tool});
            Run ok = run_script(tmp, tmp.file("only-" + tool), url, md5, path);
            INFO(ok.output);
            REQUIRE(ok.exit_code == 0);
            REQUIRE(load_cifar10_test(tmp.file("only-" + tool)).labels == expected_test.labels);
            Run bad = run_script(tmp, tmp.file("bad-" + tool), url, std::string(32, '0'), path);
            INFO(bad.output);
            REQUIRE(bad.exit_code != 0);
            REQUIRE(bad.output.find("has MD5 " + md5) != std::string::npos);
        }
        REQUIRE(tools >= 1);
    }

    SECTION("no MD5 tool at all: a clear error before any download") {
        const std::string dest = tmp.file("unchecked");
        Run none = run_script(tmp, dest, url, md5, path_with(tmp, {}));
        INFO(none.output);
        REQUIRE(none.exit_code != 0);
        REQUIRE(none.output.find("needs md5sum, md5 or openssl") != std::string::npos);
        REQUIRE(none.output.find("downloading") == std::string::npos);
        REQUIRE_FALSE(fs::exists(dest));
    }
}

}  // namespace patchgrad
