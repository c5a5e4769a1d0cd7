// test_check_chapter.cpp — the rules tutorials/tools/check_chapter.cpp enforces on chapters:
// marked C++ blocks, snippets equal to their source regions, output blocks found in the
// program's stdout with numeric tolerance and in the section of their program heading,
// "section N" references, exercise names and items, and the index's list of chapters with
// exercises. Tests the logic directly, without files or processes.
#include <string>
#include <vector>

#include "catch.h"
#include "tutorials/tools/chapter_check.h"

namespace patchgrad::tutorials {

namespace {

const char* kSource =
    "// demo.cpp\n"
    "int twice(int x) {\n"
    "    // [snippet:twice-body]\n"
    "    // [exercise:twice]\n"
    "    const int y = 2 * x;\n"
    "    // [/exercise:twice]\n"
    "    return y;   \n"
    "    // [/snippet:twice-body]\n"
    "}\n";

// What a chapter shows in place of exercise "twice" (elided_exercise_line, dedented).
const std::string kElided = "// ... exercise twice: you write this part (see the chapter's Exercises) ...";

std::string joined(const std::vector<Problem>& problems) {
    std::string s;
    for (const Problem& p : problems) s += p.str() + "\n";
    return s;
}

// Parses `markdown` as chapter.md and compares its snippet blocks with kSource's regions.
std::vector<Problem> check_snippets(const std::string& markdown) {
    std::vector<Problem> problems;
    const std::vector<Fence> fences = parse_fences(markdown, "chapter.md", problems);
    check_cpp_fences_marked(fences, "chapter.md", problems);
    for (const Fence& f : fences) {
        if (f.marker_kind != "snippet") continue;
        const std::string name = f.marker_arg.substr(f.marker_arg.find('#') + 1);
        std::vector<int> first;
        const auto region = extract_snippet(kSource, "demo.cpp", name, problems, &first);
        if (region) compare_snippet(f, *region, "chapter.md", "demo.cpp", first, problems);
    }
    return problems;
}

std::vector<Problem> check_output(const std::string& markdown, const std::vector<std::string>& output) {
    std::vector<Problem> problems;
    const std::vector<Fence> fences = parse_fences(markdown, "chapter.md", problems);
    check_output_blocks(fences, output, "tutorial_00_demo", "chapter.md", "stdout", problems);
    return problems;
}

}  // namespace

TEST_CASE("tutorials: a snippet equal to its region passes, dedented, an inner exercise's code elided",
          "[tutorials][checker]") {
    const auto problems =
        check_snippets("Text.\n\n<!-- snippet: demo.cpp#twice-body -->\n\n```cpp\n" + kElided + "\nreturn y;\n```\n");
    INFO(joined(problems));
    REQUIRE(problems.empty());
}

TEST_CASE("tutorials: a snippet that shows an exercise's code instead of eliding it fails", "[tutorials][checker]") {
    const auto problems = check_snippets(
        "<!-- snippet: demo.cpp#twice-body -->\n```cpp\n"
        "const int y = 2 * x;\nreturn y;\n```\n");
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].line == 3);
    CHECK(problems[0].str().find("exercise twice: you write this part") != std::string::npos);
}

TEST_CASE("tutorials: a snippet inside an exercise shows one elision line", "[tutorials][checker]") {
    const std::string source =
        "void f() {\n    // [exercise:inner]\n    a();\n    // [snippet:part]\n    b();\n"
        "    c();\n    // [/snippet:part]\n    // [/exercise:inner]\n}\n";
    std::vector<Problem> problems;
    const auto region = extract_snippet(source, "f.cpp", "part", problems);
    REQUIRE(region);
    REQUIRE(region->size() == 1);
    CHECK((*region)[0] == "// ... exercise inner: you write this part (see the chapter's Exercises) ...");
}

TEST_CASE("tutorials: hide markers are skipped in a snippet and are no region", "[tutorials][checker]") {
    const std::string source =
        "// [snippet:s]\n// y = f(x)\n// [hide:ex]\n// dy/dx = g(x)\n// [/hide:ex]\n// [hide:ex]\n"
        "int h();\n// [/hide:ex]\n// [/snippet:s]\n";
    std::vector<Problem> problems;
    const auto region = extract_snippet(source, "f.cpp", "s", problems);
    REQUIRE(region);
    CHECK(*region == std::vector<std::string>{"// y = f(x)", "// dy/dx = g(x)", "int h();"});
    // Two blocks for one exercise in one file are fine: hide blocks are not regions.
    CHECK(find_regions(source, "f.cpp", problems).size() == 1);
    INFO(joined(problems));
    CHECK(problems.empty());
}

