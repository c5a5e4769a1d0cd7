// json.h — writing JSON strings. patchgrad writes three kinds of JSON: safetensors headers
// (autograd/io/safetensors.cpp), a run's results.json (vit/train/results.cpp) and the recipe of
// `patchgrad train --print-recipe` (vit/train/train_options.cpp); all quote their strings here,
// so all escape the same way.
#pragma once

#include <string>

namespace patchgrad {

// `s` as a JSON string literal, quotes included: '"' and '\\' are escaped, control characters
// (below 0x20) written as \u00XX, and every other byte (UTF-8 included) kept as it is.
std::string json_string(const std::string& s);

}  // namespace patchgrad
