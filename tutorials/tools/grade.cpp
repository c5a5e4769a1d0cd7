// grade.cpp — the tutorials' grader (build target `grade`, CTest "tutorials: reference
// solutions pass the grader").
//
//   patchgrad_grade --tests PATCHGRAD_TESTS64 --root REPO --work DIR [--student]
//                   --exercise NAME FILE [--exercise NAME FILE ...] [--selected NAME ...]
//                   [--csv FILE]
//
// --exercise lists every exercise of the build; --selected (the student build's
// PATCHGRAD_EXERCISES) restricts the grading to those, all of them when it is absent.
// For each exercise (found by tutorials/tools/student_copy.cmake at configure time) it runs
// the float64 test binary on the tests tagged [ex:NAME], with the XML reporter (the one
// format Catch2 v2 and v3 share: it counts matched tests whatever the exit-code convention)
// and with PATCHGRAD_GRADE_REPORT set, so every gradient check appends "<test> <max relative
// error>" (tests/test_util.h). Then it prints one row per exercise — tests run, pass / FAIL /
// not implemented / no tests, the largest relative error of the gradient checks — and the
// first failure of each failing exercise, and with --csv the same rows as CSV (for the
// teacher's tutorials/scripts/grade_handins.sh). Logs: DIR/NAME.xml, DIR/NAME.log. Exits 1 unless
// every exercise passes. It first rescans the sources, so a list made before an exercise was
// added or renamed is reported as stale instead of silently grading the old list.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "chapter_check.h"
#include "tool_io.h"

namespace fs = std::filesystem;
using patchgrad::tutorials::describe_status;
using patchgrad::tutorials::exercise_source_files;
using patchgrad::tutorials::find_regions;
using patchgrad::tutorials::Problem;
using patchgrad::tutorials::read_file;
using patchgrad::tutorials::Region;
using patchgrad::tutorials::shell_quote;

namespace {

struct Exercise {
    std::string name, file;
};

struct Outcome {
    int tests = 0, failed = 0;
    std::string result;   // "pass", "FAIL ...", "not implemented", "no tests ..."
    std::string max_rel;  // "-" when no gradient check reported
    std::string first_failure;
    bool passed = false;
};

std::string xml_unescape(std::string s) {
    const std::pair<const char*, const char*> entities[] = {{"&lt;", "<"},   {"&gt;", ">"},  {"&quot;", "\""},
                                                            {"&apos;", "'"}, {"&#39;", "'"}, {"&amp;", "&"}};
    for (const auto& [from, to] : entities)
        for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + 1))
            s.replace(p, std::string(from).size(), to);
    return s;
}

// The text of the first <tag ...>text</tag> in `xml` at or after `from`, whitespace collapsed.
std::optional<std::string> element_text(const std::string& xml, const std::string& tag, size_t from = 0) {
    const size_t open = xml.find("<" + tag, from);
    if (open == std::string::npos) return std::nullopt;
    const size_t start = xml.find('>', open);
    const size_t end = xml.find("</" + tag + ">", start);
    if (start == std::string::npos || end == std::string::npos) return std::nullopt;
    std::string text = xml_unescape(xml.substr(start + 1, end - start - 1)), collapsed;
    for (char c : text) {
        const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
        if (space && (collapsed.empty() || collapsed.back() == ' ')) continue;
        collapsed += space ? ' ' : c;
    }
    while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
    return collapsed;
}

std::string attribute(const std::string& element, const std::string& name) {
    const std::string key = " " + name + "=\"";
    const size_t p = element.find(key);
    if (p == std::string::npos) return "";
    const size_t end = element.find('"', p + key.size());
    return xml_unescape(element.substr(p + key.size(), end - p - key.size()));
}

// The first failure of a failed <TestCase> element: an unexpected exception, or a failed
// assertion with its INFO messages.
std::string first_failure(const std::string& test_case) {
    const size_t exception = test_case.find("<Exception");
    const size_t fatal = test_case.find("<FatalErrorCondition");
    const size_t expression = test_case.find("<Expression success=\"false\"");
    const size_t first = std::min({exception, fatal, expression});
    if (first == std::string::npos) return "";
    const std::string head = test_case.substr(first, test_case.find('>', first) - first);
    const std::string where = attribute(head, "filename") + ":" + attribute(head, "line");
    if (first == exception) return where + ": exception: " + element_text(test_case, "Exception", first).value_or("");
    if (first == fatal) return where + ": " + element_text(test_case, "FatalErrorCondition", first).value_or("");
    std::string msg = where + ": " + element_text(test_case, "Original", first).value_or("") + " is " +
                      element_text(test_case, "Expanded", first).value_or("");
    // INFO messages come just before the assertion they explain.
    const size_t info = test_case.rfind("<Info>", first);
    if (info != std::string::npos && test_case.find("<Expression", info) == first)
        msg += "; " + element_text(test_case, "Info", info).value_or("");
    return msg;
}

