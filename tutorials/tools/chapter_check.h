// chapter_check.h — the rules that keep the tutorials' Markdown equal to the real code.
//
// A chapter (tutorials/NN_slug/README.md) shows code and program output in fenced blocks,
// each preceded (on the previous non-blank line) by a marker comment:
//     <!-- snippet: autograd/ops/gelu.cpp#gelu-backward -->   the block equals the source region
//                                                          between `// [snippet:gelu-backward]`
//                                                          and `// [/snippet:gelu-backward]`
//     <!-- not-compiled: REASON -->                        a C++ sketch that is not real code
//     <!-- output: tutorial_05_patches [numbers-vary] -->  the block appears in the program's stdout
// Every ```cpp block needs a snippet or not-compiled marker. This header holds the parsing and
// matching logic, free of files and processes, so tests/tutorials/test_check_chapter.cpp can
// test it directly; tutorials/tools/check_chapter.cpp (the CTest driver) and grade.cpp use it.
// Header-only so that the float64 test binary needs no extra library.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace patchgrad::tutorials {

// One problem found in a chapter: "<file>:<line>: <marker>: <message>", one line.
struct Problem {
    std::string file;
    int line = 0;  // 1-based; 0 = the whole file
    std::string marker;
    std::string message;
    std::string str() const {
        std::string s = file;
        if (line > 0) s += ":" + std::to_string(line);
        s += ": ";
        if (!marker.empty()) s += marker + ": ";
        return s + message;
    }
};

inline std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(line);
        start = end + 1;
    }
    return lines;
}

inline std::string rtrim(const std::string& s) {
    size_t end = s.find_last_not_of(" \t\r");
    return end == std::string::npos ? std::string() : s.substr(0, end + 1);
}

inline std::string trim(const std::string& s) {
    const std::string r = rtrim(s);
    const size_t begin = r.find_first_not_of(" \t");
    return begin == std::string::npos ? std::string() : r.substr(begin);
}

inline bool is_blank(const std::string& s) { return trim(s).empty(); }

// Removes the indentation common to every non-blank line, trailing whitespace, and leading
// and trailing blank lines.
inline std::vector<std::string> dedent(std::vector<std::string> lines) {
    for (auto& l : lines) l = rtrim(l);
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    while (!lines.empty() && lines.front().empty()) lines.erase(lines.begin());
    size_t common = std::string::npos;
    for (const auto& l : lines)
        if (!l.empty()) common = std::min(common, l.find_first_not_of(" \t"));
    if (common == std::string::npos) return lines;
    for (auto& l : lines)
        if (!l.empty()) l = l.substr(common);
    return lines;
}

// Quotes a line for an error message; long lines are cut.
inline std::string quote_line(const std::string& s) {
    std::string t = trim(s);
    if (t.size() > 100) t = t.substr(0, 97) + "...";
    return "\"" + t + "\"";
}

// ---------------------------------------------------------------------------------------------
// Regions in source files: `// [KIND:NAME]` ... `// [/KIND:NAME]`, KIND = snippet or exercise.
// A marker is a line holding nothing but the comment (indentation and trailing spaces allowed).
// `// [hide:NAME]` ... `// [/hide:NAME]` marks what a handout leaves out when it hands out
// exercise NAME (tutorials/scripts/handout.sh): its marker lines are markers (a snippet skips
// them), but it is no region here.

struct MarkerLine {
    bool closing = false;
    std::string kind;  // "snippet", "exercise" or "hide"
    std::string name;
};

