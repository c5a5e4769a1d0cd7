// Tests for safetensors.cpp. Files are written to a fresh temporary directory. Files in the
// reference layout are assembled byte by byte here (not with save_safetensors), so the
// reader is checked against the format, not against our own writer.
#include "patchgrad/autograd/io/safetensors.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "catch.h"
#include "patchgrad/autograd/io/files.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le_bytes(uint64_t v, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
    return s;
}

std::string f32_bytes(const std::vector<float>& values) {
    std::string s;
    for (float f : values) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        s += le_bytes(bits, 4);
    }
    return s;
}

std::string f64_bytes(const std::vector<double>& values) {
    std::string s;
    for (double d : values) {
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        s += le_bytes(bits, 8);
    }
    return s;
}

std::string i64_bytes(const std::vector<int64_t>& values) {
    std::string s;
    for (int64_t v : values) s += le_bytes(static_cast<uint64_t>(v), 8);
    return s;
}

// A safetensors file: length, header (space-padded to a multiple of 8), data.
std::string file_bytes(const std::string& header, const std::string& data) {
    std::string h = header;
    h.append((8 - h.size() % 8) % 8, ' ');
    return le_bytes(h.size(), 8) + h + data;
}

bool same_bits(real a, real b) { return std::memcmp(&a, &b, sizeof(real)) == 0; }

// A valid two-tensor file in the reference layout, for the corruption tests.
std::string valid_file() {
    return file_bytes(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                      R"("b":{"dtype":"I64","shape":[2],"data_offsets":[24,40]}})",
                      f32_bytes({1, 2, 3, 4, 5, 6}) + i64_bytes({7, -8}));
}

TEST_CASE("safetensors: round trip in double keeps every bit, shape, name and metadata", "[safetensors]") {
    TempDir dir;
    Rng rng(3);
    NamedTensors named;
    named.tensors.emplace_back("blocks.0.attn.qkv.weight", Tensor::normal({7, 11}, 0, 1, rng));
    named.tensors.emplace_back("odd", Tensor::uniform({3, 1, 5}, -1e-30, 1e30, rng));
    named.tensors.emplace_back("scalar", Tensor::scalar(-0.0));
    named.tensors.emplace_back("empty", Tensor::zeros({0, 3}));
    const real inf = std::numeric_limits<real>::infinity();
    named.tensors.emplace_back("special",
                               Tensor::from_vector({5}, {inf, -inf, std::numeric_limits<real>::quiet_NaN(),
                                                         std::numeric_limits<real>::denorm_min(), 1.0 / 3.0}));
    named.tensors.emplace_back("name with \"quotes\" \\ and ünïcode", Tensor::full({2}, 0.1));
    named.metadata = {{"config", "{\"dim\": 16}"}, {"newline\nkey", "tab\tvalue"}, {"empty", ""}, {"π", "3.14"}};

    const std::string path = dir.file("model.safetensors");
    save_safetensors(path, named);
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());
    const NamedTensors loaded = load_safetensors(path);

    REQUIRE(loaded.tensors.size() == named.tensors.size());
    for (size_t i = 0; i < named.tensors.size(); ++i) {
        const auto& [name, t] = named.tensors[i];
        INFO(name);
        CHECK(loaded.tensors[i].first == name);
        const Tensor& u = loaded.tensors[i].second;
        REQUIRE(u.shape() == t.shape());
        for (int64_t k = 0; k < t.numel(); ++k) CHECK(same_bits(u.data()[k], t.data()[k]));
    }
    CHECK(loaded.metadata == named.metadata);
    CHECK(loaded.get("odd").shape() == Shape{3, 1, 5});
    CHECK(loaded.contains("scalar"));
    CHECK_FALSE(loaded.contains("missing"));
}

