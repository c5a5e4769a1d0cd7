// probe.cpp — patchgrad_probe, the coursework grader's two halves (probe.h):
//
//   patchgrad_probe run EXERCISE SEED OUT      the student's side: runs the exercise's probe
//                                              with the code this binary was linked with and
//                                              writes its numbers to OUT, nothing else
//   patchgrad_probe judge EXERCISE SEED OUT [--status CODE] [--time-limit S]
//                                              the teacher's side (a binary of the teacher's
//                                              copy): computes the reference numbers, compares
//                                              the student's OUT with them, prints three lines:
//                                              the result, the largest relative error of the
//                                              gradients along a random direction against
//                                              central differences ("-" without gradients) and
//                                              what went wrong
//   patchgrad_probe selftest [--seeds N] [EXERCISE...]
//                                              both halves in this process, on seeds 1 to N: the
//                                              library it was linked with must pass (CTest runs it)
//   patchgrad_probe list                       the exercises that have a probe
//
// OUT is text: a header, then per block "block KIND COUNT LABEL" and COUNT numbers (%.17g), and
// "end BLOCKS"; an exception ends it with "error MESSAGE". The judge trusts nothing in it: a
// number that differs, a block missing or out of place, a missing end or a non-zero exit status
// fail. --status is the student program's exit status as the shell saw it (124: the time
// limit, 128 + N: signal N).
#include "probe.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/threads/parallel.h"