inline bool valid_region_name(const std::string& name) {
    if (name.empty()) return false;
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

inline std::optional<MarkerLine> parse_marker_line(const std::string& line) {
    const std::string t = trim(line);
    if (t.rfind("// [", 0) != 0 || t.back() != ']') return std::nullopt;
    std::string body = t.substr(4, t.size() - 5);
    MarkerLine m;
    if (!body.empty() && body[0] == '/') {
        m.closing = true;
        body = body.substr(1);
    }
    const size_t colon = body.find(':');
    if (colon == std::string::npos) return std::nullopt;
    m.kind = body.substr(0, colon);
    m.name = body.substr(colon + 1);
    if (m.kind != "snippet" && m.kind != "exercise" && m.kind != "hide") return std::nullopt;
    return m;
}

inline bool is_region_marker(const std::string& line) { return parse_marker_line(line).has_value(); }

struct Region {
    std::string kind, name;
    int begin_line = 0, end_line = 0;  // 1-based lines of the opening and closing markers
};

// Every region of `text` (the file `path`), with problems for unbalanced, nested-same-name,
// duplicate or badly named markers.
inline std::vector<Region> find_regions(const std::string& text, const std::string& path,
                                        std::vector<Problem>& problems) {
    const std::vector<std::string> lines = split_lines(text);
    std::vector<Region> done, open;
    for (size_t i = 0; i < lines.size(); ++i) {
        const auto m = parse_marker_line(lines[i]);
        if (!m || m->kind == "hide") continue;
        const int line = static_cast<int>(i) + 1;
        const std::string marker = "// [" + std::string(m->closing ? "/" : "") + m->kind + ":" + m->name + "]";
        if (!valid_region_name(m->name)) {
            problems.push_back({path, line, marker, "region names use a-z, 0-9 and '-' only"});
            continue;
        }
        auto same = [&](const Region& r) { return r.kind == m->kind && r.name == m->name; };
        if (!m->closing) {
            if (std::any_of(open.begin(), open.end(), same) || std::any_of(done.begin(), done.end(), same)) {
                problems.push_back(
                    {path, line, marker,
                     "duplicate region: " + m->kind + " '" + m->name + "' is opened a second time in this file"});
                continue;
            }
            open.push_back({m->kind, m->name, line, 0});
        } else {
            auto it = std::find_if(open.begin(), open.end(), same);
            if (it == open.end()) {
                problems.push_back({path, line, marker, "closes a region that is not open"});
                continue;
            }
            it->end_line = line;
            done.push_back(*it);
            open.erase(it);
        }
    }
    for (const Region& r : open)
        problems.push_back({path, r.begin_line, "// [" + r.kind + ":" + r.name + "]",
                            "region is never closed (expected a line `// [/" + r.kind + ":" + r.name + "]`)"});
    for (size_t a = 0; a < done.size(); ++a)
        for (size_t b = a + 1; b < done.size(); ++b)
            if (done[a].kind == "exercise" && done[b].kind == "exercise" && done[a].begin_line < done[b].end_line &&
                done[b].begin_line < done[a].end_line)
                problems.push_back({path, std::max(done[a].begin_line, done[b].begin_line), "exercise",
                                    "exercise regions '" + done[a].name + "' and '" + done[b].name + "' overlap"});
    std::sort(done.begin(), done.end(), [](const Region& a, const Region& b) { return a.begin_line < b.begin_line; });
    return done;
}

// The one line a chapter shows in place of an exercise region's code: a chapter never prints
// the answer to one of its exercises (the checker enforces it, since a snippet must equal this).
inline std::string elided_exercise_line(const std::string& indent, const std::string& name) {
    return indent + "// ... exercise " + name + ": you write this part (see the chapter's Exercises) ...";
}

// The lines of snippet `name` in `text`, dedented; marker lines of other regions inside it are
// left out, and the code of an exercise region inside it is replaced by one
// elided_exercise_line (so is the part of a snippet that lies inside an exercise). `line_numbers`
// receives the 1-based line in `text` of each returned line. Empty optional + a problem when the
// region is missing or malformed.
inline std::optional<std::vector<std::string>> extract_snippet(const std::string& text, const std::string& path,
                                                               const std::string& name, std::vector<Problem>& problems,
                                                               std::vector<int>* line_numbers = nullptr) {
    std::vector<Problem> region_problems;
    const std::vector<Region> regions = find_regions(text, path, region_problems);
    for (const Problem& p : region_problems)
        if (p.marker.find(":" + name + "]") != std::string::npos && p.marker.find("snippet") != std::string::npos) {
            problems.push_back(p);
            return std::nullopt;
        }
    auto it = std::find_if(regions.begin(), regions.end(),
                           [&](const Region& r) { return r.kind == "snippet" && r.name == name; });
    if (it == regions.end()) {
        problems.push_back({path, 0, "// [snippet:" + name + "]", "no such region in this file"});
        return std::nullopt;
    }
    // The exercise whose code 1-based line `line` is (strictly between its markers), if any.
    auto exercise_at = [&](int line) -> const Region* {
        for (const Region& r : regions)
            if (r.kind == "exercise" && r.begin_line < line && line < r.end_line) return &r;
        return nullptr;
    };
    const std::vector<std::string> lines = split_lines(text);
    std::vector<std::string> out;
    std::vector<int> numbers;
    const Region* elided = nullptr;                            // the exercise whose elision line was emitted last
    for (int i = it->begin_line; i < it->end_line - 1; ++i) {  // 0-based i is line i + 1
        const Region* exercise = exercise_at(i + 1);
        if (exercise) {
            if (exercise != elided && !is_blank(lines[i])) {
                const std::string& l = lines[i];
                out.push_back(elided_exercise_line(l.substr(0, l.find_first_not_of(" \t")), exercise->name));
                numbers.push_back(i + 1);
                elided = exercise;
            }
            continue;
        }
        if (is_region_marker(lines[i])) continue;
        out.push_back(lines[i]);
        numbers.push_back(i + 1);
    }
    // dedent() drops the leading and trailing blank lines: drop their numbers too.
    size_t lead = 0;
    while (lead < out.size() && is_blank(out[lead])) ++lead;
    out = dedent(out);
    if (line_numbers) *line_numbers = std::vector<int>(numbers.begin() + lead, numbers.begin() + lead + out.size());
    return out;
}

// ---------------------------------------------------------------------------------------------
// Markdown: fenced blocks and the marker before each.

struct Fence {
    int open_line = 0;  // 1-based line of the opening ```
    std::string info;   // the info string ("cpp", "text", ...)
    std::vector<std::string> body;
    int marker_line = 0;      // 1-based line of the marker comment, 0 = none
    std::string marker_kind;  // "snippet", "not-compiled", "output" or "" (none)
    std::string marker_arg;   // what follows "<kind>:" in the marker, trimmed
    std::string marker_text;  // the marker as written
};

// `<!-- kind: arg -->` on one line; nullopt for anything else.
inline std::optional<std::pair<std::string, std::string>> parse_html_marker(const std::string& line) {
    const std::string t = trim(line);
    if (t.rfind("<!--", 0) != 0 || t.size() < 7 || t.compare(t.size() - 3, 3, "-->") != 0) return std::nullopt;
    const std::string inner = trim(t.substr(4, t.size() - 7));
    const size_t colon = inner.find(':');
    if (colon == std::string::npos) return std::nullopt;
    const std::string kind = trim(inner.substr(0, colon));
    if (kind != "snippet" && kind != "not-compiled" && kind != "output") return std::nullopt;
    return std::make_pair(kind, trim(inner.substr(colon + 1)));
}

inline bool is_cpp_info(const std::string& info) {
    std::string lang = info.substr(0, info.find_first_of(" \t{"));
    std::transform(lang.begin(), lang.end(), lang.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return lang == "cpp" || lang == "c++" || lang == "cxx" || lang == "cc" || lang == "hpp";
}

// A snippet block to be rewritten: fence `fence_index`'s body becomes `region`.
struct SnippetFix {
    size_t fence_index;
    std::vector<std::string> region;
};

// Parses the fences of `markdown` (file `path`); problems for unclosed fences and markers that
// are not followed by a fence.
inline std::vector<Fence> parse_fences(const std::string& markdown, const std::string& path,
                                       std::vector<Problem>& problems) {
    const std::vector<std::string> lines = split_lines(markdown);
    std::vector<Fence> fences;
    int pending_marker = 0;  // line of a marker still waiting for its fence
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& raw = lines[i];
        const std::string t = trim(raw);
        if (t.empty()) continue;
        if (t.rfind("```", 0) == 0) {
            const size_t ticks = t.find_first_not_of('`') == std::string::npos ? t.size() : t.find_first_not_of('`');
            const size_t indent = raw.find_first_not_of(" \t");
            Fence f;
            f.open_line = static_cast<int>(i) + 1;
            f.info = trim(t.substr(ticks));
            if (pending_marker) {
                const auto m = parse_html_marker(lines[pending_marker - 1]);
                f.marker_line = pending_marker;
                f.marker_kind = m->first;
                f.marker_arg = m->second;
                f.marker_text = trim(lines[pending_marker - 1]);
                pending_marker = 0;
            }
            size_t j = i + 1;
            bool closed = false;
            for (; j < lines.size(); ++j) {
                const std::string tj = trim(lines[j]);
                if (tj.size() >= ticks && tj.find_first_not_of('`') == std::string::npos) {
                    closed = true;
                    break;
                }
                // Fences inside list items are indented: drop the fence's own indentation.
                std::string body = lines[j];
                const size_t drop = std::min(indent, body.find_first_not_of(" \t") == std::string::npos
                                                         ? body.size()
                                                         : body.find_first_not_of(" \t"));
                f.body.push_back(body.substr(drop));
            }
            if (!closed) problems.push_back({path, f.open_line, "```" + f.info, "code fence is never closed"});
            fences.push_back(f);
            i = j;
            continue;
        }
        if (pending_marker) {
            problems.push_back(
                {path, pending_marker, trim(lines[pending_marker - 1]),
                 "marker is not followed by a fenced block (the next non-blank line is " + quote_line(raw) + ")"});
            pending_marker = 0;
        }
        if (parse_html_marker(raw)) pending_marker = static_cast<int>(i) + 1;
    }
    if (pending_marker)
        problems.push_back({path, pending_marker, trim(lines[pending_marker - 1]),
                            "marker at the end of the file is not followed by a fenced block"});
    return fences;
}

// `markdown` with the bodies of the fences in `fixes` replaced by their regions (`fences` as
// parse_fences found them), each line given its fence's indentation (fences in list items are
// indented). Every line ends in a newline.
inline std::string with_snippets_replaced(const std::string& markdown, const std::vector<Fence>& fences,
                                          const std::vector<SnippetFix>& fixes) {
    std::vector<std::string> lines = split_lines(markdown);
    std::vector<SnippetFix> order = fixes;  // from the last fence up, so line numbers stay valid
    std::sort(order.begin(), order.end(),
              [](const SnippetFix& a, const SnippetFix& b) { return a.fence_index > b.fence_index; });
    for (const SnippetFix& fix : order) {
        const Fence& f = fences[fix.fence_index];
        const std::string& open = lines[static_cast<size_t>(f.open_line) - 1];
        const std::string indent = open.substr(0, open.find_first_not_of(" \t"));
        std::vector<std::string> body;
        for (const std::string& line : fix.region) body.push_back(line.empty() ? line : indent + line);
        const auto first = lines.begin() + f.open_line;  // the line after the opening fence
        lines.erase(first, first + static_cast<std::ptrdiff_t>(f.body.size()));
        lines.insert(lines.begin() + f.open_line, body.begin(), body.end());
    }
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    return text;
}

// Rule (a): every C++ block carries a snippet or not-compiled marker.
inline void check_cpp_fences_marked(const std::vector<Fence>& fences, const std::string& path,
                                    std::vector<Problem>& problems) {
    for (const Fence& f : fences) {
        if (!is_cpp_info(f.info)) continue;
        if (f.marker_kind == "snippet") continue;
        if (f.marker_kind == "not-compiled") {
            if (f.marker_arg.empty())
                problems.push_back({path, f.marker_line, f.marker_text, "not-compiled needs a reason"});
            continue;
        }
        problems.push_back({path, f.open_line, "```" + f.info,
                            "C++ block without a marker: put `<!-- snippet: PATH#NAME -->` or "
                            "`<!-- not-compiled: REASON -->` on the line before it"});
    }
}

// Rule (f): a chapter never shows the code of an exercise, in a snippet (extract_snippet elides
// it) or anywhere else. A line is compared by its significant text: trimmed, runs of spaces
// collapsed, "" for blank lines, comments and lines too short to give anything away (braces,
// `return out;`).
inline std::string significant_code(const std::string& line) {
    std::string t;
    for (char c : trim(line)) {
        if (c == ' ' || c == '\t') {
            if (!t.empty() && t.back() != ' ') t += ' ';
        } else {
            t += c;
        }
    }
    if (t.rfind("//", 0) == 0 || t.size() < 16) t.clear();
    return t;
}

// The 0-based index in `block` where three consecutive significant lines of `exercise` (its
// reference code) appear as consecutive significant lines (all of them when it has fewer);
// -1 when the block shows none of it. (Two are too few: `const real* dout = o.grad_data();`
// and `real* ga = a.grad_data();` open many backward passes.)
inline int shows_exercise_code(const std::vector<std::string>& block, const std::vector<std::string>& exercise) {
    std::vector<std::string> code;
    for (const std::string& l : exercise)
        if (!significant_code(l).empty()) code.push_back(significant_code(l));
    if (code.empty()) return -1;
    std::vector<std::pair<int, std::string>> shown;  // (index in block, significant text)
    for (size_t i = 0; i < block.size(); ++i)
        if (!significant_code(block[i]).empty()) shown.push_back({static_cast<int>(i), significant_code(block[i])});
    const size_t window = std::min<size_t>(3, code.size());
    for (size_t i = 0; i + window <= shown.size(); ++i)
        for (size_t j = 0; j + window <= code.size(); ++j) {
            size_t k = 0;
            while (k < window && shown[i + k].second == code[j + k]) ++k;
            if (k == window) return shown[i].first;
        }
    return -1;
}

// Rule (b): a snippet block equals the region. `source_display` names the source in messages,
// `region_lines` holds the source line of each region line (for pointing at the differing line).
inline void compare_snippet(const Fence& fence, const std::vector<std::string>& region, const std::string& path,
                            const std::string& source_display, const std::vector<int>& region_lines,
                            std::vector<Problem>& problems) {
    const std::vector<std::string> block = dedent(fence.body);
    const size_t n = std::min(block.size(), region.size());
    auto block_line = [&](size_t k) {
        // Locate the k-th dedented line in the Markdown: skip the leading blank lines dedent dropped.
        size_t lead = 0;
        while (lead < fence.body.size() && is_blank(fence.body[lead])) ++lead;
        return fence.open_line + 1 + static_cast<int>(lead + k);
    };
    auto source_line = [&](size_t k) {
        return k < region_lines.size() ? source_display + ":" + std::to_string(region_lines[k]) : source_display;
    };
    for (size_t k = 0; k < n; ++k) {
        if (block[k] != region[k]) {
            problems.push_back({path, block_line(k), fence.marker_text,
                                "block line " + std::to_string(k + 1) + " differs from " + source_line(k) +
                                    " (the source may have changed): expected " + quote_line(region[k]) +
                                    ", the chapter has " + quote_line(block[k])});
            return;
        }
    }
    if (block.size() < region.size())
        problems.push_back({path, block_line(block.size()), fence.marker_text,
                            "the block has " + std::to_string(block.size()) + " lines, the region " +
                                std::to_string(region.size()) + ": the chapter is missing " + source_line(n) + " " +
                                quote_line(region[n])});
    else if (block.size() > region.size())
        problems.push_back({path, block_line(n), fence.marker_text,
                            "the block has " + std::to_string(block.size()) + " lines, the region " +
                                std::to_string(region.size()) + ": the chapter has an extra line " +
                                quote_line(block[n])});
}

// ---------------------------------------------------------------------------------------------
// Output blocks: tokens, line matching and finding a block in the program's stdout.

struct Token {
    bool number = false;
    double value = 0;
    std::string text;
};

// Splits a line into numbers, words ([A-Za-z_][A-Za-z0-9_]*) and single punctuation
// characters; whitespace only separates. "32x32" is 32, x, 32; "12.5ms" is 12.5, ms;
// "-1.5e-3" one number; "f64" one word.
inline std::vector<Token> tokenize(const std::string& line) {
    std::vector<Token> tokens;
    auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    auto is_alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    const size_t n = line.size();
    size_t i = 0;
    bool after_number = false;  // the previous token is a number ending right here
    while (i < n) {
        const char c = line[i];
        if (c == ' ' || c == '\t' || c == '\r') {
            ++i;
            after_number = false;
            continue;
        }
        auto digit_at = [&](size_t k) { return k < n && is_digit(line[k]); };
        const bool prev_word_char = i > 0 && (is_alpha(line[i - 1]) || is_digit(line[i - 1]) || line[i - 1] == ')' ||
                                              line[i - 1] == ']' || line[i - 1] == '.');
        size_t k = i;
        if ((c == '-' || c == '+') && !prev_word_char) ++k;  // unary sign
        const bool starts_number = digit_at(k) || (k < n && line[k] == '.' && digit_at(k + 1));
        if (starts_number) {
            while (digit_at(k)) ++k;
            if (k < n && line[k] == '.') {
                ++k;
                while (digit_at(k)) ++k;
            }
            if (k < n && (line[k] == 'e' || line[k] == 'E')) {
                size_t e = k + 1;
                if (e < n && (line[e] == '+' || line[e] == '-')) ++e;
                if (digit_at(e)) {
                    k = e;
                    while (digit_at(k)) ++k;
                }
            }
            Token t;
            t.number = true;
            t.text = line.substr(i, k - i);
            t.value = std::strtod(t.text.c_str(), nullptr);
            tokens.push_back(t);
            i = k;
            after_number = true;
            continue;
        }
        if (is_alpha(c) || is_digit(c)) {
            size_t e = i;
            while (e < n && (is_alpha(line[e]) || (!after_number && is_digit(line[e])))) ++e;
            tokens.push_back({false, 0, line.substr(i, e - i)});
            i = e;
            after_number = false;
            continue;
        }
        tokens.push_back({false, 0, std::string(1, c)});
        ++i;
        after_number = false;
    }
    return tokens;
}

inline bool numbers_close(double expected, double actual) {
    if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
    const double diff = std::abs(expected - actual);
    return diff <= 1e-9 || diff <= 1e-6 * std::max(std::abs(expected), std::abs(actual));
}

// Does the chapter's `expected` line match the program's `actual` line? Numbers within
// relative 1e-6 (absolute 1e-9 near zero), or any number when `numbers_vary`; every other
// token equal; spacing between tokens is not compared. `why` explains a mismatch.
inline bool lines_match(const std::string& expected, const std::string& actual, bool numbers_vary,
                        std::string* why = nullptr) {
    const std::vector<Token> e = tokenize(expected), a = tokenize(actual);
    for (size_t k = 0; k < std::max(e.size(), a.size()); ++k) {
        if (k >= e.size() || k >= a.size()) {
            if (why)
                *why = k >= e.size() ? "the program's line goes on with \"" + a[k].text + "\""
                                     : "the program's line ends before \"" + e[k].text + "\"";
            return false;
        }
        if (e[k].number && a[k].number) {
            if (numbers_vary || numbers_close(e[k].value, a[k].value)) continue;
            if (why) *why = "number " + e[k].text + " differs from the program's " + a[k].text;
            return false;
        }
        if (e[k].number != a[k].number || e[k].text != a[k].text) {
            if (why) *why = "\"" + e[k].text + "\" differs from the program's \"" + a[k].text + "\"";
            return false;
        }
    }
    return true;
}

struct OutputMatch {
    bool found = false;
    size_t at = 0;  // index in stdout of the block's first line, when found
    // When not found: the best partial match, to explain the difference.
    size_t best_at = 0;   // stdout index where the longest run of leading block lines matched
    size_t best_len = 0;  // how many leading lines matched there
};

// Looks for `block` (trailing blank lines ignored) as a contiguous run of `output`'s lines at
// index >= `from`.
inline OutputMatch find_block(const std::vector<std::string>& block, const std::vector<std::string>& output,
                              size_t from, bool numbers_vary) {
    OutputMatch m;
    if (block.empty()) {
        m.found = true;
        m.at = from;
        return m;
    }
    for (size_t s = from; s < output.size(); ++s) {
        size_t len = 0;
        while (len < block.size() && s + len < output.size() && lines_match(block[len], output[s + len], numbers_vary))
            ++len;
        if (len == block.size()) {
            m.found = true;
            m.at = s;
            return m;
        }
        if (len > m.best_len) {
            m.best_len = len;
            m.best_at = s;
        }
    }
    return m;
}

// Where an output block was found: fences[fence] is output lines [at, at + size).
struct BlockMatch {
    size_t fence = 0, at = 0, size = 0;
};

// Rule (c): the output blocks of `fences` appear in `output` in order. `target` is the chapter's
// program target name; `output_name` names the captured stdout in messages. Returns the blocks
// found.
inline std::vector<BlockMatch> check_output_blocks(const std::vector<Fence>& fences,
                                                   const std::vector<std::string>& output, const std::string& target,
                                                   const std::string& path, const std::string& output_name,
                                                   std::vector<Problem>& problems) {
    std::vector<BlockMatch> found;
    size_t from = 0;
    for (size_t index = 0; index < fences.size(); ++index) {
        const Fence& f = fences[index];
        if (f.marker_kind != "output") continue;
        std::string arg = f.marker_arg;
        bool vary = false;
        const size_t space = arg.find_first_of(" \t");
        std::string rest;
        if (space != std::string::npos) {
            rest = trim(arg.substr(space));
            arg = arg.substr(0, space);
        }
        if (rest == "numbers-vary") {
            vary = true;
        } else if (!rest.empty()) {
            problems.push_back({path, f.marker_line, f.marker_text,
                                "unknown option \"" + rest + "\" (the only option is numbers-vary)"});
            continue;
        }
        if (arg != target) {
            problems.push_back({path, f.marker_line, f.marker_text,
                                "output of \"" + arg + "\", but this chapter's program is " +
                                    (target.empty() ? std::string("missing (no main.cpp)") : target)});
            continue;
        }
        std::vector<std::string> block = f.body;
        while (!block.empty() && is_blank(block.back())) block.pop_back();
        const OutputMatch m = find_block(block, output, from, vary);
        if (m.found) {
            from = m.at + block.size();
            found.push_back({index, m.at, block.size()});
            continue;
        }
        const OutputMatch anywhere = from > 0 ? find_block(block, output, 0, vary) : OutputMatch{};
        if (anywhere.found) {
            problems.push_back({path, f.open_line + 1, f.marker_text,
                                "the block appears in the program's output (line " + std::to_string(anywhere.at + 1) +
                                    ") but before the previous block's match (line " + std::to_string(from) +
                                    "): blocks must follow the output's order"});
            continue;
        }
        if (m.best_len == 0) {
            // Not even the first line matched: show the output line that agrees longest with it.
            const std::vector<Token> want = tokenize(block[0]);
            size_t closest = output.size(), closest_len = 0;
            for (size_t s = from; s < output.size(); ++s) {
                const std::vector<Token> have = tokenize(output[s]);
                size_t len = 0;
                while (len < want.size() && len < have.size() && want[len].number == have[len].number &&
                       (want[len].number ? vary || numbers_close(want[len].value, have[len].value)
                                         : want[len].text == have[len].text))
                    ++len;
                if (len > closest_len) {
                    closest = s;
                    closest_len = len;
                }
            }
            std::string hint;
            if (closest < output.size()) {
                std::string why;
                lines_match(block[0], output[closest], vary, &why);
                hint = "; the closest is line " + std::to_string(closest + 1) + " " + quote_line(output[closest]) +
                       " (" + why + ")";
            }
            problems.push_back({path, f.open_line + 1, f.marker_text,
                                "the block's first line " + quote_line(block[0]) + " is not in " + output_name +
                                    (from > 0 ? " after line " + std::to_string(from) : std::string()) + " (" +
                                    std::to_string(output.size()) + " lines)" + hint});
            continue;
        }
        const size_t k = m.best_len;
        const size_t out_line = m.best_at + k;
        std::string why;
        if (out_line < output.size()) lines_match(block[k], output[out_line], vary, &why);
        problems.push_back({path, f.open_line + 1 + static_cast<int>(k), f.marker_text,
                            "block line " + std::to_string(k + 1) + " differs from " + output_name + " line " +
                                std::to_string(out_line + 1) + ": expected " + quote_line(block[k]) +
                                ", the program printed " +
                                (out_line < output.size() ? quote_line(output[out_line]) + " (" + why + ")"
                                                          : std::string("nothing more"))});
    }
    return found;
}

// The lines of `markdown` outside fenced blocks, with their 1-based numbers. A fence may stand
// in a blockquote ("> ```python").
inline std::vector<std::pair<int, std::string>> prose_lines(const std::string& markdown) {
    std::vector<std::pair<int, std::string>> prose;
    const std::vector<std::string> lines = split_lines(markdown);
    bool in_fence = false;
    for (size_t i = 0; i < lines.size(); ++i) {
        const size_t text = lines[i].find_first_not_of(" >");
        if (text != std::string::npos && lines[i].compare(text, 3, "```") == 0) {
            in_fence = !in_fence;
            continue;
        }
        if (!in_fence) prose.push_back({static_cast<int>(i) + 1, lines[i]});
    }
    return prose;
}

// Relative links and images in the Markdown ([text](path), ![alt](path)) outside code: the
// targets that must exist, with their lines. http(s)/mailto links and #anchors are skipped.
inline std::vector<std::pair<int, std::string>> local_links(const std::string& markdown) {
    std::vector<std::pair<int, std::string>> links;
    for (const auto& [number, text] : prose_lines(markdown)) {
        // Drop inline code spans so `a[i](x)` in code is not a link.
        std::string line;
        bool in_code = false;
        for (char c : text) {
            if (c == '`')
                in_code = !in_code;
            else if (!in_code)
                line += c;
        }
        for (size_t p = line.find("]("); p != std::string::npos; p = line.find("](", p + 2)) {
            const size_t end = line.find(')', p + 2);
            if (end == std::string::npos) break;
            std::string target = trim(line.substr(p + 2, end - p - 2));
            const size_t space = target.find(' ');  // [x](path "title")
            if (space != std::string::npos) target = target.substr(0, space);
            if (target.empty() || target[0] == '#' || target.find("://") != std::string::npos ||
                target.rfind("mailto:", 0) == 0)
                continue;
            const size_t hash = target.find('#');
            if (hash != std::string::npos) target = target.substr(0, hash);
            links.push_back({number, target});
        }
    }
    return links;
}

// ---------------------------------------------------------------------------------------------
// Sections. A chapter's sections are its "## N. Title" or "## C.N Title" headings (C = the
// chapter's number), and its program prints "== N. title ==" where the part that section N
// shows begins. So "section N" means one thing in the text, the program's output and main.cpp.

// Lines joined into one text, each ending in '\n', for scans whose phrases may cross a line
// break ("section\n3"), with the Markdown line (1-based) of every character.
struct JoinedLines {
    std::string text;
    std::vector<int> line_of;
};

inline JoinedLines join_lines(const std::vector<std::pair<int, std::string>>& lines) {
    JoinedLines joined;
    for (const auto& [number, line] : lines) {
        joined.text += line + "\n";
        joined.line_of.resize(joined.text.size(), number);
    }
    return joined;
}

struct Section {
    int line = 0;    // 1-based line of the "## " heading
    int number = 0;  // N of "## N. Title" or "## C.N Title"; 0 when unnumbered ("## Exercises")
};

inline bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
inline bool is_digit_char(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The number (at most 6 digits) at s[i], advancing i past it; -1 when s[i] is no digit.
inline int leading_number(const std::string& s, size_t& i) {
    int n = 0;
    const size_t start = i;
    while (i < s.size() && is_digit_char(s[i]) && i - start < 6) n = 10 * n + (s[i++] - '0');
    return i > start ? n : -1;
}

inline std::vector<Section> chapter_sections(const std::string& markdown) {
    std::vector<Section> sections;
    for (const auto& [line, text] : prose_lines(markdown)) {
        if (text.rfind("## ", 0) != 0) continue;
        Section s{line, 0};
        size_t i = 3;
        const int first = leading_number(text, i);
        if (first >= 0 && i < text.size() && text[i] == '.') {
            ++i;
            const int second = leading_number(text, i);
            s.number = second >= 0 ? second : first;
        }
        sections.push_back(s);
    }
    return sections;
}

// N of a program's heading line "== N. title ==", else 0.
inline int program_heading_number(const std::string& line) {
    const std::string t = trim(line);
    if (t.size() < 8 || t.rfind("== ", 0) != 0 || t.compare(t.size() - 3, 3, " ==") != 0) return 0;
    size_t i = 3;
    const int n = leading_number(t, i);
    return n > 0 && i < t.size() && t[i] == '.' ? n : 0;
}

// The number of the section that markdown line `line` stands in (0: unnumbered or before any).
inline int section_at(const std::vector<Section>& sections, int line) {
    int number = 0;
    for (const Section& s : sections)
        if (s.line < line) number = s.number;
    return number;
}

// Rule (g): a block of output stands in the section of the program's part it comes from: the
// nearest heading above the block's first line, and every heading inside it, carry the number
// of the section the block stands in.
inline void check_block_sections(const std::vector<Fence>& fences, const std::vector<BlockMatch>& found,
                                 const std::vector<std::string>& output, const std::vector<Section>& sections,
                                 const std::string& path, std::vector<Problem>& problems) {
    for (const BlockMatch& m : found) {
        const Fence& f = fences[m.fence];
        const int section = section_at(sections, f.open_line);
        size_t k = std::min(m.at, output.size());
        while (k > 0 && !program_heading_number(output[k - 1])) --k;  // the nearest heading above
        std::vector<size_t> headings;
        if (k > 0 && !(m.at < output.size() && program_heading_number(output[m.at]))) headings.push_back(k - 1);
        for (size_t i = m.at; i < m.at + m.size && i < output.size(); ++i)
            if (program_heading_number(output[i])) headings.push_back(i);
        for (size_t h : headings)
            if (program_heading_number(output[h]) != section)
                problems.push_back({path, f.open_line + 1, f.marker_text,
                                    "the block shows the program's part " + quote_line(output[h]) + " in " +
                                        (section ? "section " + std::to_string(section) : "no numbered section") +
                                        ": number the program's headings like the sections that show them"});
    }
}

// One "section N" (or "section C.N") in a chapter's text.
struct SectionReference {
    int line = 0;
    int number = 0;
    bool program = false;  // "section N of main.cpp", "section N's program": the program's part N
    std::string text;      // as written, for messages
};

// The chapter's references to its own sections: "section 4", "sections 3 and 4", "Section 7.4",
// "section 5 of [main.cpp](main.cpp)". References to other documents are left out: "chapter
// 4's section 2", "section 3.1 of the paper", a C.N whose C is not `chapter`; so is inline code.
inline std::vector<SectionReference> section_references(const std::string& markdown, int chapter) {
    std::vector<SectionReference> refs;
    const JoinedLines prose = join_lines(prose_lines(markdown));
    const std::string& text = prose.text;
    auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
    auto starts_with = [&](size_t i, const std::string& word) {
        if (i + word.size() > text.size()) return false;
        for (size_t k = 0; k < word.size(); ++k)
            if (lower(text[i + k]) != word[k]) return false;
        return true;
    };
    auto skip_space = [&](size_t i) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\n')) ++i;
        return i;
    };
    for (size_t p = 0; p + 7 < text.size(); ++p) {
        if (!starts_with(p, "section") || (p > 0 && is_word_char(text[p - 1]))) continue;
        const size_t line_start = text.rfind('\n', p) == std::string::npos ? 0 : text.rfind('\n', p);
        if (std::count(text.begin() + static_cast<std::ptrdiff_t>(line_start),
                       text.begin() + static_cast<std::ptrdiff_t>(p), '`') %
            2)
            continue;  // inside inline code
        // "chapter 4's section 2", "the paper's section 3": someone else's section.
        if (p >= 3 && text.compare(p - 3, 3, "'s ") == 0) continue;
        size_t i = p + 7;
        if (i < text.size() && text[i] == 's') ++i;
        if (i >= text.size() || (text[i] != ' ' && text[i] != '\n')) continue;
        i = skip_space(i);
        std::vector<std::pair<int, int>> numbers;  // (C or -1, N)
        for (;;) {
            size_t j = i;
            const int a = leading_number(text, j);
            if (a < 0) break;
            int c = -1, n = a;
            if (j + 1 < text.size() && text[j] == '.' && is_digit_char(text[j + 1])) {
                ++j;
                c = a;
                n = leading_number(text, j);
            }
            numbers.push_back({c, n});
            i = j;
            size_t k = i;
            if (k < text.size() && (text[k] == ',' || text[k] == '-'))
                ++k;
            else if (text.compare(k, 3, "\xe2\x80\x93") == 0)
                k += 3;  // an en dash
            k = skip_space(k);
            if (starts_with(k, "and ") || starts_with(k, "to ")) k = skip_space(k + (text[k] == 'a' ? 3 : 2));
            if (k == i || k >= text.size() || !is_digit_char(text[k])) break;
            i = k;
        }
        if (numbers.empty()) continue;
        // What follows: "of main.cpp" / "'s program" is the program's part; "of chapter 3",
        // "of the paper", "in chapter 4" are other documents.
        bool program = starts_with(i, "'s program");
        const size_t k = skip_space(i);
        if (starts_with(k, "of ") || starts_with(k, "in ")) {
            const size_t what = skip_space(k + 3);
            program = starts_with(what, "main.cpp") || starts_with(what, "[main.cpp]") ||
                      starts_with(what, "`main.cpp`") || starts_with(what, "[`main.cpp`]");
            if (!program) continue;
        }
        for (const auto& [c, n] : numbers) {
            if (c >= 0 && c != chapter) continue;
            refs.push_back({prose.line_of[p], n, program, trim(text.substr(p, i - p))});
        }
    }
    return refs;
}

// Rule (h): every "section N" of a chapter exists: a numbered section, and for "section N of
// main.cpp" also a heading of the program's output (when the program ran: `headings`).
inline void check_section_references(const std::vector<SectionReference>& refs, const std::vector<Section>& sections,
                                     const std::optional<std::vector<int>>& headings, const std::string& path,
                                     std::vector<Problem>& problems) {
    std::string numbers;
    for (const Section& s : sections)
        if (s.number) numbers += (numbers.empty() ? "" : ", ") + std::to_string(s.number);
    for (const SectionReference& r : refs) {
        const bool exists =
            std::any_of(sections.begin(), sections.end(), [&](const Section& s) { return s.number == r.number; });
        if (!exists)
            problems.push_back({path, r.line, "\"" + r.text + "\"",
                                "the chapter has no section " + std::to_string(r.number) + " (its sections: " +
                                    (numbers.empty() ? std::string("none numbered") : numbers) + ")"});
        else if (r.program && headings && std::find(headings->begin(), headings->end(), r.number) == headings->end())
            problems.push_back({path, r.line, "\"" + r.text + "\"",
                                "the program prints no heading \"== " + std::to_string(r.number) + ". ... ==\""});
    }
}

// The files that may hold exercise regions: the .cpp files of the four libraries (their job
// folders included) and the chapters' programs, sorted.
inline std::vector<std::filesystem::path> exercise_source_files(const std::filesystem::path& root) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    std::error_code ec;
    for (const char* module : {"autograd", "layers", "vit", "datasets"})
        for (const auto& e : fs::recursive_directory_iterator(root / module, ec))
            if (e.path().extension() == ".cpp") files.push_back(e.path());
    for (const auto& e : fs::directory_iterator(root / "tutorials", ec))
        if (fs::exists(e.path() / "main.cpp")) files.push_back(e.path() / "main.cpp");
    std::sort(files.begin(), files.end());
    return files;
}