TEST_CASE("safetensors: the writer produces the reference layout", "[safetensors]") {
    TempDir dir;
    NamedTensors named;
    named.tensors.emplace_back("w", Tensor::from_vector({2, 2}, {1, -2, 0.5, 4}));
    named.tensors.emplace_back("b", Tensor::from_vector({1}, {3}));
    named.metadata["k"] = "v";
    const std::string path = dir.file("layout.safetensors");
    save_safetensors(path, named);
    const std::string bytes = read_file(path);

    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    CHECK(n % 8 == 0);
    REQUIRE(bytes.size() == 8 + n + 5 * 8);
    const std::string header = bytes.substr(8, n);
    const std::string expected = R"({"__metadata__":{"k":"v"},"w":{"dtype":"F64","shape":[2,2],"data_offsets":[0,32]},)"
                                 R"("b":{"dtype":"F64","shape":[1],"data_offsets":[32,40]}})";
    CHECK(header.substr(0, expected.size()) == expected);
    CHECK(header.find_first_not_of(' ', expected.size()) == std::string::npos);
    CHECK(bytes.substr(8 + n) == f64_bytes({1, -2, 0.5, 4, 3}));
}

TEST_CASE("safetensors: reads F32, F64 and I64 files written in the reference layout", "[safetensors]") {
    TempDir dir;
    const std::string path = dir.file("ref.safetensors");
    // Whitespace, escapes and key order as another writer might produce them; the tensors
    // are listed in a different order than their data.
    write_file(path,
               file_bytes("{ \"labels\" : {\"shape\": [3], \"dtype\": \"I64\", \"data_offsets\": [20, 44]},\n"
                          "  \"x\\u00e9\\ud83d\\ude00\": {\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},\n"
                          "  \"d\": {\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[12,20]},\n"
                          "  \"z\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},\n"
                          "  \"__metadata__\": {\"q\": \"a\\\"b\\\\c\\/\\n\"} }",
                          f32_bytes({0.1f, -3.5f}) + f32_bytes({2}) + f64_bytes({0.1}) +
                              i64_bytes({0, 4, -9007199254740992LL})));
    const NamedTensors t = load_safetensors(path);
    REQUIRE(t.tensors.size() == 4);
    // Returned in data order.
    CHECK(t.tensors[0].first == "x\xC3\xA9\xF0\x9F\x98\x80");
    CHECK(t.tensors[1].first == "z");
    CHECK(t.tensors[2].first == "d");
    CHECK(t.tensors[3].first == "labels");
    CHECK(t.tensors[0].second.to_vector() == std::vector<real>{real(0.1f), -3.5});
    CHECK(t.get("d").shape() == Shape{});
    CHECK(t.get("d").item() == 0.1);
    CHECK(t.get("labels").to_vector() == std::vector<real>{0, 4, -9007199254740992.0});
    CHECK(t.metadata.at("q") == "a\"b\\c/\n");
}

TEST_CASE("safetensors: a failed save leaves neither the file nor a temporary", "[safetensors][errors]") {
    TempDir dir;
    NamedTensors named;
    named.tensors.emplace_back("a", Tensor::ones({2}));
    const std::string path = dir.file("no_such_dir/model.safetensors");
    require_error([&] { save_safetensors(path, named); }, {"save_safetensors", path, "cannot open"});
    CHECK_FALSE(fs::exists(path));
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());

    // Saving over an existing file replaces it.
    const std::string good = dir.file("model.safetensors");
    save_safetensors(good, named);
    named.tensors[0].second = Tensor::full({3}, 2);
    save_safetensors(good, named);
    CHECK(load_safetensors(good).get("a").to_vector() == std::vector<real>{2, 2, 2});
    CHECK(files_ending_in(dir.path.string(), ".tmp").empty());
}

TEST_CASE("safetensors: bad tensors are refused by the writer", "[safetensors][errors]") {
    TempDir dir;
    const std::string path = dir.file("bad.safetensors");
    NamedTensors dup;
    dup.tensors = {{"a", Tensor::ones({1})}, {"a", Tensor::ones({1})}};
    require_error([&] { save_safetensors(path, dup); }, {"save_safetensors", "'a' appears twice"});
    NamedTensors reserved;
    reserved.tensors = {{"__metadata__", Tensor::ones({1})}};
    require_error([&] { save_safetensors(path, reserved); }, {"save_safetensors", "__metadata__", "not a valid"});
    NamedTensors empty_name;
    empty_name.tensors = {{"", Tensor::ones({1})}};
    require_error([&] { save_safetensors(path, empty_name); }, {"save_safetensors", "not a valid tensor name"});
    NamedTensors undefined;
    undefined.tensors = {{"u", Tensor()}};
    require_error([&] { save_safetensors(path, undefined); }, {"save_safetensors", "'u' is undefined"});
    CHECK_FALSE(fs::exists(path));
    require_error([&] { NamedTensors().get("nope"); }, {"NamedTensors", "'nope'"});
}

