// json.h — writing JSON strings, and reading the JSON of a safetensors header. patchgrad writes
// three kinds of JSON: safetensors headers (autograd/io/safetensors.cpp), a run's results.json
// (vit/train/results.cpp) and the recipe of `patchgrad train --print-recipe`
// (vit/train/train_options.cpp); all quote their strings here, so all escape the same way, and
// all are valid UTF-8 whatever bytes a file name holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace patchgrad {

// `s` as a JSON string literal, quotes included: '"' and '\\' are escaped, control characters
// (below 0x20) written as \u00XX, valid UTF-8 kept as it is, and every byte that is not part
// of a valid UTF-8 sequence (a Latin-1 file name, say) replaced by U+FFFD, the replacement
// character, as valid_utf8 does. JSON must be UTF-8: Python's json refuses anything else.
std::string json_string(const std::string& s);

// `s` with each byte that does not belong to a valid UTF-8 sequence (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF) replaced by U+FFFD ("\xEF\xBF\xBD").
std::string valid_utf8(const std::string& s);

// ---- reading: objects, arrays, strings and integers ---------------------------------------
// That is all a safetensors header holds (autograd/io/safetensors.cpp reads it here). Objects
// keep their keys in file order.

struct Json {
    enum class Kind { Object, Array, String, Integer };
    Kind kind = Kind::Object;
    std::string string;
    int64_t integer = 0;
    std::vector<Json> items;        // array elements, or object values
    std::vector<std::string> keys;  // object keys, parallel to items
    size_t offset = 0;              // where the value starts in the header, for messages
};

// "an object", "an array", "a string" or "an integer", for messages.
const char* json_kind_name(Json::Kind kind);

// The JSON value that is the whole of `text`. Anything else (bad syntax, a fraction, a
// duplicate key, nesting deeper than 32 levels) throws std::invalid_argument:
// "WHERE: invalid JSON header at byte N of the header: PROBLEM".
Json read_json(const std::string& text, const std::string& where);

}  // namespace patchgrad