Outcome grade(const Exercise& ex, const std::vector<Exercise>& all, const std::string& tests, const fs::path& work) {
    const fs::path report = work / (ex.name + ".report"), xml_file = work / (ex.name + ".xml"),
                   log = work / (ex.name + ".log");
    std::error_code ec;
    fs::remove(report, ec);
    fs::remove(xml_file, ec);
    const std::string command = "PATCHGRAD_GRADE_REPORT=" + shell_quote(report.string()) + " " + shell_quote(tests) +
                                " " + shell_quote("[ex:" + ex.name + "]") + " -r xml -o " +
                                shell_quote(xml_file.string()) + " > " + shell_quote(log.string()) + " 2>&1";
    std::cout.flush();
    const int status = std::system(command.c_str());
    const std::string xml = read_file(xml_file).value_or("");

    Outcome out;
    std::string own_stub = "exercise " + ex.name + ": not implemented yet", other_stub;
    bool own_stub_seen = false;
    for (size_t p = xml.find("<TestCase "); p != std::string::npos;) {
        const size_t next = xml.find("<TestCase ", p + 1);
        const std::string test_case = xml.substr(p, next == std::string::npos ? std::string::npos : next - p);
        ++out.tests;
        if (test_case.find("<OverallResult success=\"true\"") == std::string::npos) {
            ++out.failed;
            if (test_case.find(own_stub) != std::string::npos) own_stub_seen = true;
            for (const Exercise& other : all)
                if (other.name != ex.name &&
                    test_case.find("exercise " + other.name + ": not implemented yet") != std::string::npos)
                    other_stub = other.name;
            if (out.first_failure.empty())
                out.first_failure = "\"" + attribute(test_case.substr(0, test_case.find('>')), "name") +
                                    "\": " + first_failure(test_case);
        }
        p = next;
    }
    const bool complete =
        xml.find("</Catch>") != std::string::npos || xml.find("</Catch2TestRun>") != std::string::npos;

    double worst = -1;
    std::istringstream lines(read_file(report).value_or(""));
    for (std::string line; std::getline(lines, line);) {
        const size_t space = line.find_last_of(' ');
        if (space == std::string::npos) continue;
        worst = std::max(worst, std::strtod(line.c_str() + space + 1, nullptr));
    }
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1e", worst);
    out.max_rel = worst < 0 ? "-" : buffer;

    if (!complete && status != 0) {
        out.result = "FAIL (test binary " + describe_status(status) + ", see " + log.filename().string() + ")";
    } else if (out.tests == 0) {
        out.result = "no tests (no TEST_CASE is tagged [ex:" + ex.name + "]: a tutorials bug)";
    } else if (own_stub_seen) {
        out.result = "not implemented";
    } else if (!other_stub.empty()) {
        out.result = "FAIL (needs exercise " + other_stub + ", not implemented yet)";
    } else if (out.failed > 0) {
        out.result = "FAIL (" + std::to_string(out.failed) + " of " + std::to_string(out.tests) + " tests)";
    } else if (status != 0) {
        out.result = "FAIL (" + describe_status(status) + ", see " + log.filename().string() + ")";
    } else {
        out.result = "pass";
        out.passed = true;
    }
    return out;
}

// The exercises in the sources now, to detect a list configured before they changed.
std::vector<Exercise> scan(const fs::path& root, std::vector<Problem>& problems) {
    std::vector<Exercise> found;
    for (const fs::path& f : exercise_source_files(root)) {
        const std::string rel = fs::relative(f, root).generic_string();
        for (const Region& r : find_regions(read_file(f).value_or(""), rel, problems))
            if (r.kind == "exercise") found.push_back({r.name, rel});
    }
    return found;
}

// `s` as one CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