TEST_CASE("safetensors: corrupt files give errors naming the file and the problem", "[safetensors][errors]") {
    TempDir dir;
    const std::string path = dir.file("corrupt.safetensors");
    auto load_bytes = [&](const std::string& bytes, const std::vector<std::string>& fragments) {
        write_file(path, bytes);
        std::vector<std::string> with_file = fragments;
        with_file.insert(with_file.begin(), {"load_safetensors", path});
        require_error([&] { load_safetensors(path); }, with_file);
    };
    const std::string f6 = f32_bytes({1, 2, 3, 4, 5, 6});

    SECTION("missing file") {
        require_error([&] { load_safetensors(dir.file("nope.safetensors")); },
                      {"load_safetensors", "nope.safetensors", "no such file"});
        require_error([&] { load_safetensors(dir.path.string()); }, {"load_safetensors", "directory"});
    }
    SECTION("truncated header length") {
        load_bytes("", {"truncated", "0 bytes"});
        load_bytes(std::string("\x10\0\0", 3), {"truncated", "3 bytes"});
    }
    SECTION("header length larger than the file") {
        load_bytes(le_bytes(1000, 8) + "{}      ",
                   {"header length 1000", "larger than the rest of the file (8 bytes)"});
        load_bytes(le_bytes(~uint64_t(0), 8) + "{}", {"header length 18446744073709551615", "larger"});
    }
    SECTION("not JSON at all") { load_bytes(le_bytes(8, 8) + "PK\x03\x04zip!", {"does not start with '{'"}); }
    SECTION("invalid JSON, with its offset") {
        load_bytes(file_bytes(R"({"a": {"dtype": "F32",, "shape": [1]}})", ""), {"invalid JSON", "byte 22"});
        load_bytes(file_bytes(R"({"a": {"dtype": "F32")", ""), {"invalid JSON", "header ended"});
        load_bytes(file_bytes(R"({"a": {"dtype": "F32", "shape": [1.5]}})", ""),
                   {"invalid JSON", "byte 34", "fractional"});
        load_bytes(file_bytes(R"({"a": {"dtype": true}})", ""), {"invalid JSON", "byte 16", "unexpected 't'"});
        load_bytes(file_bytes(R"({"a\q": 1})", ""), {"invalid JSON", "unknown escape \\q"});
        load_bytes(file_bytes(R"({"a": 1} x)", ""), {"invalid JSON", "byte 9", "after the JSON object"});
        load_bytes(file_bytes(R"({"a": 99999999999999999999})", ""), {"invalid JSON", "integer too large"});
        load_bytes(file_bytes("{\"a\": \"line\nbreak\"}", ""), {"invalid JSON", "control character"});
        load_bytes(file_bytes(R"({"a": "\ud800"})", ""), {"invalid JSON", "surrogate"});
        load_bytes(file_bytes(R"({"a": 1, "a": 2})", ""), {"invalid JSON", "byte 9", "duplicate key \"a\""});
        load_bytes(file_bytes("{\"a\": " + std::string(100, '[') + std::string(100, ']') + "}", ""),
                   {"invalid JSON", "nested more than"});
    }
    SECTION("unknown and unsupported dtypes") {
        load_bytes(file_bytes(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", f32_bytes({1})),
                   {"tensor 'a'", "unknown dtype \"F33\""});
        load_bytes(file_bytes(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", f32_bytes({1})),
                   {"tensor 'a'", "unsupported dtype \"F16\"", "F32, F64 and I64"});
    }
    SECTION("malformed entries") {
        load_bytes(file_bytes(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", f32_bytes({1})),
                   {"tensor 'a'", "missing dtype"});
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", f32_bytes({1})),
                   {"tensor 'a'", "missing shape"});
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[1]}})", f32_bytes({1})),
                   {"tensor 'a'", "missing data_offsets"});
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", f32_bytes({1})),
                   {"tensor 'a'", "non-negative"});
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", f32_bytes({1})),
                   {"tensor 'a'", "data_offsets must be two"});
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", f32_bytes({1})),
                   {"tensor 'a'", "end before they begin"});
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})", f32_bytes({1})),
                   {"tensor 'a'", "unexpected field \"extra\""});
        load_bytes(file_bytes(R"({"a":[1]})", ""), {"tensor 'a'", "expected an object, found an array"});
        load_bytes(file_bytes(R"({"__metadata__":{"k":1}})", ""), {"__metadata__", "\"k\"", "not a string"});
        load_bytes(file_bytes(R"({"__metadata__":"x"})", ""), {"__metadata__", "not an object"});
    }
    SECTION("offsets outside the data") {
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,28]}})", f6),
                   {"tensor 'a'", "[0, 28]", "outside the data section (24 bytes)"});
        // A truncated file: the header promises more data than there is.
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})", f6.substr(0, 20)),
                   {"tensor 'a'", "outside the data section (20 bytes)"});
    }
    SECTION("shape and offsets disagree") {
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,24]}})", f6),
                   {"tensor 'a'", "[2, 2]", "needs 16 bytes", "hold 24"});
        load_bytes(file_bytes(R"({"a":{"dtype":"F64","shape":[2,3],"data_offsets":[0,24]}})", f6),
                   {"tensor 'a'", "[2, 3] is larger than the file's data section"});
        load_bytes(
            file_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,24]}})", f6),
            {"tensor 'a'", "larger than the file's data section"});
    }
    SECTION("overlapping tensors, holes and trailing bytes") {
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                              R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                              f6),
                   {"tensors 'a' and 'b' overlap"});
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})",
                              f6),
                   {"bytes 8 to 16", "belong to no tensor"});
        load_bytes(file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f6),
                   {"last 16 bytes", "belong to no tensor"});
    }
    SECTION("integers beyond what real holds exactly") {
        load_bytes(file_bytes(R"({"n":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})",
                              i64_bytes({1, (int64_t(1) << std::numeric_limits<real>::digits) + 1})),
                   {"tensor 'n'", "element 1", "not exactly representable"});
    }
}