// ---------------------------------------------------------------------------------------------
// Exercises in the text.

// An exercise region and what the chapters say about it.
struct ExerciseInfo {
    std::string name;
    std::string file;      // relative to the repository root, e.g. "autograd/ops/gelu.cpp"
    std::string function;  // the function the region is in, unqualified ("" when not found)
};

// The function whose body holds line `line` (1-based) of `lines`: the nearest line above it
// that starts in column 0 and names something followed by "(" ("Tensor unfold(...) {",
// "void Tensor::backward(...)", "PATCHGRAD_ALWAYS_INLINE void gelu_backward_loop(...)"), unqualified.
inline std::string enclosing_function(const std::vector<std::string>& lines, int line) {
    for (int i = std::min<int>(line - 1, static_cast<int>(lines.size())) - 1; i >= 0; --i) {
        const std::string& l = lines[static_cast<size_t>(i)];
        if (l.empty() || std::string(" \t}{#/").find(l[0]) != std::string::npos) continue;
        const size_t paren = l.find('(');
        if (paren == std::string::npos) continue;
        size_t begin = paren;
        while (begin > 0 && is_word_char(l[begin - 1])) --begin;
        return l.substr(begin, paren - begin);
    }
    return "";
}

// Rule (i): "exercise `NAME`" and "[ex:NAME]" in a chapter name an exercise that exists (a
// function's name there, `backward_rows`, is not one).
inline void check_exercise_mentions(const std::string& markdown, const std::vector<ExerciseInfo>& exercises,
                                    const std::string& path, std::vector<Problem>& problems) {
    auto known = [&](const std::string& name) {
        return std::any_of(exercises.begin(), exercises.end(), [&](const ExerciseInfo& e) { return e.name == name; });
    };
    std::vector<std::pair<int, std::string>> numbered;  // every line, code blocks included
    for (const std::string& line : split_lines(markdown))
        numbered.push_back({static_cast<int>(numbered.size()) + 1, line});
    const JoinedLines joined = join_lines(numbered);
    const std::string& text = joined.text;
    const std::vector<int>& line_of = joined.line_of;
    for (size_t p = text.find("[ex:"); p != std::string::npos; p = text.find("[ex:", p + 1)) {
        const size_t end = text.find(']', p);
        if (end == std::string::npos) break;
        const std::string name = text.substr(p + 4, end - p - 4);
        if (!known(name))
            problems.push_back({path, line_of[p], "[ex:" + name + "]", "no exercise region is named '" + name + "'"});
    }
    for (size_t p = 0; p < text.size(); ++p) {
        if (text.compare(p, 8, "exercise") != 0 && text.compare(p, 8, "Exercise") != 0) continue;
        if (p > 0 && (is_word_char(text[p - 1]) || text[p - 1] == '`')) continue;
        size_t i = p + 8;
        if (i < text.size() && text[i] == 's') ++i;
        if (i >= text.size() || (text[i] != ' ' && text[i] != '\n')) continue;
        int breaks = 0;  // the name may start the next line, but not a paragraph or a fence later
        while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '*')) breaks += text[i++] == '\n';
        if (breaks > 1 || i >= text.size() || text[i] != '`') continue;
        const size_t end = text.find('`', i + 1);
        if (end == std::string::npos) continue;
        const std::string name = text.substr(i + 1, end - i - 1);
        if (!name.empty() && name.find('\n') == std::string::npos && !known(name))
            problems.push_back({path, line_of[p], "`" + name + "`",
                                "named as an exercise, but no exercise region is named '" + name + "'"});
    }
}