namespace patchgrad::grading {

// ---- Probe ------------------------------------------------------------------------------------

void Probe::exact(const std::string& label, std::vector<double> numbers) {
    blocks.push_back({Kind::Exact, label, std::move(numbers), 0, -1});
}

void Probe::shape(const std::string& label, const Shape& shape) {
    std::vector<double> numbers = {double(shape.size())};
    for (int64_t d : shape) numbers.push_back(double(d));
    exact(label, std::move(numbers));
}

void Probe::text(const std::string& label, const std::string& s) {
    std::vector<double> codes;
    for (unsigned char c : s) codes.push_back(c);
    exact(label + " (character codes)", std::move(codes));
}

void Probe::values(const std::string& label, const Tensor& t, double tolerance) {
    std::vector<double> numbers;
    if (t.defined())
        for (int64_t i = 0; i < t.numel(); ++i) numbers.push_back(t.data()[i]);
    values(label, std::move(numbers), tolerance);
}

void Probe::values(const std::string& label, std::vector<double> numbers, double tolerance) {
    blocks.push_back({Kind::Values, label, std::move(numbers), tolerance, -1});
}

void Probe::gradients(const std::string& label, const std::vector<Tensor>& leaves,
                      const std::vector<std::string>& names, const std::function<Tensor()>& loss) {
    for (Tensor leaf : leaves) leaf.zero_grad();
    Tensor l = loss();
    const GraphCalls before = graph_calls();
    l.backward();
    const GraphCalls after = graph_calls();
    std::vector<Tensor> grads;
    for (const Tensor& leaf : leaves) grads.push_back(leaf.has_grad() ? leaf.grad() : Tensor::zeros(leaf.shape()));
    finish_case(label, leaves, grads, names, loss, before, after);
}

void Probe::gradients_by(const std::string& label, const std::vector<Tensor>& leaves,
                         const std::vector<std::string>& names, const std::function<Tensor()>& loss,
                         const std::function<std::vector<Tensor>()>& compute) {
    const GraphCalls before = graph_calls();
    const std::vector<Tensor> grads = compute();
    const GraphCalls after = graph_calls();
    finish_case(label, leaves, grads, names, loss, before, after);
}

void Probe::finish_case(const std::string& label, const std::vector<Tensor>& leaves, const std::vector<Tensor>& grads,
                        const std::vector<std::string>& names, const std::function<Tensor()>& loss, GraphCalls before,
                        GraphCalls after) {
    GradientCase c;
    const int index = static_cast<int>(cases.size());
    for (size_t i = 0; i < leaves.size(); ++i) {
        std::vector<double> g;
        if (i < grads.size() && grads[i].defined())
            for (int64_t k = 0; k < grads[i].numel(); ++k) g.push_back(grads[i].data()[k]);
        c.blocks.push_back(static_cast<int>(blocks.size()));
        blocks.push_back({Kind::Gradient, label + ": " + (i < names.size() ? names[i] : "input " + std::to_string(i)),
                          std::move(g), 0, index});
    }
    blocks.push_back({Kind::Calls,
                      label + ": backward() calls and op calls while computing the gradients",
                      {double(after.backwards - before.backwards), double(after.records - before.records)},
                      0,
                      index});
    if (judge_) {
        // The reference loss's derivative along a random direction v, by central differences.
        const double h = 1e-6;
        std::vector<std::vector<real>> saved;
        for (const Tensor& leaf : leaves) {
            std::vector<double> v;
            for (int64_t k = 0; k < leaf.numel(); ++k) v.push_back(fd_rng_.uniform(-1, 1));
            c.direction.push_back(v);
            saved.push_back(leaf.to_vector());
        }
        std::vector<Tensor> xs = leaves;
        auto at = [&](double t) {
            for (size_t i = 0; i < xs.size(); ++i) {
                real* x = xs[i].data();
                for (size_t k = 0; k < saved[i].size(); ++k)
                    x[k] = static_cast<real>(saved[i][k] + t * c.direction[i][k]);
            }
            NoGradGuard no_grad;
            return double(loss().item());
        };
        c.numeric = (at(h) - at(-h)) / (2 * h);
        for (size_t i = 0; i < xs.size(); ++i) std::copy(saved[i].begin(), saved[i].end(), xs[i].data());
    }
    cases.push_back(std::move(c));
}

namespace {

// ---- the student's side -------------------------------------------------------------------

const ExerciseProbe* find_probe(const std::string& name) {
    for (const ExerciseProbe& e : exercise_probes())
        if (name == e.name) return &e;
    return nullptr;
}

std::string one_line(std::string s, size_t max = 300) {
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 32 || c == 127) c = ' ';
    if (s.size() > max) s = s.substr(0, max - 3) + "...";
    return s;
}

std::string header(const std::string& exercise, uint64_t seed) {
    return "patchgrad-probe 1\nexercise " + exercise + "\nseed " + std::to_string(seed) + "\n";
}

std::string block_header(const Block& b) {
    return "block " + std::to_string(static_cast<int>(b.kind)) + " " + std::to_string(b.numbers.size()) + " " +
           one_line(b.label, 1000);
}

// The probe's output for `exercise`, as the student's side writes it.
std::string run_probe(const ExerciseProbe& e, uint64_t seed) {
    std::ostringstream out;
    out << header(e.name, seed);
    Probe probe(seed, false);
    try {
        e.run(probe);
    } catch (const std::exception& ex) {
        out << "error " << one_line(ex.what()) << "\n";
        return out.str();
    } catch (...) {
        out << "error an exception that is not a std::exception\n";
        return out.str();
    }
    char number[40];
    for (const Block& b : probe.blocks) {
        out << block_header(b) << "\n";
        for (double x : b.numbers) {
            std::snprintf(number, sizeof number, "%.17g", x);
            out << number << "\n";
        }
    }
    out << "end " << probe.blocks.size() << "\n";
    return out.str();
}

// ---- the judge ----------------------------------------------------------------------------

struct Verdict {
    std::string result = "pass";  // pass, FAIL, not implemented, FAIL (needs exercise X), time limit
    std::string max_rel = "-";
    std::string detail;
};

std::string sci(double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1e", x);
    return b;
}

std::string num(double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", x);
    return b;
}

// What the exit status says, or "" for 0.
std::string describe_exit(int status, int time_limit) {
    if (status == 0) return "";
    if (status == 124 || status == 137)
        return "stopped at the time limit" +
               (time_limit > 0 ? " of " + std::to_string(time_limit) + " s" : std::string());
    if (status > 128) return "killed by signal " + std::to_string(status - 128) + (status == 139 ? " (a crash)" : "");
    return "exit status " + std::to_string(status);
}

// Strict reading of the student's numbers: exactly what the reference's blocks say.
struct StudentOutput {
    std::vector<std::vector<double>> numbers;  // per block, as far as it got
    std::string error;                         // "error MESSAGE", if written
    std::string problem;                       // how the file departs from the expected form
    bool complete = false;
};

StudentOutput read_student(const std::string& text, const std::string& exercise, uint64_t seed,
                           const std::vector<Block>& reference) {
    StudentOutput s;
    std::istringstream in(text);
    std::string line;
    auto next = [&] { return static_cast<bool>(std::getline(in, line)); };
    std::istringstream expected_header(header(exercise, seed));
    for (std::string want; std::getline(expected_header, want);) {
        if (!next() || line != want) {
            s.problem = text.empty() ? "it wrote no numbers" : "its output does not begin with the probe's header";
            return s;
        }
    }
    for (size_t b = 0; b < reference.size(); ++b) {
        if (!next()) {
            s.problem = "its output stops before \"" + reference[b].label + "\"";
            return s;
        }
        if (line.rfind("error ", 0) == 0) {
            s.error = line.substr(6);
            return s;
        }
        if (line != block_header(reference[b])) {
            s.problem = "its output differs from the probe's at \"" + reference[b].label + "\"";
            return s;
        }
        std::vector<double> v;
        for (size_t k = 0; k < reference[b].numbers.size(); ++k) {
            if (!next()) {
                s.problem = "its output stops inside \"" + reference[b].label + "\"";
                return s;
            }
            char* end = nullptr;
            errno = 0;
            const double x = std::strtod(line.c_str(), &end);
            if (line.empty() || end == nullptr || *end != '\0') {
                s.problem = "a line of \"" + reference[b].label + "\" is not a number";
                return s;
            }
            v.push_back(x);
        }
        s.numbers.push_back(std::move(v));
    }
    if (!next()) {
        s.problem = "its output has no end line";
        return s;
    }
    if (line.rfind("error ", 0) == 0) {
        s.error = line.substr(6);
        return s;
    }
    if (line != "end " + std::to_string(reference.size()) || next()) {
        s.problem = "its output does not end where the probe's does";
        return s;
    }
    s.complete = true;
    return s;
}

// |s - r|_2 / |r|_2 (absolute when r is 0); infinite when s holds a nan or an infinity r lacks.
double relative_difference(const std::vector<double>& s, const std::vector<double>& r, size_t* worst) {
    double diff = 0, norm = 0, worst_diff = -1;
    for (size_t k = 0; k < r.size(); ++k) {
        if (std::isnan(s[k]) != std::isnan(r[k]) || (std::isinf(s[k]) && s[k] != r[k])) {
            *worst = k;
            return INFINITY;
        }
        if (!std::isfinite(r[k])) continue;  // the same nan or infinity on both sides
        const double d = s[k] - r[k];
        diff += d * d;
        norm += r[k] * r[k];
        if (std::abs(d) > worst_diff) worst_diff = std::abs(d), *worst = k;
    }
    return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

std::string element(const std::vector<double>& s, const std::vector<double>& r, size_t k) {
    if (r.size() == 1) return num(s[k]) + " instead of " + num(r[k]);
    return "element " + std::to_string(k) + ": " + num(s[k]) + " instead of " + num(r[k]);
}

Verdict judge(const ExerciseProbe& e, uint64_t seed, const std::string& student_text, int status, int time_limit) {
    Probe reference(seed, true);
    e.run(reference);  // the teacher's own code: an exception here is a grader bug, and surfaces
    Verdict v;
    const StudentOutput s = read_student(student_text, e.name, seed, reference.blocks);
    const std::string exit = describe_exit(status, time_limit);
    if (!s.error.empty()) {
        const std::string own = "exercise " + std::string(e.name) + ": not implemented yet";
        if (s.error.find(own) != std::string::npos) {
            v.result = "not implemented";
            v.detail = one_line(s.error);
            return v;
        }
        for (const ExerciseProbe& other : exercise_probes())
            if (s.error.find("exercise " + std::string(other.name) + ": not implemented yet") != std::string::npos) {
                v.result = "FAIL (needs exercise " + std::string(other.name) + ")";
                v.detail = "the probe reached exercise " + std::string(other.name) + "'s stub";
                return v;
            }
        v.result = "FAIL";
        v.detail = "exception: " + one_line(s.error);
        return v;
    }
    if (!s.complete) {
        v.result = status == 124 || status == 137 ? "time limit" : "FAIL";
        v.detail = s.problem + (exit.empty() ? "" : " (" + exit + ")");
        return v;
    }

    std::string failure;
    auto fail_once = [&](const std::string& why) {
        if (failure.empty()) failure = why;
    };
    // First what the backward called: it explains wrong or imprecise numbers best.
    for (size_t b = 0; b < reference.blocks.size() && e.derivation; ++b) {
        const Block& r = reference.blocks[b];
        if (r.kind != Kind::Calls) continue;
        const std::vector<double>& x = s.numbers[b];
        const std::string what = r.label.substr(0, r.label.find(": backward() calls"));
        const double backwards = x[0], ops = x[1], ref_backwards = r.numbers[0], ref_ops = r.numbers[1];
        const double allowed_ops = ref_ops == 0 ? 0 : 2 * ref_ops + 8;
        if (backwards > ref_backwards)
            fail_once(what + ": the backward calls backward() (the autograd engine) " + num(backwards - ref_backwards) +
                      " time(s): derive the gradient and write it, do not let the engine compute it");
        else if (ops > allowed_ops)
            fail_once(what + ": the backward calls forward ops " + num(ops) + " times (the derived one: " +
                      num(ref_ops) + "): differentiating numerically, or building a graph inside the backward?");
    }
    for (size_t b = 0; b < reference.blocks.size(); ++b) {
        const Block& r = reference.blocks[b];
        const std::vector<double>& x = s.numbers[b];
        size_t worst = 0;
        if (r.kind == Kind::Exact) {
            for (size_t k = 0; k < r.numbers.size(); ++k)
                if (!(x[k] == r.numbers[k])) {
                    fail_once(r.label + ": " + element(x, r.numbers, k));
                    break;
                }
        } else if (r.kind == Kind::Values) {
            const double d = relative_difference(x, r.numbers, &worst);
            if (!(d <= r.tolerance) && !r.numbers.empty())
                fail_once(r.label + " differs from the reference by " + sci(d) + " (" + element(x, r.numbers, worst) +
                          ")");
        } else if (r.kind == Kind::Gradient) {
            const double d = relative_difference(x, r.numbers, &worst);
            const double tight = e.derivation ? 1e-12 : 1e-9;
            if (r.numbers.empty() || d <= tight) continue;
            if (e.derivation && d <= 1e-5)
                fail_once(r.label + " agrees with the exact gradient only to " + sci(d) +
                          " (a derived backward agrees to 1e-12 or better): a numerical derivative, by finite "
                          "differences?");
            else
                fail_once(r.label + " is wrong: it differs from the exact gradient by " + sci(d) + " (" +
                          element(x, r.numbers, worst) + ")");
        }
    }
    // Central differences of the reference loss along v against the student's gradient . v,
    // relative to |g . v| but at least 1% of |g| |v| (g . v may be ~0 by chance).
    double worst_fd = -1;
    std::string worst_fd_label;
    for (const GradientCase& c : reference.cases) {
        double dot = 0, g_norm = 0, v_norm = 0;
        for (size_t i = 0; i < c.blocks.size(); ++i) {
            const std::vector<double>& g = s.numbers[static_cast<size_t>(c.blocks[i])];
            const std::vector<double>& r = reference.blocks[static_cast<size_t>(c.blocks[i])].numbers;
            for (size_t k = 0; k < g.size() && k < c.direction[i].size(); ++k) {
                dot += g[k] * c.direction[i][k];
                g_norm += r[k] * r[k];
                v_norm += c.direction[i][k] * c.direction[i][k];
            }
        }
        const double floor = 1e-2 * std::sqrt(g_norm * v_norm);
        if (floor < 1e-12) continue;  // no gradient to speak of
        double err = std::abs(dot - c.numeric) / std::max({std::abs(dot), std::abs(c.numeric), floor});
        if (std::isnan(err)) err = INFINITY;
        if (err > worst_fd) worst_fd = err, worst_fd_label = reference.blocks[static_cast<size_t>(c.blocks[0])].label;
    }
    if (worst_fd >= 0) v.max_rel = std::isinf(worst_fd) ? "inf" : sci(worst_fd);
    if (worst_fd > 1e-3)
        fail_once(worst_fd_label.substr(0, worst_fd_label.rfind(": ")) +
                  ": the gradient disagrees with central differences of the forward (relative error " + sci(worst_fd) +
                  ")");
    if (failure.empty() && !exit.empty()) failure = "its numbers are right, but the program ended badly: " + exit;
    if (!failure.empty()) {
        v.result = "FAIL";
        v.detail = one_line(failure);
    }
    return v;
}

bool read_text(const std::string& path, std::string& text) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream ss;
    ss << f.rdbuf();
    text = ss.str();
    return true;
}

bool parse_seed(const char* s, uint64_t& seed) {
    char* end = nullptr;
    errno = 0;
    seed = std::strtoull(s, &end, 10);
    return *s != '\0' && *end == '\0' && errno == 0;
}

int usage() {
    std::cerr << "usage: patchgrad_probe run EXERCISE SEED OUT\n"
                 "       patchgrad_probe judge EXERCISE SEED OUT [--status CODE] [--time-limit SECONDS]\n"
                 "       patchgrad_probe selftest [--seeds N] [EXERCISE...]\n"
                 "       patchgrad_probe list\n";
    return 2;
}

}  // namespace
}  // namespace patchgrad::grading