TEST_CASE("tutorials: a block that shows three lines of an exercise's code is found, whatever its spacing",
          "[tutorials][checker]") {
    const std::vector<std::string> exercise = {"    const real* dout = o.grad_data();", "    real* ga = a.grad_data();",
                                               "    // the chain rule",
                                               "    for (int64_t i = 0; i < n; ++i) ga[i] += dout[i] * 2;", "}"};
    CHECK(shows_exercise_code({"x();", "const real*  dout = o.grad_data();", "real* ga = a.grad_data();",
                               "for (int64_t i = 0; i < n; ++i) ga[i] += dout[i] * 2;"},
                              exercise) == 1);
    // Comments and blank lines in between do not hide it.
    CHECK(shows_exercise_code({"const real* dout = o.grad_data();", "// note", "", "real* ga = a.grad_data();",
                               "for (int64_t i = 0; i < n; ++i) ga[i] += dout[i] * 2;"},
                              exercise) == 0);
    // Two shared lines of set-up are not the answer.
    CHECK(shows_exercise_code({"const real* dout = o.grad_data();", "real* ga = a.grad_data();",
                               "for (int64_t i = 0; i < n; ++i) ga[i] += dout[i];"},
                              exercise) == -1);
    // An exercise of one significant line is found by that line.
    CHECK(shows_exercise_code({"y = config.pool == \"mean\" ? mean(x, 1) : x;"},
                              {"    y = config.pool == \"mean\" ? mean(x, 1) : x;", "    // [B, D]"}) == 0);
}

TEST_CASE("tutorials: a snippet that differs fails naming the line, the source line and both texts",
          "[tutorials][checker]") {
    const auto problems =
        check_snippets("<!-- snippet: demo.cpp#twice-body -->\n```cpp\n" + kElided + "\nreturn x;\n```\n");
    REQUIRE(problems.size() == 1);
    const std::string msg = problems[0].str();
    INFO(msg);
    CHECK(problems[0].line == 4);  // the Markdown line of "return x;"
    CHECK(msg.find("chapter.md:4:") == 0);
    CHECK(msg.find("<!-- snippet: demo.cpp#twice-body -->") != std::string::npos);
    CHECK(msg.find("demo.cpp:7") != std::string::npos);
    CHECK(msg.find("\"return y;\"") != std::string::npos);
    CHECK(msg.find("\"return x;\"") != std::string::npos);
}

TEST_CASE("tutorials: a snippet with a missing line, a missing region or a missing marker fails",
          "[tutorials][checker]") {
    SECTION("missing line") {
        const auto problems = check_snippets("<!-- snippet: demo.cpp#twice-body -->\n```cpp\n" + kElided + "\n```\n");
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].message.find("missing demo.cpp:7 \"return y;\"") != std::string::npos);
    }
    SECTION("missing region") {
        const auto problems = check_snippets("<!-- snippet: demo.cpp#thrice -->\n```cpp\nx\n```\n");
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].str().find("// [snippet:thrice]: no such region") != std::string::npos);
    }
    SECTION("a cpp fence without a marker") {
        const auto problems = check_snippets("Some code:\n\n```cpp\nint x = 1;\n```\n\n```python\nx = 1\n```\n");
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].line == 3);
        CHECK(problems[0].message.find("C++ block without a marker") != std::string::npos);
    }
    SECTION("a marker not directly before the fence") {
        const auto problems =
            check_snippets("<!-- snippet: demo.cpp#twice-body -->\nA sentence.\n```cpp\nconst int y = 2 * x;\n```\n");
        REQUIRE(problems.size() == 2);
        CHECK(problems[0].message.find("not followed by a fenced block") != std::string::npos);
        CHECK(problems[1].message.find("C++ block without a marker") != std::string::npos);
    }
    SECTION("not-compiled passes, but needs a reason") {
        CHECK(check_snippets("<!-- not-compiled: a sketch -->\n```cpp\nanything();\n```\n").empty());
        const auto problems = check_snippets("<!-- not-compiled: -->\n```cpp\nanything();\n```\n");
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].message.find("needs a reason") != std::string::npos);
    }
}