// Rule (j): in the chapter's "## Exercises", the item of exercise NAME (an item, "1. ...",
// "**...", "### ...", whose first line shows `NAME`) names the student's copy `student/FILE`,
// shows the name of the function the region is in, in code, and does not link to FILE: the
// library's file holds the answer. `chapter_dir` is the chapter's folder from the root.
inline void check_exercise_items(const std::string& markdown, const std::string& chapter_dir,
                                 const std::vector<ExerciseInfo>& exercises, const std::string& path,
                                 std::vector<Problem>& problems) {
    const std::vector<std::pair<int, std::string>> prose = prose_lines(markdown);
    size_t begin = 0;
    while (begin < prose.size() && trim(prose[begin].second) != "## Exercises") ++begin;
    if (begin == prose.size()) return;
    size_t end = begin + 1;
    while (end < prose.size() && prose[end].second.rfind("## ", 0) != 0) ++end;
    auto starts_item = [](const std::string& l) {
        size_t i = 0;
        return l.rfind("**", 0) == 0 || l.rfind("### ", 0) == 0 ||
               (leading_number(l, i) >= 0 && l.compare(i, 2, ". ") == 0);
    };
    std::vector<size_t> items;
    for (size_t k = begin + 1; k < end; ++k)
        if (starts_item(prose[k].second)) items.push_back(k);
    items.push_back(end);
    auto code_spans = [](const std::string& text) {
        std::vector<std::string> spans;
        for (size_t a = text.find('`'); a != std::string::npos; a = text.find('`', a + 1)) {
            const size_t b = text.find('`', a + 1);
            if (b == std::string::npos) break;
            spans.push_back(text.substr(a + 1, b - a - 1));
            a = b;
        }
        return spans;
    };
    auto names_word = [](const std::string& text, const std::string& word) {
        for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
            const size_t after = at + word.size();
            if ((at == 0 || !is_word_char(text[at - 1])) && (after == text.size() || !is_word_char(text[after])))
                return true;
        }
        return false;
    };
    for (size_t k = 0; k + 1 < items.size(); ++k) {
        const std::vector<std::string> first = code_spans(prose[items[k]].second);
        if (first.empty()) continue;
        const auto e =
            std::find_if(exercises.begin(), exercises.end(), [&](const ExerciseInfo& x) { return x.name == first[0]; });
        if (e == exercises.end()) continue;
        std::string item;
        for (size_t j = items[k]; j < items[k + 1]; ++j) item += prose[j].second + "\n";
        const int line = prose[items[k]].first;
        const std::string marker = "exercise " + e->name;
        if (item.find("student/" + e->file) == std::string::npos)
            problems.push_back(
                {path, line, marker, "the item does not name the student's copy `student/" + e->file + "`"});
        if (!e->function.empty()) {
            const std::vector<std::string> spans = code_spans(item);
            if (std::none_of(spans.begin(), spans.end(),
                             [&](const std::string& c) { return names_word(c, e->function); }))
                problems.push_back({path, line, marker,
                                    "the item does not name `" + e->function + "`, the function " + e->file +
                                        " holds the exercise in"});
        }
        for (size_t j = items[k]; j < items[k + 1]; ++j)
            for (const auto& link : local_links(prose[j].second)) {
                const std::string& target = link.second;
                if ((std::filesystem::path(chapter_dir) / target).lexically_normal().generic_string() == e->file)
                    problems.push_back({path, prose[j].first, "](" + target + ")",
                                        "links to the library's " + e->file +
                                            ", which holds the answer: name the student's copy `student/" + e->file +
                                            "` instead"});
            }
    }
}

