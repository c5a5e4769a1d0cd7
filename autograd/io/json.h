// json.h — writing JSON strings. patchgrad writes three kinds of JSON: safetensors headers
// (autograd/io/safetensors.cpp), a run's results.json (vit/train/results.cpp) and the recipe of
// `patchgrad train --print-recipe` (vit/train/train_options.cpp); all quote their strings here,
// so all escape the same way, and all are valid UTF-8 whatever bytes a file name holds.
#pragma once

#include <string>

namespace patchgrad {

// `s` as a JSON string literal, quotes included: '"' and '\\' are escaped, control characters
// (below 0x20) written as \u00XX, valid UTF-8 kept as it is, and every byte that is not part
// of a valid UTF-8 sequence (a Latin-1 file name, say) replaced by U+FFFD, the replacement
// character, as valid_utf8 does. JSON must be UTF-8: Python's json refuses anything else.
std::string json_string(const std::string& s);

// `s` with each byte that does not belong to a valid UTF-8 sequence (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF) replaced by U+FFFD ("\xEF\xBF\xBD").
std::string valid_utf8(const std::string& s);

}  // namespace patchgrad