// `count` tensors "t0", "t1", ... of shape [0] (no data, so any number fits an empty data
// section), then the keys in `repeats` once more; and where each key starts in the header.
struct ManyKeys {
    std::string header;
    std::vector<size_t> key_offsets;
};
ManyKeys many_keys(int count, const std::vector<std::string>& repeats = {}) {
    std::vector<std::string> keys;
    for (int i = 0; i < count; ++i) keys.push_back("t" + std::to_string(i));
    keys.insert(keys.end(), repeats.begin(), repeats.end());
    ManyKeys m{"{", {}};
    for (const std::string& key : keys) {
        if (m.header.size() > 1) m.header += ",";
        m.key_offsets.push_back(m.header.size());
        m.header += "\"" + key + R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]})";
    }
    m.header += "}";
    return m;
}

// The duplicate-key search sorts the keys (comparing every key with all before it is
// quadratic); these check that it finds what a linear search would.
TEST_CASE("safetensors: among 100,000 keys every one is kept and the first repeated one is named",
          "[safetensors][errors]") {
    const NamedTensors all = parse_safetensors(file_bytes(many_keys(100000).header, ""), "many");
    REQUIRE(all.tensors.size() == 100000);
    CHECK(all.tensors.front().first == "t0");
    CHECK(all.get("t99999").shape() == Shape{0});

    // "t3" repeats a key from further back, but "t99998" is the first key in the header that
    // repeats an earlier one: that is the one reported, where it stands.
    const ManyKeys dup = many_keys(100000, {"t99998", "t3", "t99998"});
    require_error([&] { parse_safetensors(file_bytes(dup.header, ""), "dup"); },
                  {"parse_safetensors: dup", "duplicate key \"t99998\"",
                   "byte " + std::to_string(dup.key_offsets[100000]) + " "});
    const ManyKeys first_and_last = many_keys(2, {"t0"});
    require_error([&] { parse_safetensors(file_bytes(first_and_last.header, ""), "dup"); },
                  {"duplicate key \"t0\"", "byte " + std::to_string(first_and_last.key_offsets[2]) + " "});
    // Keys of other objects are their own: "dtype" in every entry is no repeat.
    CHECK(parse_safetensors(valid_file(), "v").tensors.size() == 2);
}