int usage() {
    std::cerr << "usage: patchgrad_grade --tests EXE --root REPO --work DIR [--student] [--exercise NAME FILE]... "
                 "[--selected NAME]... [--csv FILE]\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string tests, root, work, csv;
    bool student = false;
    std::vector<Exercise> exercises;
    std::set<std::string> selected;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--student") {
            student = true;
        } else if (a == "--exercise" && i + 2 < argc) {
            exercises.push_back({argv[i + 1], argv[i + 2]});
            i += 2;
        } else if (a == "--selected" && i + 1 < argc) {
            selected.insert(argv[++i]);
        } else if (i + 1 < argc && (a == "--tests" || a == "--root" || a == "--work" || a == "--csv")) {
            (a == "--tests" ? tests : a == "--root" ? root : a == "--work" ? work : csv) = argv[++i];
        } else {
            return usage();
        }
    }
    if (tests.empty() || root.empty() || work.empty()) return usage();

    std::vector<Problem> problems;
    std::vector<Exercise> now = scan(root, problems);
    for (const Problem& p : problems) std::cout << p.str() << "\n";
    auto key = [](const Exercise& e) { return e.name + " " + e.file; };
    std::set<std::string> configured, current;
    for (const Exercise& e : exercises) configured.insert(key(e));
    for (const Exercise& e : now) current.insert(key(e));
    if (configured != current) {
        for (const std::string& k : current)
            if (!configured.count(k))
                std::cout << "exercise " << k << " is in the sources but not in the build's list\n";
        for (const std::string& k : configured)
            if (!current.count(k)) std::cout << "exercise " << k << " is in the build's list but not in the sources\n";
        std::cout << "the exercise list is stale: re-run cmake on this build directory, then grade again\n";
        return 1;
    }
    if (!problems.empty()) return 1;
    if (!selected.empty()) {
        for (const std::string& name : selected)
            if (std::none_of(exercises.begin(), exercises.end(), [&](const Exercise& e) { return e.name == name; })) {
                std::cout << "--selected " << name << ": no such exercise in the build's list\n";
                return 1;
            }
        exercises.erase(std::remove_if(exercises.begin(), exercises.end(),
                                       [&](const Exercise& e) { return !selected.count(e.name); }),
                        exercises.end());
    }
    if (exercises.empty()) {
        std::cout << "no exercises: no `// [exercise:NAME]` region in autograd/ layers/ vit/ datasets/ "
                     "or tutorials/*/main.cpp\n";
        return 0;
    }

    std::error_code ec;
    fs::create_directories(work, ec);
    std::cout << "grading " << exercises.size() << " exercises with " << tests << " (logs in " << work << ")\n";
    std::vector<Outcome> outcomes;
    for (const Exercise& e : exercises) outcomes.push_back(grade(e, exercises, tests, work));

    const std::vector<std::string> header = {"exercise", "file", "tests", "result", "max rel. error"};
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < exercises.size(); ++i)
        rows.push_back({exercises[i].name, (student ? "student/" : "") + exercises[i].file,
                        std::to_string(outcomes[i].tests), outcomes[i].result, outcomes[i].max_rel});
    std::vector<size_t> width(header.size());
    for (size_t c = 0; c < header.size(); ++c) {
        width[c] = header[c].size();
        for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
    }
    auto print_row = [&](const std::vector<std::string>& r) {
        std::string line;
        for (size_t c = 0; c < r.size(); ++c) {
            const std::string pad(width[c] - r[c].size(), ' ');
            line += c == 2 ? pad + r[c] : r[c] + pad;  // right-align the count
            if (c + 1 < r.size()) line += "  ";
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        std::cout << line << "\n";
    };
    std::cout << "\n";
    print_row(header);
    std::string rule;
    for (size_t c = 0; c < width.size(); ++c) rule += std::string(width[c], '-') + (c + 1 < width.size() ? "  " : "");
    std::cout << rule << "\n";
    for (const auto& r : rows) print_row(r);

    size_t passed = 0;
    bool details = false;
    for (size_t i = 0; i < exercises.size(); ++i) {
        if (outcomes[i].passed) {
            ++passed;
            continue;
        }
        if (outcomes[i].first_failure.empty() || outcomes[i].result == "not implemented") continue;
        if (!details) std::cout << "\nfirst failure of each failing exercise:\n";
        details = true;
        std::cout << "  " << exercises[i].name << ": " << outcomes[i].first_failure << "\n";
    }
    std::cout << "\n" << passed << " of " << exercises.size() << " exercises pass\n";
    if (!csv.empty()) {
        // For tutorials/scripts/grade_handins.sh: one row per exercise, written whole or not at all.
        const std::string tmp = csv + ".tmp";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out << "exercise,file,tests,result,max_rel_error,first_failure\n";
            for (size_t i = 0; i < exercises.size(); ++i)
                out << csv_field(exercises[i].name) << ',' << csv_field(rows[i][1]) << ',' << outcomes[i].tests << ','
                    << csv_field(outcomes[i].result) << ',' << csv_field(outcomes[i].max_rel) << ','
                    << csv_field(outcomes[i].first_failure) << "\n";
            if (!out.flush()) {
                std::cerr << "patchgrad_grade: cannot write " << tmp << "\n";
                return 2;
            }
        }
        std::error_code rename_error;
        fs::rename(tmp, csv, rename_error);
        if (rename_error) {
            std::cerr << "patchgrad_grade: cannot rename " << tmp << " to " << csv << ": " << rename_error.message()
                      << "\n";
            return 2;
        }
    }
    return passed == exercises.size() ? 0 : 1;
}
