// check_chapter.cpp — the CTest check of one tutorial chapter (tests "tutorial: NN_slug").
//
//   tutorial_check_chapter --root REPO --chapter NN_slug [--program EXE --out DIR]
//
// Reads REPO/tutorials/NN_slug/README.md and checks, with the rules of chapter_check.h:
// every ```cpp block is marked; each snippet block equals its source region (an exercise's
// code elided); no block shows three lines of any exercise's reference code; the markers in
// the files it reads are balanced; relative links and pictures exist; the exercises the text
// names exist, and each exercise item names the student's copy and the function, not the
// answer's file; every test name quoted in inline code is (the start of) a real one;
// tutorials/README.md lists the chapter among those with exercises exactly when it has some;
// every "section N" exists; and, when a program is given, runs it once as
// `EXE --out DIR` (stdout to DIR/stdout.txt, stderr to DIR/stderr.txt), requires exit code 0,
// finds every output block in its stdout, in order, each in the section whose number the
// program's heading above it carries. Prints one line per problem ("file:line: marker: what
// differs") and exits 1 if there is any.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "chapter_check.h"
#include "patchgrad/autograd/io/atomic_file.h"
#include "tool_io.h"

namespace fs = std::filesystem;
using namespace patchgrad::tutorials;

namespace {

// Every exercise region in the files that may hold one (the .cpp files of autograd/ layers/
// vit/ datasets/ and the chapter programs), with its reference lines.
struct Exercise {
    ExerciseInfo info;
    std::vector<std::string> body;
};

std::vector<Exercise> find_exercises(const std::string& root) {
    std::vector<Exercise> out;
    for (const fs::path& file : exercise_source_files(root)) {
        const auto text = read_file(file);
        if (!text || text->find("// [exercise:") == std::string::npos) continue;
        const std::string rel = fs::relative(file, root).generic_string();
        std::vector<Problem> ignored;  // the files' own checks report malformed markers
        const std::vector<std::string> lines = split_lines(*text);
        for (const Region& r : find_regions(*text, rel, ignored))
            if (r.kind == "exercise")
                out.push_back({{r.name, rel, enclosing_function(lines, r.begin_line)},
                               std::vector<std::string>(lines.begin() + r.begin_line, lines.begin() + r.end_line - 1)});
    }
    return out;
}

int usage() {
    std::cerr << "usage: tutorial_check_chapter --root REPO --chapter NN_slug [--program EXE --out DIR]\n"
                 "       tutorial_check_chapter --root REPO --chapter NN_slug --fix-snippets\n";
    return 2;
}

// Writes the chapter with its snippet blocks rewritten from their sources (`fixes`), whole or
// not at all.
int fix_snippets(const fs::path& readme, const std::string& markdown, const std::vector<Fence>& fences,
                 const std::vector<SnippetFix>& fixes) {
    const std::string text = with_snippets_replaced(markdown, fences, fixes);
    patchgrad::atomic_write(readme.string(), "tutorial_check_chapter --fix-snippets",
                            [&](std::ostream& out) { out << text; });
    std::cout << readme.string() << ": rewrote " << fixes.size() << " snippet block(s) from their sources\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string root, chapter, program, out_dir;
    bool fix = false;  // --fix-snippets: rewrite the snippet blocks instead of checking
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--fix-snippets") {
            fix = true;
            continue;
        }
        if (i + 1 >= argc) return usage();
        if (a == "--root")
            root = argv[++i];
        else if (a == "--chapter")
            chapter = argv[++i];
        else if (a == "--program")
            program = argv[++i];
        else if (a == "--out")
            out_dir = argv[++i];
        else
            return usage();
    }
    if (root.empty() || chapter.empty() || program.empty() != out_dir.empty() || (fix && !program.empty()))
        return usage();

    const std::string readme_rel = "tutorials/" + chapter + "/README.md";
    const fs::path chapter_dir = fs::path(root) / "tutorials" / chapter;
    std::vector<Problem> problems;
    const auto markdown = read_file(fs::path(root) / readme_rel);
    if (!markdown) {
        std::cerr << readme_rel << ": cannot read the chapter (every tutorials/NN_slug/ needs a README.md)\n";
        return 1;
    }

    // (a) fences and their markers.
    std::vector<Fence> fences = parse_fences(*markdown, readme_rel, problems);
    check_cpp_fences_marked(fences, readme_rel, problems);

    // (b) snippets; (e) the markers of every source file read are balanced.
    std::map<std::string, std::optional<std::string>> sources;
    auto source = [&](const std::string& rel) -> const std::optional<std::string>& {
        auto it = sources.find(rel);
        if (it != sources.end()) return it->second;
        auto text = read_file(fs::path(root) / rel);
        if (text) find_regions(*text, rel, problems);
        return sources.emplace(rel, text).first->second;
    };
    int snippets = 0, outputs = 0;
    std::vector<SnippetFix> fixes;
    for (size_t index = 0; index < fences.size(); ++index) {
        const Fence& f = fences[index];
        if (f.marker_kind == "output") ++outputs;
        if (f.marker_kind != "snippet") continue;
        ++snippets;
        const size_t hash = f.marker_arg.find('#');
        if (hash == std::string::npos || hash == 0 || hash + 1 == f.marker_arg.size()) {
            problems.push_back({readme_rel, f.marker_line, f.marker_text,
                                "expected `<!-- snippet: PATH#NAME -->` with PATH relative to the repository root"});
            continue;
        }
        const std::string rel = f.marker_arg.substr(0, hash), name = f.marker_arg.substr(hash + 1);
        const auto& text = source(rel);
        if (!text) {
            problems.push_back({readme_rel, f.marker_line, f.marker_text,
                                "cannot read " + rel + " (paths are relative to the repository root)"});
            continue;
        }
        std::vector<Problem> region_problems;
        std::vector<int> region_lines;
        const auto region = extract_snippet(*text, rel, name, region_problems, &region_lines);
        if (!region) {
            for (const Problem& p : region_problems)
                problems.push_back({readme_rel, f.marker_line, f.marker_text, p.str()});
            continue;
        }
        if (fix && dedent(f.body) != *region) fixes.push_back({index, *region});
        compare_snippet(f, *region, readme_rel, rel, region_lines, problems);
    }
    if (fix) return fixes.empty() ? 0 : fix_snippets(fs::path(root) / readme_rel, *markdown, fences, fixes);
    const std::string main_rel = "tutorials/" + chapter + "/main.cpp";
    if (fs::exists(fs::path(root) / main_rel)) source(main_rel);

    // (f) no block shows an exercise's code: every exercise of the library and the chapter
    // programs against every block but the program's output.
    const std::vector<Exercise> exercises = find_exercises(root);
    std::vector<ExerciseInfo> infos;
    for (const Exercise& e : exercises) {
        infos.push_back(e.info);
        for (const Fence& f : fences) {
            if (f.marker_kind == "output") continue;
            const int at = shows_exercise_code(f.body, e.body);
            if (at >= 0)
                problems.push_back({readme_rel, f.open_line + 1 + at, "exercise " + e.info.name,
                                    "the chapter shows the code of exercise '" + e.info.name + "' (" + e.info.file +
                                        "): a chapter must not print an exercise's answer"});
        }
    }

    // (i), (j) exercises named in the text exist; each one's item names the student's copy and
    // the function, and does not link to the answer.
    check_exercise_mentions(*markdown, infos, readme_rel, problems);
    check_exercise_items(*markdown, "tutorials/" + chapter, infos, readme_rel, problems);

    // (k) quoted test names are real ones.
    check_quoted_test_names(*markdown, test_names_in_tree(root), readme_rel, problems);

    // tutorials/README.md's list of the chapters with exercises includes this one exactly when
    // it names the tag of an exercise (the tag selects the exercise with the chapter's number).
    const auto index = read_file(fs::path(root) / "tutorials/README.md");
    int list_line = 0;
    const auto listed = index ? chapters_said_to_have_exercises(*index, &list_line) : std::nullopt;
    const int number = std::atoi(chapter.c_str());
    if (listed && !chapter.empty() && std::isdigit(static_cast<unsigned char>(chapter[0]))) {
        const bool said = std::find(listed->begin(), listed->end(), number) != listed->end();
        const bool has = std::any_of(infos.begin(), infos.end(), [&](const ExerciseInfo& e) {
            return markdown->find("[ex:" + e.name + "]") != std::string::npos;
        });
        if (said != has)
            problems.push_back({"tutorials/README.md", list_line, "Chapters ... end with exercises",
                                "chapter " + std::to_string(number) +
                                    (has ? " has exercises but is not in the list" : " has none but is in the list")});
    }

    // Links and pictures.
    for (const auto& [line, target] : local_links(*markdown))
        if (!fs::exists(chapter_dir / target))
            problems.push_back({readme_rel, line, "](" + target + ")",
                                "link target does not exist (relative to tutorials/" + chapter + "/)" +
                                    (target.size() > 4 && target.compare(target.size() - 4, 4, ".png") == 0
                                         ? std::string("; regenerate pictures with --target tutorial_pictures")
                                         : std::string())});

    // (c), (d): run the program once, check its exit code and output blocks.
    const std::string target = program.empty() ? std::string() : "tutorial_" + chapter;
    std::vector<std::string> output;
    std::string stderr_tail;
    if (!program.empty()) {
        std::error_code ec;
        fs::create_directories(out_dir, ec);
        const std::string out_file = (fs::path(out_dir) / "stdout.txt").string();
        const std::string err_file = (fs::path(out_dir) / "stderr.txt").string();
        const std::string command = shell_quote(program) + " --out " + shell_quote(out_dir) + " > " +
                                    shell_quote(out_file) + " 2> " + shell_quote(err_file);
        std::cout.flush();
        const int status = std::system(command.c_str());
        output = split_lines(read_file(out_file).value_or(""));
        if (status != 0) {
            const std::vector<std::string> err = split_lines(read_file(err_file).value_or(""));
            for (size_t k = err.size() > 8 ? err.size() - 8 : 0; k < err.size(); ++k)
                stderr_tail += "    " + err[k] + "\n";
            problems.push_back({main_rel, 0, target,
                                "the program failed (" + describe_status(status) + "): " + program + " --out " +
                                    out_dir + "; its stderr is " + err_file});
        }
    }
    const std::vector<BlockMatch> found = check_output_blocks(
        fences, output, target, readme_rel,
        program.empty() ? "the program's output" : (fs::path(out_dir) / "stdout.txt").string(), problems);

    // (g), (h) sections: output stands in the section of its program part; "section N" exists.
    const std::vector<Section> sections = chapter_sections(*markdown);
    check_block_sections(fences, found, output, sections, readme_rel, problems);
    std::optional<std::vector<int>> headings;
    if (!program.empty()) {
        headings.emplace();
        for (const std::string& line : output)
            if (program_heading_number(line)) headings->push_back(program_heading_number(line));
    }
    check_section_references(section_references(*markdown, number), sections, headings, readme_rel, problems);

    std::stable_sort(problems.begin(), problems.end(), [](const Problem& a, const Problem& b) {
        return a.file != b.file ? a.file < b.file : a.line < b.line;
    });
    for (const Problem& p : problems) std::cout << p.str() << "\n";
    if (!stderr_tail.empty()) std::cout << "  last lines of the program's stderr:\n" << stderr_tail;
    if (!problems.empty()) {
        std::cout << problems.size() << " problem(s) in " << readme_rel << "\n";
        return 1;
    }
    std::cout << readme_rel << ": ok (" << snippets << " snippets, " << outputs << " output blocks"
              << (program.empty() ? ", no program" : ", program exit code 0") << ")\n";
    return 0;
}