// The chapters tutorials/README.md says end with graded exercises, from its sentence
// "Chapters 1–10 and 12 end with exercises" (numbers, ranges with an en dash or '-', commas,
// "and"); nullopt when it has no such sentence. `line` receives the sentence's first line.
inline std::optional<std::vector<int>> chapters_said_to_have_exercises(const std::string& index, int* line = nullptr) {
    const std::vector<std::string> lines = split_lines(index);
    std::string text;
    std::vector<int> line_of;
    for (size_t i = 0; i < lines.size(); ++i) {
        text += lines[i] + " ";
        line_of.resize(text.size(), static_cast<int>(i) + 1);
    }
    const size_t tail = text.find(" end with exercises");
    if (tail == std::string::npos) return std::nullopt;
    const size_t head = text.rfind("Chapters ", tail);
    if (head == std::string::npos) return std::nullopt;
    if (line) *line = line_of[head];
    std::vector<int> chapters;
    std::string rest = text.substr(head + 9, tail - head - 9);
    for (const std::string& dash : {std::string("\xe2\x80\x93"), std::string("-")})
        for (size_t d = rest.find(dash); d != std::string::npos; d = rest.find(dash, d + 1))
            rest.replace(d, dash.size(), " ~ ");
    size_t i = 0;
    int range_from = -1;
    while (i < rest.size()) {
        if (is_digit_char(rest[i])) {
            const int n = leading_number(rest, i);
            if (range_from >= 0)
                for (int c = range_from + 1; c <= n; ++c) chapters.push_back(c);
            else
                chapters.push_back(n);
            range_from = -1;
        } else if (rest[i] == '~' && !chapters.empty()) {
            range_from = chapters.back();
            ++i;
        } else {
            ++i;
        }
    }
    return chapters;
}