TEST_CASE("tutorials: unbalanced and duplicate regions are reported with their lines", "[tutorials][checker]") {
    std::vector<Problem> problems;
    find_regions("// [snippet:a]\n// [snippet:a]\n// [/snippet:a]\n// [/exercise:b]\n// [exercise:c]\n", "f.cpp",
                 problems);
    const std::string all = joined(problems);
    INFO(all);
    REQUIRE(problems.size() == 3);
    CHECK(all.find("f.cpp:2: // [snippet:a]: duplicate region") != std::string::npos);
    CHECK(all.find("f.cpp:4: // [/exercise:b]: closes a region that is not open") != std::string::npos);
    CHECK(all.find("f.cpp:5: // [exercise:c]: region is never closed") != std::string::npos);
}

TEST_CASE("tutorials: output blocks match with relative tolerance 1e-6", "[tutorials][checker]") {
    const std::vector<std::string> output = {"patches: [4, 48]", "loss 2.302585093", "grad max 1.5e-3 at [0, 7]",
                                             "done"};
    SECTION("equal, and off by 1e-9 relative: passes") {
        CHECK(
            check_output(
                "<!-- output: tutorial_00_demo -->\n```text\nloss 2.302585094\ngrad max 0.0015 at [0,7]\n```\n", output)
                .empty());
    }
    SECTION("off by 1e-3: fails with the line") {
        const auto problems = check_output("<!-- output: tutorial_00_demo -->\n```text\nloss 2.304\n```\n", output);
        REQUIRE(problems.size() == 1);
        INFO(problems[0].str());
        CHECK(problems[0].line == 3);
        CHECK(problems[0].message.find("\"loss 2.304\"") != std::string::npos);
        CHECK(problems[0].message.find("not in stdout") != std::string::npos);
        CHECK(problems[0].message.find("the closest is line 2 \"loss 2.302585093\" (number 2.304 differs from the "
                                       "program's 2.302585093)") != std::string::npos);
    }
    SECTION("second line differs: names it and what differs") {
        const auto problems = check_output(
            "<!-- output: tutorial_00_demo -->\n```text\nloss 2.302585093\ngrad max 1.6e-3 at [0, 7]\n```\n", output);
        REQUIRE(problems.size() == 1);
        INFO(problems[0].str());
        CHECK(problems[0].line == 4);
        CHECK(problems[0].message.find("stdout line 3") != std::string::npos);
        CHECK(problems[0].message.find("number 1.6e-3 differs from the program's 1.5e-3") != std::string::npos);
    }
    SECTION("blocks must come in the output's order") {
        const auto problems = check_output(
            "<!-- output: tutorial_00_demo -->\n```text\ndone\n```\n"
            "<!-- output: tutorial_00_demo -->\n```text\nloss 2.302585093\n```\n",
            output);
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].message.find("before the previous block's match") != std::string::npos);
    }
    SECTION("the target must be the chapter's program") {
        const auto problems = check_output("<!-- output: tutorial_01_other -->\n```text\ndone\n```\n", output);
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].message.find("this chapter's program is tutorial_00_demo") != std::string::npos);
    }
}

TEST_CASE("tutorials: numbers-vary ignores numbers but not words", "[tutorials][checker]") {
    const std::vector<std::string> output = {"matmul 256x256: 12.5 ms, 2.7 GFLOP/s"};
    CHECK(check_output(
              "<!-- output: tutorial_00_demo numbers-vary -->\n```text\nmatmul 256x256: 9.1 ms, 3.9 GFLOP/s\n```\n",
              output)
              .empty());
    const auto problems = check_output(
        "<!-- output: tutorial_00_demo numbers-vary -->\n```text\nmatmul 256x256: 9.1 us, 3.9 GFLOP/s\n```\n", output);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].message.find("\"us\" differs from the program's \"ms\"") != std::string::npos);
    // Without numbers-vary the same block fails on the numbers.
    CHECK(check_output("<!-- output: tutorial_00_demo -->\n```text\nmatmul 256x256: 9.1 ms, 3.9 GFLOP/s\n```\n", output)
              .size() == 1);
}

