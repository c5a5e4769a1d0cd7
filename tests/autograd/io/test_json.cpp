// Tests for autograd/io/json.cpp: the one way patchgrad quotes a JSON string.
#include <string>

#include "autograd/io/json.h"
#include "catch.h"

namespace patchgrad {

// (No quote or backslash in the name: CTest's discovery would mangle it and run nothing.)
TEST_CASE(
    "json_string: quotes the text, escapes double quotes and backslashes, writes control characters as "
    "u00XX escapes, keeps UTF-8",
    "[json]") {
    CHECK(json_string("") == "\"\"");
    CHECK(json_string("cifar-tiny") == "\"cifar-tiny\"");
    CHECK(json_string("say \"hi\"") == "\"say \\\"hi\\\"\"");
    CHECK(json_string("C:\\runs") == "\"C:\\\\runs\"");
    // A control character is escaped, never dropped (results.json once dropped them).
    CHECK(json_string("a\nb\tc") == "\"a\\u000ab\\u0009c\"");
    CHECK(json_string(std::string("nul\0end", 7)) == "\"nul\\u0000end\"");
    CHECK(json_string("\x1f") == "\"\\u001f\"");
    CHECK(json_string("Zürich") == "\"Zürich\"");  // UTF-8 bytes pass through
}

}  // namespace patchgrad