// ---------------------------------------------------------------------------------------------
// Test names quoted in the text. A reader pastes `ViTBlock: errors name the sizes` into the
// test binary as a filter, so a quoted name that has drifted from its TEST_CASE (a ';' that a
// test name cannot hold, a renamed test) finds nothing, silently.

// The names of the tests in a C++ test source (TEST_CASE's first argument, adjacent string
// literals joined) or a CMake file (add_test(NAME "...")). A CMake name keeps its "${var}".
inline std::vector<std::string> test_names_in_source(const std::string& source) {
    std::vector<std::string> names;
    auto skip_space = [&](size_t i) {
        while (i < source.size() && std::isspace(static_cast<unsigned char>(source[i]))) ++i;
        return i;
    };
    for (const std::string opener : {"TEST_CASE(", "add_test(NAME "}) {
        for (size_t p = source.find(opener); p != std::string::npos; p = source.find(opener, p + 1)) {
            if (p > 0 && is_word_char(source[p - 1])) continue;  // TEMPLATE_TEST_CASE( and the like
            std::string name;
            size_t i = skip_space(p + opener.size());
            bool literal = false;
            while (i < source.size() && source[i] == '"') {
                literal = true;
                for (++i; i < source.size() && source[i] != '"'; ++i) {
                    if (source[i] == '\\' && i + 1 < source.size()) ++i;
                    name += source[i];
                }
                i = skip_space(i + 1);
            }
            if (literal) names.push_back(name);
        }
    }
    return names;
}