TEST_CASE("tutorials: tokens split numbers from words and punctuation", "[tutorials][checker]") {
    const auto t = tokenize("x[-1.5e-3, 32x32] f64 3-4");
    std::vector<std::string> texts;
    for (const Token& k : t) texts.push_back((k.number ? "#" : "") + k.text);
    CHECK(texts == std::vector<std::string>{"x", "[", "#-1.5e-3", ",", "#32", "x", "#32", "]", "f64", "#3", "-", "#4"});
    CHECK(lines_match("a = 0", "a = 1e-12", false));  // absolute tolerance near zero
    CHECK_FALSE(lines_match("a = 1", "a = 1.001", false));
    CHECK(lines_match("a = 1", "a = 1.0000000001", false));
    CHECK_FALSE(lines_match("a b", "ab", false));
}

TEST_CASE("tutorials: output stands in the section whose number its program heading carries", "[tutorials][checker]") {
    const std::vector<std::string> output = {
        "preamble", "", "== 1. storage ==", "t = 1", "", "== 2. views ==", "v = 2", "w = 3"};
    auto check = [&](const std::string& markdown) {
        std::vector<Problem> problems;
        const std::vector<Fence> fences = parse_fences(markdown, "chapter.md", problems);
        const auto found = check_output_blocks(fences, output, "tutorial_00_demo", "chapter.md", "stdout", problems);
        check_block_sections(fences, found, output, chapter_sections(markdown), "chapter.md", problems);
        return problems;
    };
    const std::string block = "<!-- output: tutorial_00_demo -->\n```text\n";
    // A block before any heading, and blocks under the matching "## N." or "## C.N" section.
    CHECK(check(block + "preamble\n```\n## 1. Storage\n" + block + "== 1. storage ==\nt = 1\n```\n## 2. Views\n" +
                block + "w = 3\n```\n")
              .empty());
    CHECK(check("## 5.2 Views\n" + block + "v = 2\n```\n").empty());
    SECTION("a heading in the block, in another section") {
        const auto problems = check("## 1. Storage\n## 2. Layout\n" + block + "== 1. storage ==\nt = 1\n```\n");
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].line == 5);
        CHECK(problems[0].message.find("\"== 1. storage ==\" in section 2") != std::string::npos);
    }
    SECTION("the heading above the block decides, also outside any numbered section") {
        REQUIRE(check("## 3. Views\n" + block + "w = 3\n```\n").size() == 1);
        const auto problems = check("## Exercises\n" + block + "v = 2\n```\n");
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].message.find("in no numbered section") != std::string::npos);
    }
}

TEST_CASE("tutorials: \"section N\" names a section of the chapter, and of main.cpp a program heading",
          "[tutorials][checker]") {
    const std::string markdown =
        "## 7.1 One\n## 7.2 Two\nSee sections 1 and 2, Section 7.2's table, and\n"
        "section 2 of [main.cpp](main.cpp). Chapter 4's section 9, section 3.1 of the paper\n"
        "and `section 8` are someone else's.\n## Exercises\n";
    const auto refs = section_references(markdown, 7);
    REQUIRE(refs.size() == 4);
    CHECK(refs[0].number == 1);
    CHECK(refs[1].number == 2);
    CHECK(refs[2].number == 2);
    CHECK(refs[2].text == "Section 7.2");
    CHECK(refs[3].program);
    CHECK(refs[3].line == 4);
    std::vector<Problem> problems;
    check_section_references(refs, chapter_sections(markdown), std::vector<int>{1, 2}, "chapter.md", problems);
    CHECK(problems.empty());

    const std::string wrong = "## 1. One\n## 2. Two\nAs section 5 shows, and section 2 of main.cpp.\n";
    check_section_references(section_references(wrong, 1), chapter_sections(wrong), std::vector<int>{1}, "chapter.md",
                             problems);
    const std::string all = joined(problems);
    INFO(all);
    REQUIRE(problems.size() == 2);
    CHECK(all.find("chapter.md:3: \"section 5\": the chapter has no section 5 (its sections: 1, 2)") !=
          std::string::npos);
    CHECK(all.find("the program prints no heading \"== 2. ... ==\"") != std::string::npos);
}

