#include "patchgrad/autograd/io/json.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>

#include "patchgrad/autograd/check.h"

namespace patchgrad {

namespace {

// The length of the valid UTF-8 sequence at s[i], or 0 if the byte there starts none.
size_t utf8_length(const std::string& s, size_t i) {
    const auto byte = [&s](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
    const unsigned lead = byte(i);
    if (lead < 0x80) return 1;
    // The allowed range of the second byte, which rules out overlong forms and surrogates.
    unsigned low = 0x80, high = 0xBF;
    size_t length;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) low = 0xA0;
        if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) low = 0x90;
        if (lead == 0xF4) high = 0x8F;
    } else {
        return 0;
    }
    if (byte(i + 1) < low || byte(i + 1) > high) return 0;
    for (size_t k = 2; k < length; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    return length;
}

}  // namespace

std::string valid_utf8(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const size_t length = utf8_length(s, i);
        if (length == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(s, i, length);
            i += length;
        }
    }
    return out;
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : valid_utf8(s)) {
        if (c == '"')
            out += "\\\"";
        else if (c == '\\')
            out += "\\\\";
        else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

const char* json_kind_name(Json::Kind kind) {
    switch (kind) {
        case Json::Kind::Object:
            return "an object";
        case Json::Kind::Array:
            return "an array";
        case Json::Kind::String:
            return "a string";
        case Json::Kind::Integer:
            return "an integer";
    }
    return "a value";
}

namespace {

class JsonReader {
public:
    JsonReader(const std::string& text, const std::string& where) : text_(text), where_(where) {}

    Json parse_document() {
        Json value = parse_value(0);
        skip_space();
        if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "' after the JSON object");
        return value;
    }

private:
    // Deep enough for any header, shallow enough that "[[[[..." cannot exhaust the stack.
    static constexpr int kMaxDepth = 32;

    [[noreturn]] void fail(const std::string& problem) const {
        patchgrad::fail(where_, ": invalid JSON header at byte ", pos_, " of the header: ", problem);
    }

    void skip_space() {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
            ++pos_;
    }

    void expect(char c) {
        skip_space();
        if (pos_ >= text_.size()) fail(std::string("expected '") + c + "' but the header ended");
        if (text_[pos_] != c) fail(std::string("expected '") + c + "' but found '" + text_[pos_] + "'");
        ++pos_;
    }

    Json parse_value(int depth) {
        if (depth > kMaxDepth) fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
        skip_space();
        if (pos_ >= text_.size()) fail("expected a value but the header ended");
        const char c = text_[pos_];
        if (c == '{') return parse_object(depth);
        if (c == '[') return parse_array(depth);
        if (c == '"') {
            Json s;
            s.kind = Json::Kind::String;
            s.offset = pos_;
            s.string = parse_string();
            return s;
        }
        if (c == '-' || (c >= '0' && c <= '9')) return parse_integer();
        fail("unexpected '" + std::string(1, c) +
             "' (a safetensors header holds only objects, arrays, strings and integers)");
    }

    Json parse_object(int depth) {
        Json obj;
        obj.kind = Json::Kind::Object;
        obj.offset = pos_;
        expect('{');
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == '}') {
            ++pos_;
            return obj;
        }
        std::vector<size_t> key_offsets;  // where each key starts, for the duplicate-key message
        while (true) {
            skip_space();
            if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a quoted key");
            key_offsets.push_back(pos_);
            obj.keys.push_back(parse_string());
            expect(':');
            obj.items.push_back(parse_value(depth + 1));
            skip_space();
            if (pos_ < text_.size() && text_[pos_] == ',') {
                ++pos_;
                continue;
            }
            expect('}');
            check_unique_keys(obj, key_offsets);
            return obj;
        }
    }

    // Sorting the keys' positions by key puts equal keys side by side: O(n log n) for n keys,
    // where comparing each key with all before it takes quadratic time (seconds for 100,000 keys).
    // Of all repeated keys, the one that comes first in the header is reported, at its offset.
    void check_unique_keys(const Json& obj, const std::vector<size_t>& key_offsets) {
        std::vector<size_t> order(obj.keys.size());
        std::iota(order.begin(), order.end(), size_t(0));
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return obj.keys[a] < obj.keys[b]; });
        size_t first_repeat = order.size();
        for (size_t i = 1; i < order.size(); ++i)
            if (obj.keys[order[i]] == obj.keys[order[i - 1]]) first_repeat = std::min(first_repeat, order[i]);
        if (first_repeat == order.size()) return;
        pos_ = key_offsets[first_repeat];
        fail("duplicate key \"" + obj.keys[first_repeat] + "\"");
    }

    Json parse_array(int depth) {
        Json arr;
        arr.kind = Json::Kind::Array;
        arr.offset = pos_;
        expect('[');
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == ']') {
            ++pos_;
            return arr;
        }
        while (true) {
            arr.items.push_back(parse_value(depth + 1));
            skip_space();
            if (pos_ < text_.size() && text_[pos_] == ',') {
                ++pos_;
                continue;
            }
            expect(']');
            return arr;
        }
    }

    Json parse_integer() {
        Json num;
        num.kind = Json::Kind::Integer;
        num.offset = pos_;
        const bool negative = text_[pos_] == '-';
        if (negative) ++pos_;
        if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') fail("expected a digit");
        uint64_t magnitude = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            const uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
            if (magnitude > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) / 10)
                fail("integer too large");
            magnitude = magnitude * 10 + digit;
            ++pos_;
        }
        if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
            fail("expected an integer, found a fractional number");
        num.integer = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
        return num;
    }

    unsigned parse_hex4() {
        if (text_.size() - pos_ < 4) fail("\\u escape cut short");
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
            const char h = text_[pos_++];
            code <<= 4;
            if (h >= '0' && h <= '9')
                code |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
                code |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                code |= static_cast<unsigned>(h - 'A' + 10);
            else
                fail("bad hex digit in \\u escape");
        }
        return code;
    }

    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::string parse_string() {
        ++pos_;  // the opening quote
        std::string out;
        while (true) {
            if (pos_ >= text_.size()) fail("unterminated string");
            const char c = text_[pos_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) {
                --pos_;
                fail("control character in a string");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= text_.size()) fail("unterminated string");
            const char e = text_[pos_++];
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    unsigned cp = parse_hex4();
                    // A character outside the Basic Multilingual Plane is a surrogate pair.
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        if (text_.compare(pos_, 2, "\\u") != 0) fail("lone high surrogate in \\u escape");
                        pos_ += 2;
                        const unsigned low = parse_hex4();
                        if (low < 0xDC00 || low > 0xDFFF) fail("bad low surrogate in \\u escape");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        fail("lone low surrogate in \\u escape");
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    --pos_;
                    fail(std::string("unknown escape \\") + e);
            }
        }
    }

    const std::string& text_;
    const std::string& where_;
    size_t pos_ = 0;
};

}  // namespace

Json read_json(const std::string& text, const std::string& where) { return JsonReader(text, where).parse_document(); }

}  // namespace patchgrad