// Does `quoted` (a name as the text gives it, perhaps cut short) start a known test name? A
// CMake name with "${...}" stands for any text from there on.
inline bool starts_a_test_name(const std::string& quoted, const std::vector<std::string>& names) {
    return std::any_of(names.begin(), names.end(), [&](const std::string& name) {
        const size_t var = name.find("${");
        if (var == std::string::npos) return name.compare(0, quoted.size(), quoted) == 0;
        return quoted.compare(0, var, name, 0, var) == 0;
    });
}

// Rule (k): inline code outside fenced blocks that begins like a test's name ("PREFIX: ", the
// PREFIX of some name in `names`) is a test name, or its start; a trailing "..." or "…" and
// surrounding double quotes are not part of it, and line breaks (and a blockquote's '>') are
// spaces. The problem names the known test that shares the longest start with it.
inline void check_quoted_test_names(const std::string& markdown, const std::vector<std::string>& names,
                                    const std::string& path, std::vector<Problem>& problems) {
    std::vector<std::string> prefixes;
    for (const std::string& name : names) {
        const size_t colon = name.find(": ");
        if (colon != std::string::npos && colon > 0) prefixes.push_back(name.substr(0, colon + 2));
    }
    const JoinedLines prose = join_lines(prose_lines(markdown));
    const std::string& text = prose.text;
    for (size_t open = text.find('`'); open != std::string::npos;) {
        if (text.compare(open, 2, "``") == 0) {  // a ``...`` span: not a test name, skip it whole
            const size_t close = text.find("``", open + 2);
            open = close == std::string::npos ? close : text.find('`', close + 2);
            continue;
        }
        const size_t close = text.find('`', open + 1);
        if (close == std::string::npos) break;
        std::string span;  // whitespace runs, line breaks and a blockquote's '>' become one space
        for (size_t i = open + 1; i < close; ++i) {
            const char c = text[i];
            if (c == '\n') {
                while (i + 1 < close && (text[i + 1] == ' ' || text[i + 1] == '>')) ++i;
                span += ' ';
            } else if (c == ' ' && !span.empty() && span.back() == ' ') {
                continue;
            } else {
                span += c;
            }
        }
        const int line = prose.line_of[open];
        // An unmatched '`' is plain text to Markdown: a blank line before the next one makes
        // that one an opener instead.
        const bool paragraph_break = text.find("\n\n", open) < close;
        open = paragraph_break ? close : text.find('`', close + 1);
        if (paragraph_break) continue;
        std::string quoted = trim(span);
        if (quoted.size() >= 2 && quoted.front() == '"' && quoted.back() == '"')
            quoted = quoted.substr(1, quoted.size() - 2);
        for (const std::string ellipsis : {"...", "\xe2\x80\xa6"})
            if (quoted.size() >= ellipsis.size() &&
                quoted.compare(quoted.size() - ellipsis.size(), ellipsis.size(), ellipsis) == 0)
                quoted = rtrim(quoted.substr(0, quoted.size() - ellipsis.size()));
        while (!quoted.empty() && quoted.back() == ',') quoted.pop_back();
        const bool looks_like_one = std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& prefix) {
            return quoted.size() > prefix.size() && quoted.compare(0, prefix.size(), prefix) == 0;
        });
        if (!looks_like_one || starts_a_test_name(quoted, names)) continue;
        size_t best_shared = 0;
        std::string nearest;
        for (const std::string& name : names) {
            size_t k = 0;
            while (k < name.size() && k < quoted.size() && name[k] == quoted[k]) ++k;
            if (k > best_shared) {
                best_shared = k;
                nearest = name;
            }
        }
        problems.push_back({path, line, "`" + quoted + "`",
                            "no test is named so, or starts so (tests cannot hold ';'); the nearest is \"" + nearest +
                                "\", differing after \"" + quoted.substr(0, best_shared) + "\""});
    }
}

}  // namespace patchgrad::tutorials