int main(int argc, char** argv) {
    using namespace patchgrad::grading;
    if (argc < 2) return usage();
    const std::string mode = argv[1];
    patchgrad::set_num_threads(2);  // the same on both sides; results do not depend on it
    if (mode == "list" && argc == 2) {
        for (const ExerciseProbe& e : exercise_probes()) std::cout << e.name << "\n";
        return 0;
    }
    if (mode == "selftest") {
        uint64_t seeds = 1;
        std::vector<std::string> names;
        for (int i = 2; i < argc; ++i) {
            if (std::string(argv[i]) == "--seeds" && i + 1 < argc && parse_seed(argv[i + 1], seeds) && seeds > 0)
                ++i;
            else
                names.push_back(argv[i]);
        }
        int failed = 0;
        for (const ExerciseProbe& e : exercise_probes()) {
            if (!names.empty() && std::find(names.begin(), names.end(), e.name) == names.end()) continue;
            for (uint64_t seed = 1; seed <= seeds; ++seed) {
                const Verdict v = judge(e, seed, run_probe(e, seed), 0, 0);
                if (seeds == 1 || v.result != "pass")
                    std::cout << e.name << (seeds == 1 ? "" : " (seed " + std::to_string(seed) + ")") << ": "
                              << v.result << ", max rel. error " << v.max_rel
                              << (v.detail.empty() ? "" : ": " + v.detail) << "\n";
                failed += v.result == "pass" ? 0 : 1;
            }
        }
        if (seeds > 1) std::cout << failed << " failures\n";
        return failed == 0 ? 0 : 1;
    }
    if ((mode != "run" && mode != "judge") || argc < 5) return usage();
    const ExerciseProbe* e = find_probe(argv[2]);
    uint64_t seed = 0;
    if (!e) {
        std::cerr << "patchgrad_probe: no probe for exercise '" << argv[2] << "' (patchgrad_probe list)\n";
        return 2;
    }
    if (!parse_seed(argv[3], seed)) return usage();
    if (mode == "run") {
        if (argc != 5) return usage();
        const std::string text = run_probe(*e, seed);
        std::ofstream out(argv[4], std::ios::binary | std::ios::trunc);
        out << text;
        out.flush();
        return out ? 0 : 1;
    }
    int status = 0, time_limit = 0;
    for (int i = 5; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--status" && i + 1 < argc)
            status = std::atoi(argv[++i]);
        else if (a == "--time-limit" && i + 1 < argc)
            time_limit = std::atoi(argv[++i]);
        else
            return usage();
    }
    std::string text;
    if (!read_text(argv[4], text)) text.clear();
    const Verdict v = judge(*e, seed, text, status, time_limit);
    std::cout << v.result << "\n" << v.max_rel << "\n" << v.detail << "\n";
    return 0;
}