TEST_CASE("tutorials: the exercises a chapter names exist", "[tutorials][checker]") {
    const std::vector<ExerciseInfo> exercises = {
        {"broadcast-backward", "autograd/ops/elementwise.cpp", "backward_row"}};
    std::vector<Problem> problems;
    check_exercise_mentions(
        "the exercise `broadcast-backward`, the tag `[ex:broadcast-backward]`, a stub that throws\n"
        "`exercise NAME: not implemented yet`, and the exercises\n\n```sh\nmake\n```\n",
        exercises, "chapter.md", problems);
    CHECK(problems.empty());
    check_exercise_mentions("(that function's body is the exercise\n`backward_rows`), graded by `[ex:broadcast]`\n",
                            exercises, "chapter.md", problems);
    const std::string all = joined(problems);
    INFO(all);
    REQUIRE(problems.size() == 2);
    CHECK(all.find("chapter.md:1: `backward_rows`: named as an exercise") != std::string::npos);
    CHECK(all.find("chapter.md:2: [ex:broadcast]: no exercise region is named 'broadcast'") != std::string::npos);
}

TEST_CASE("tutorials: an exercise item names the student's copy and the function, and hides the answer's file",
          "[tutorials][checker]") {
    const std::vector<std::string> source = {"namespace {",
                                             "template <int SG>",
                                             "void backward_row(int64_t n,",
                                             "                  real* g) {",
                                             "    // [exercise:broadcast-backward]",
                                             "    g[0] += 1;"};
    CHECK(enclosing_function(source, 5) == "backward_row");
    CHECK(enclosing_function({"double LRSchedule::lr_at(int64_t step) const {", "    // [exercise:x]"}, 2) == "lr_at");
    CHECK(enclosing_function({"// [exercise:x]"}, 1).empty());

    const std::vector<ExerciseInfo> exercises = {
        {"broadcast-backward", "autograd/ops/elementwise.cpp", "backward_row"}};
    auto check = [&](const std::string& item) {
        std::vector<Problem> problems;
        // A link in another item (an explore exercise reading the library) is fine.
        check_exercise_items("## 5. Text\n\n## Exercises\n\n" + item +
                                 "\n2. *(explore)* Read [it](../../autograd/ops/elementwise.cpp).\n",
                             "tutorials/02_autograd", exercises, "chapter.md", problems);
        return problems;
    };
    CHECK(check("1. **`broadcast-backward`** — `student/autograd/ops/elementwise.cpp`, the body of\n"
                "   `backward_row<SG>(n, g)`.\n")
              .empty());
    const auto problems = check(
        "1. **`broadcast-backward`** — [autograd/ops/elementwise.cpp](../../autograd/ops/elementwise.cpp)"
        ",\n   the body of `backward_rows`.\n");
    const std::string all = joined(problems);
    INFO(all);
    REQUIRE(problems.size() == 3);
    CHECK(all.find("does not name the student's copy `student/autograd/ops/elementwise.cpp`") != std::string::npos);
    CHECK(all.find("does not name `backward_row`") != std::string::npos);
    CHECK(all.find("chapter.md:5: ](../../autograd/ops/elementwise.cpp): links to the library's") != std::string::npos);
}

TEST_CASE("tutorials: the index's list of the chapters with exercises is read with ranges", "[tutorials][checker]") {
    int line = 0;
    const auto listed = chapters_said_to_have_exercises(
        "# Tutorials\n\nEach chapter is tested. Chapters\n"
        "1\xe2\x80\x93"
        "3, 5-6 and 12 end with exercises that ...\n",
        &line);
    REQUIRE(listed);
    CHECK(*listed == std::vector<int>{1, 2, 3, 5, 6, 12});
    CHECK(line == 3);
    CHECK_FALSE(chapters_said_to_have_exercises("No such sentence.\n"));
}

