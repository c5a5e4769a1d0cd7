#include "patchgrad/autograd/io/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "patchgrad/autograd/io/atomic_file.h"
#include "patchgrad/autograd/io/files.h"
#include "patchgrad/autograd/io/json.h"

namespace patchgrad {

bool NamedTensors::contains(const std::string& name) const {
    for (const auto& [n, t] : tensors)
        if (n == name) return true;
    return false;
}

Tensor NamedTensors::get(const std::string& name) const {
    for (const auto& [n, t] : tensors)
        if (n == name) return t;
    fail("NamedTensors: no tensor named '", name, "'");
}

namespace {

// The reference implementation refuses headers above 100 MB; so do we, so that a garbled
// length cannot make us allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// ---- dtypes -------------------------------------------------------------------------------

enum class Dtype { F32, F64, I64 };

struct TensorEntry {
    std::string name;
    Dtype dtype;
    Shape shape;
    uint64_t begin, end;
};

size_t dtype_size(Dtype d) { return d == Dtype::F32 ? 4 : 8; }

// Little-endian bytes <-> integers, independent of the host's byte order.
uint64_t read_le(const unsigned char* p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}
void write_le(unsigned char* p, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

// Converts one tensor's raw bytes to `real`.
void convert(const unsigned char* bytes, Dtype dtype, real* out, int64_t n, const std::string& where) {
    for (int64_t i = 0; i < n; ++i) {
        const unsigned char* p = bytes + i * static_cast<int64_t>(dtype_size(dtype));
        if (dtype == Dtype::F32) {
            const auto bits = static_cast<uint32_t>(read_le(p, 4));
            float f;
            std::memcpy(&f, &bits, 4);
            out[i] = static_cast<real>(f);
        } else if (dtype == Dtype::F64) {
            const uint64_t bits = read_le(p, 8);
            double d;
            std::memcpy(&d, &bits, 8);
            out[i] = static_cast<real>(d);
            check(!std::isfinite(d) || std::isfinite(out[i]), where, ": element ", i, " (", d,
                  ") overflows the float type");
        } else {
            const auto v = static_cast<int64_t>(read_le(p, 8));
            // Integers are exact in `real` up to 2^24 (float) or 2^53 (double).
            constexpr int64_t exact = int64_t(1) << std::numeric_limits<real>::digits;
            check(v <= exact && v >= -exact, where, ": element ", i, " (", v,
                  ") is not exactly representable as a real");
            out[i] = static_cast<real>(v);
        }
    }
}

// Reads one header entry {"dtype": ..., "shape": [...], "data_offsets": [b, e]}.
TensorEntry read_entry(const std::string& name, const Json& j, const std::string& where) {
    const std::string what = where + ": tensor '" + name + "'";
    check(j.kind == Json::Kind::Object, what, ": expected an object, found ", json_kind_name(j.kind));
    TensorEntry e{name, Dtype::F32, {}, 0, 0};
    bool has_dtype = false, has_shape = false, has_offsets = false;
    for (size_t i = 0; i < j.keys.size(); ++i) {
        const std::string& key = j.keys[i];
        const Json& v = j.items[i];
        if (key == "dtype") {
            check(v.kind == Json::Kind::String, what, ": dtype is ", json_kind_name(v.kind), ", not a string");
            if (v.string == "F32")
                e.dtype = Dtype::F32;
            else if (v.string == "F64")
                e.dtype = Dtype::F64;
            else if (v.string == "I64")
                e.dtype = Dtype::I64;
            else {
                static const std::set<std::string> known = {"BOOL", "U8",  "I8",  "U16", "I16",     "F16",
                                                            "BF16", "U32", "I32", "U64", "F8_E4M3", "F8_E5M2"};
                fail(what, ": ", known.count(v.string) ? "unsupported" : "unknown", " dtype \"", v.string,
                     "\" (patchgrad reads F32, F64 and I64)");
            }
            has_dtype = true;
        } else if (key == "shape") {
            check(v.kind == Json::Kind::Array, what, ": shape is ", json_kind_name(v.kind), ", not an array");
            for (const Json& d : v.items) {
                check(d.kind == Json::Kind::Integer && d.integer >= 0, what, ": shape must hold non-negative integers");
                e.shape.push_back(d.integer);
            }
            has_shape = true;
        } else if (key == "data_offsets") {
            check(v.kind == Json::Kind::Array && v.items.size() == 2 && v.items[0].kind == Json::Kind::Integer &&
                      v.items[1].kind == Json::Kind::Integer && v.items[0].integer >= 0 && v.items[1].integer >= 0,
                  what, ": data_offsets must be two non-negative integers [begin, end]");
            e.begin = static_cast<uint64_t>(v.items[0].integer);
            e.end = static_cast<uint64_t>(v.items[1].integer);
            check(e.end >= e.begin, what, ": data_offsets [", e.begin, ", ", e.end, "] end before they begin");
            has_offsets = true;
        } else {
            fail(what, ": unexpected field \"", key, "\"");
        }
    }
    check(has_dtype, what, ": missing dtype");
    check(has_shape, what, ": missing shape");
    check(has_offsets, what, ": missing data_offsets");
    return e;
}

// Number of bytes the shape needs, or throws if that does not fit the data section
// (checked before multiplying further, so a garbled shape cannot overflow).
uint64_t shape_bytes(const TensorEntry& e, uint64_t data_bytes, const std::string& where) {
    uint64_t bytes = dtype_size(e.dtype);
    for (int64_t d : e.shape)
        if (d == 0) return 0;
    for (int64_t d : e.shape) {
        check(static_cast<uint64_t>(d) <= data_bytes && bytes <= data_bytes / static_cast<uint64_t>(d), where,
              ": tensor '", e.name, "' of shape ", e.shape, " is larger than the file's data section (", data_bytes,
              " bytes)");
        bytes *= static_cast<uint64_t>(d);
    }
    return bytes;
}

}  // namespace

// ---- saving -------------------------------------------------------------------------------

void save_safetensors(const std::string& path, const NamedTensors& named) {
    const std::string where = "save_safetensors: " + path;
#ifdef PATCHGRAD_DOUBLE
    const char* dtype = "F64";
#else
    const char* dtype = "F32";
#endif
    const size_t item = sizeof(real);

    std::set<std::string> seen;
    std::string header = "{";
    if (!named.metadata.empty()) {
        header += "\"__metadata__\":{";
        bool first = true;
        for (const auto& [k, v] : named.metadata) {
            if (!first) header += ",";
            first = false;
            header += json_string(k) + ":" + json_string(v);
        }
        header += "}";
    }
    uint64_t offset = 0;
    for (const auto& [name, t] : named.tensors) {
        check(!name.empty() && name != "__metadata__", where, ": '", name, "' is not a valid tensor name");
        check(seen.insert(name).second, where, ": tensor '", name, "' appears twice");
        check(t.defined(), where, ": tensor '", name, "' is undefined");
        const uint64_t bytes = static_cast<uint64_t>(t.numel()) * item;
        if (header.size() > 1) header += ",";
        header += json_string(name) + ":{\"dtype\":\"" + dtype + "\",\"shape\":[";
        for (size_t i = 0; i < t.shape().size(); ++i) header += (i ? "," : "") + std::to_string(t.shape()[i]);
        header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
        offset += bytes;
    }
    header += "}";
    // Spaces up to a multiple of 8 keep the tensor data 8-byte aligned, as the reference
    // implementation does.
    header.append((8 - header.size() % 8) % 8, ' ');

    atomic_write(path, "save_safetensors", [&](std::ostream& out) {
        unsigned char len[8];
        write_le(len, header.size(), 8);
        out.write(reinterpret_cast<const char*>(len), 8);
        out.write(header.data(), static_cast<std::streamsize>(header.size()));
        std::vector<unsigned char> buf;
        for (const auto& [name, t] : named.tensors) {
            buf.resize(static_cast<size_t>(t.numel()) * item);
            const real* x = t.data();
            for (int64_t i = 0; i < t.numel(); ++i) {
                uint64_t bits = 0;
                if constexpr (sizeof(real) == 4) {
                    uint32_t b32;
                    std::memcpy(&b32, &x[i], 4);
                    bits = b32;
                } else {
                    std::memcpy(&bits, &x[i], 8);
                }
                write_le(buf.data() + i * static_cast<int64_t>(item), bits, item);
            }
            out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
        }
    });
}

// ---- loading ------------------------------------------------------------------------------

namespace {

// The reader behind load_safetensors and parse_safetensors: `in` holds the whole file,
// `where` names it in messages.
NamedTensors read_safetensors(std::istream& in, const std::string& where) {
    in.seekg(0, std::ios::end);
    const auto size_pos = in.tellg();
    check(size_pos >= 0, where, ": cannot determine the file size");
    const auto file_size = static_cast<uint64_t>(size_pos);
    in.seekg(0);

    check(file_size >= 8, where, ": truncated: the file has ", file_size,
          " bytes, fewer than the 8-byte header length");
    unsigned char len[8];
    in.read(reinterpret_cast<char*>(len), 8);
    check(!in.fail(), where, ": cannot read the header length");
    const uint64_t header_len = read_le(len, 8);
    check(header_len <= file_size - 8, where, ": header length ", header_len, " is larger than the rest of the file (",
          file_size - 8, " bytes): truncated or not a safetensors file");
    check(header_len <= kMaxHeaderBytes, where, ": header length ", header_len, " exceeds the limit of ",
          kMaxHeaderBytes, " bytes");
    std::string header(static_cast<size_t>(header_len), '\0');
    in.read(header.data(), static_cast<std::streamsize>(header_len));
    check(!in.fail(), where, ": cannot read the ", header_len, "-byte header");
    check(!header.empty() && header[0] == '{', where, ": the header does not start with '{': not a safetensors file");

    const Json root = read_json(header, where);
    const uint64_t data_bytes = file_size - 8 - header_len;

    NamedTensors result;
    std::vector<TensorEntry> entries;
    for (size_t i = 0; i < root.keys.size(); ++i) {
        const Json& v = root.items[i];
        if (root.keys[i] == "__metadata__") {
            check(v.kind == Json::Kind::Object, where, ": __metadata__ is ", json_kind_name(v.kind), ", not an object");
            for (size_t k = 0; k < v.keys.size(); ++k) {
                check(v.items[k].kind == Json::Kind::String, where, ": __metadata__ value of \"", v.keys[k], "\" is ",
                      json_kind_name(v.items[k].kind), ", not a string");
                result.metadata[v.keys[k]] = v.items[k].string;
            }
            continue;
        }
        TensorEntry e = read_entry(root.keys[i], v, where);
        check(e.end <= data_bytes, where, ": tensor '", e.name, "' has data_offsets [", e.begin, ", ", e.end,
              "] outside the data section (", data_bytes, " bytes): truncated file?");
        const uint64_t expected = shape_bytes(e, data_bytes, where);
        check(e.end - e.begin == expected, where, ": tensor '", e.name, "' of shape ", e.shape, " needs ", expected,
              " bytes but data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin);
        entries.push_back(std::move(e));
    }

    // The tensors must tile the data section exactly: no overlap (two tensors sharing
    // bytes) and, like the reference implementation, no holes.
    std::stable_sort(entries.begin(), entries.end(),
                     [](const TensorEntry& a, const TensorEntry& b) { return a.begin < b.begin; });
    uint64_t covered = 0;
    const TensorEntry* previous = nullptr;
    for (const TensorEntry& e : entries) {
        if (e.begin < covered)  // previous is set then
            fail(where, ": tensors '", previous->name, "' and '", e.name, "' overlap in the data section");
        check(e.begin <= covered, where, ": bytes ", covered, " to ", e.begin,
              " of the data section belong to no tensor");
        covered = e.end;
        previous = &e;
    }
    check(covered == data_bytes, where, ": the last ", data_bytes - covered, " bytes of the file belong to no tensor");

    std::vector<unsigned char> buf;
    for (const TensorEntry& e : entries) {
        buf.resize(static_cast<size_t>(e.end - e.begin));
        in.seekg(static_cast<std::streamoff>(8 + header_len + e.begin));
        in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
        check(!in.fail(), where, ": cannot read the data of tensor '", e.name, "'");
        Tensor t = Tensor::empty(e.shape);
        convert(buf.data(), e.dtype, t.data(), t.numel(), where + ": tensor '" + e.name + "'");
        result.tensors.emplace_back(e.name, t);
    }
    return result;
}

}  // namespace

NamedTensors load_safetensors(const std::string& path) {
    const std::string where = "load_safetensors: " + path;
    const std::string not_regular = not_a_regular_file(path);
    check(not_regular.empty(), where, ": ", not_regular);
    std::ifstream in(path, std::ios::binary);
    check(!in.fail(), where, ": cannot open the file for reading");
    return read_safetensors(in, where);
}

NamedTensors parse_safetensors(const std::string& bytes, const std::string& name) {
    std::istringstream in(bytes);
    return read_safetensors(in, "parse_safetensors: " + name);
}

}  // namespace patchgrad