TEST_CASE("safetensors: bytes in memory read exactly like the file, errors naming them", "[safetensors]") {
    TempDir dir;
    const std::string path = dir.file("ref.safetensors");
    write_file(path, valid_file());
    const NamedTensors from_file = load_safetensors(path), from_bytes = parse_safetensors(valid_file(), "download");
    REQUIRE(from_bytes.tensors.size() == from_file.tensors.size());
    for (size_t i = 0; i < from_file.tensors.size(); ++i) {
        CHECK(from_bytes.tensors[i].first == from_file.tensors[i].first);
        CHECK(from_bytes.tensors[i].second.to_vector() == from_file.tensors[i].second.to_vector());
    }
    CHECK(from_bytes.metadata == from_file.metadata);
    require_error([] { parse_safetensors("{}", "download"); }, {"parse_safetensors: download", "truncated"});
}

// `patchgrad eval --checkpoint FIFO` would block forever in the open: the checkpoint reader
// and the data loader both refuse FIFOs through not_a_regular_file.
TEST_CASE("safetensors: a FIFO or a device is refused without opening it", "[safetensors][errors]") {
    TempDir dir;
    const std::string fifo = dir.file("c.safetensors");
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    require_error([&] { load_safetensors(fifo); }, {"load_safetensors", fifo, "FIFO", "not a regular file"});
    require_error([] { load_safetensors("/dev/zero"); }, {"load_safetensors: /dev/zero", "device"});
    CHECK(not_a_regular_file(dir.path.string()) == "is a directory, not a regular file");
    CHECK(not_a_regular_file(dir.file("nope")) == "no such file");
    write_file(dir.file("real"), valid_file());
    CHECK(not_a_regular_file(dir.file("real")).empty());
}

// A few thousand inputs a few mutations away from valid files: each loads or is refused
// with std::invalid_argument naming it (tests/fuzz/fuzz_safetensors.cpp runs the same reader
// under libFuzzer, for as long as one likes).
TEST_CASE("safetensors: fuzzed files load or are refused naming the file, nothing else", "[safetensors][fuzz]") {
    TempDir dir;
    NamedTensors named;
    Rng rng(5);
    named.tensors.emplace_back("blocks.0.attn.qkv.weight", Tensor::normal({6, 2}, 0, 1, rng));
    named.tensors.emplace_back("scalar", Tensor::scalar(1));
    named.tensors.emplace_back("empty", Tensor::zeros({0, 3}));
    named.metadata = {{"format", "patchgrad-checkpoint-1"}, {"config.dim", "16"}};
    save_safetensors(dir.file("ours.safetensors"), named);
    const std::vector<std::string> seeds = {valid_file(), read_file(dir.file("ours.safetensors"))};
    const int64_t loaded = fuzz<std::invalid_argument>(
        seeds, 4000, 20, [](const std::string& bytes, const std::string& name) { parse_safetensors(bytes, name); });
    // Mutated data bytes still load (they are other numbers); most mutated headers do not.
    CHECK(loaded > 0);
    CHECK(loaded < 4000);
}

// Every truncation and every single-byte corruption of a valid file must either load or
// throw std::invalid_argument: no crash, no other exception (run under the sanitizers).
TEST_CASE("safetensors: truncated and garbled files never crash the reader", "[safetensors][errors]") {
    TempDir dir;
    const std::string path = dir.file("fuzz.safetensors");
    const std::string good = valid_file();
    write_file(path, good);
    REQUIRE(load_safetensors(path).get("b").to_vector() == std::vector<real>{7, -8});

    for (size_t n = 0; n < good.size(); ++n) {
        INFO("truncated to " << n << " bytes");
        write_file(path, good.substr(0, n));
        CHECK_THROWS_AS(load_safetensors(path), std::invalid_argument);
    }
    const unsigned char replacements[] = {0x00, 0xFF, '"', '{', '}', '[', ']', ',', ':', '\\', '9', '-', 'u', 0x80};
    int loaded = 0, refused = 0;
    for (size_t pos = 0; pos < good.size(); ++pos) {
        for (unsigned char r : replacements) {
            std::string bad = good;
            bad[pos] = static_cast<char>(r);
            write_file(path, bad);
            try {
                load_safetensors(path);
                ++loaded;
            } catch (const std::invalid_argument&) {
                ++refused;
            }
        }
    }
    // Corrupted data bytes load (they are just other numbers); corrupted headers mostly not.
    CHECK(loaded > 0);
    CHECK(refused > 0);
}

}  // namespace
}  // namespace patchgrad