TEST_CASE("tutorials: --fix-snippets rewrites snippet blocks from their regions, keeping a list item's indentation",
          "[tutorials]") {
    const std::string markdown =
        "# Title\n"
        "<!-- snippet: a.cpp#one -->\n"
        "```cpp\n"
        "int old();\n"
        "```\n"
        "1. An item:\n"
        "   <!-- snippet: a.cpp#two -->\n"
        "   ```cpp\n"
        "   void f() {\n"
        "   }\n"
        "   ```\n"
        "The end.\n";
    std::vector<Problem> problems;
    const std::vector<Fence> fences = parse_fences(markdown, "README.md", problems);
    REQUIRE(problems.empty());
    REQUIRE(fences.size() == 2);
    const std::string fixed = with_snippets_replaced(
        markdown, fences, {{0, {"int one();", "int two();"}}, {1, {"void f() {", "    g();", "", "}"}}});
    CHECK(fixed ==
          "# Title\n"
          "<!-- snippet: a.cpp#one -->\n"
          "```cpp\n"
          "int one();\n"
          "int two();\n"
          "```\n"
          "1. An item:\n"
          "   <!-- snippet: a.cpp#two -->\n"
          "   ```cpp\n"
          "   void f() {\n"
          "       g();\n"
          "\n"
          "   }\n"
          "   ```\n"
          "The end.\n");
    // Nothing to fix: the text comes back as it was.
    CHECK(with_snippets_replaced(markdown, fences, {}) == markdown);
}

TEST_CASE("tutorials: test names are read from TEST_CASE and add_test, literals joined", "[tutorials][checker]") {
    const std::string source =
        "TEST_CASE(\"op: one\", \"[op]\") {}\n"
        "TEST_CASE(\"op: a name \"\n"
        "          \"in two \\\"parts\\\"\", \"[op]\") {}\n"
        "TEMPLATE_TEST_CASE(\"not: this one\", \"[t]\", float) {}\n"
        "TEST_CASE(name_in_a_variable) {}\n"
        "add_test(NAME \"tutorial: ${folder}\" COMMAND check)\n";
    CHECK(test_names_in_source(source) ==
          std::vector<std::string>{"op: one", "op: a name in two \"parts\"", "tutorial: ${folder}"});
}

TEST_CASE("tutorials: a quoted test name must start a real one, else the nearest is named", "[tutorials][checker]") {
    const std::vector<std::string> names{"vit_config: ViT-Huge has MLP 5120 (Table 1), not 4096",
                                         "op: gradcheck along each axis", "tutorial: ${folder}"};
    auto problems_in = [&](const std::string& markdown) {
        std::vector<Problem> problems;
        check_quoted_test_names(markdown, names, "ch.md", problems);
        return problems;
    };
    // Whole names, starts of names, an ellipsis, quotes, a line break inside a blockquote, a
    // CMake name's variable part: all fine. So is code that only looks alike (`op:x`, no space).
    CHECK(problems_in("The test `vit_config: ViT-Huge has MLP 5120 (Table 1), not 4096` checks it.\n").empty());
    CHECK(problems_in("See `op: gradcheck ...` and `\"op: gradcheck along\"`.\n").empty());
    CHECK(problems_in("> The test `vit_config: ViT-Huge has MLP\n> 5120 (Table 1),` and `tutorial: 05_patches`.\n")
              .empty());
    CHECK(problems_in("Call `op:x` or `other: anything`.\n```sh\necho `op: not in prose`\n```\n").empty());

    // A ';' where the test has ',' (a test name cannot hold ';'): found, on its line, with
    // the nearest name.
    const std::vector<Problem> semicolon =
        problems_in("Intro.\n\nThe test `vit_config: ViT-Huge has MLP 5120 (Table 1);\nnot 4096` fails.\n");
    REQUIRE(semicolon.size() == 1);
    CHECK(semicolon[0].line == 3);
    CHECK(semicolon[0].marker == "`vit_config: ViT-Huge has MLP 5120 (Table 1); not 4096`");
    CHECK(semicolon[0].message.find("the nearest is \"vit_config: ViT-Huge has MLP 5120 (Table 1), not 4096\"") !=
          std::string::npos);
    CHECK(problems_in("`op: gradcheck along every axis`\n").size() == 1);
    // A span cut by a blank line is no span; a fence inside a blockquote is code, so its
    // backticks pair with nothing.
    CHECK(problems_in("`op: wrong\n\nstill` text\n").empty());
    CHECK(problems_in("> ```python\n> x = 1\n> ```\n> The test `op: gradcheck along; each axis`.\n").size() == 1);
}

}  // namespace patchgrad::tutorials
