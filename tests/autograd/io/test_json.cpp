// Tests for autograd/io/json.cpp: the one way patchgrad quotes a JSON string, and the reader of
// safetensors headers (objects, arrays, strings and integers).
#include <string>
#include <vector>

#include "catch.h"
#include "patchgrad/autograd/io/json.h"
#include "patchgrad/autograd/rng.h"
#include "test_util.h"

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

// A picture named bad\xff\xfeutf.png, or a --data folder named in Latin-1, made JSON that
// Python's json refuses: the bytes were copied as they were.
TEST_CASE("json_string: bytes that are not UTF-8 become U+FFFD, so the JSON is always valid UTF-8", "[json]") {
    const std::string replacement = "\xEF\xBF\xBD";
    CHECK(json_string("bad\xff\xfeutf.png") == "\"bad" + replacement + replacement + "utf.png\"");
    CHECK(json_string("data-\xe9t\xe9") == "\"data-" + replacement + "t" + replacement + "\"");  // Latin-1
    // Valid sequences of every length stay, the smallest and largest of each included.
    for (const std::string valid : {"\x7f", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80",
                                    "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "π", "😀"})
        CHECK(valid_utf8(valid) == valid);
    // What RFC 3629 forbids: overlong forms, surrogates, above U+10FFFF, stray continuation
    // bytes, sequences cut short. Each offending byte becomes one U+FFFD.
    const auto replaced = [&](int n) {
        std::string s;
        for (int i = 0; i < n; ++i) s += replacement;
        return s;
    };
    CHECK(valid_utf8("\xc0\x80") == replaced(2));           // overlong NUL
    CHECK(valid_utf8("\xe0\x9f\xbf") == replaced(3));       // overlong U+07FF
    CHECK(valid_utf8("\xed\xa0\x80") == replaced(3));       // the surrogate U+D800
    CHECK(valid_utf8("\xf4\x90\x80\x80") == replaced(4));   // U+110000
    CHECK(valid_utf8("\xf5\x80\x80\x80") == replaced(4));   // no such lead byte
    CHECK(valid_utf8("\x80x") == replaced(1) + "x");        // a continuation byte alone
    CHECK(valid_utf8("\xe2\x82") == replaced(2));           // € cut short
    CHECK(valid_utf8("a\xe2\x82\xac") == "a\xe2\x82\xac");  // € whole

    // Random bytes: the result always decodes as strict UTF-8 (an independent decoder).
    Rng rng(5);
    for (int t = 0; t < 2000; ++t) {
        std::string bytes(rng.below(12), ' ');
        for (char& c : bytes) c = static_cast<char>(rng.below(2) ? 0x80 + rng.below(128) : rng.below(256));
        INFO("input " << t);
        const std::string json = json_string(bytes);
        CHECK(test::is_strict_utf8(json));
        if (test::is_strict_utf8(bytes) && bytes.find_first_of("\"\\") == std::string::npos &&
            std::none_of(bytes.begin(), bytes.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
            CHECK(json == "\"" + bytes + "\"");  // valid text is kept as it is
    }
}

TEST_CASE("read_json: objects keep their keys in order, strings are unescaped, integers are exact", "[json]") {
    const Json j = read_json(" {\"b\": [1, -2, 9223372036854775807], \"a\": \"x\\u00e9\\ud83d\\ude00\\n\", \"e\": {}} ",
                             "test header");
    REQUIRE(j.kind == Json::Kind::Object);
    REQUIRE(j.keys == std::vector<std::string>{"b", "a", "e"});
    REQUIRE(j.items[0].kind == Json::Kind::Array);
    REQUIRE(j.items[0].items.size() == 3);
    CHECK(j.items[0].items[1].integer == -2);
    CHECK(j.items[0].items[2].integer == 9223372036854775807);
    CHECK(j.items[1].kind == Json::Kind::String);
    CHECK(j.items[1].string == "x\xc3\xa9\xf0\x9f\x98\x80\n");  // é, then U+1F600 from its surrogate pair
    CHECK(j.items[1].offset == 42);
    CHECK(j.items[2].kind == Json::Kind::Object);
    CHECK(j.items[2].keys.empty());
    CHECK(std::string(json_kind_name(Json::Kind::Array)) == "an array");
}

TEST_CASE("read_json: refuses what a safetensors header never holds, naming the byte", "[json][errors]") {
    using test::require_error;
    const auto read = [](const std::string& text) { return read_json(text, "test header"); };
    require_error([&] { read("{\"a\": 1.5}"); }, {"test header: invalid JSON header at byte 7", "fractional"});
    require_error([&] { read("{\"a\": true}"); }, {"unexpected 't'", "only objects, arrays, strings and integers"});
    require_error([&] { read("{\"a\": 1, \"a\": 2}"); }, {"at byte 9", "duplicate key \"a\""});
    require_error([&] { read("{\"a\": 1} x"); }, {"unexpected 'x' after the JSON object"});
    require_error([&] { read("{\"a\": 1"); }, {"expected '}' but the header ended"});
    require_error([&] { read("[9223372036854775808]"); }, {"integer too large"});
    require_error([&] { read("\"\\ud800\""); }, {"lone high surrogate"});
    require_error([&] { read("\"\\q\""); }, {"unknown escape \\q"});
    require_error([&] { read("\"a\nb\""); }, {"control character in a string"});
    require_error([&] { read(std::string(40, '[') + std::string(40, ']')); }, {"nested more than 32 levels deep"});
}

}  // namespace patchgrad
