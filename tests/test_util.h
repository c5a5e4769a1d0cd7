// test_util.h — shared helpers for patchgrad's tests.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "catch.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/tensor.h"

#ifdef PATCHGRAD_DOUBLE
#include "patchgrad/autograd/gradcheck.h"
#endif

namespace patchgrad::test {

// Uniform values in [low, high): non-trivial inputs for gradient checks.
inline Tensor rand_tensor(const Shape& shape, Rng& rng, real low = -1, real high = 1, bool requires_grad = true) {
    return Tensor::uniform(shape, low, high, rng, requires_grad);
}

// sum(y * w) for a fixed w of y's shape: turns any op's output into the scalar a gradient
// check needs, with dL/dy = w. A random w exercises every output element with a different
// weight, so a backward that mixes up two output positions cannot pass. It is a test-only
// op written on `record` directly, so an op's test depends on nothing but the op itself;
// its own gradient is checked in tests/autograd/test_gradcheck.cpp.
inline Tensor weighted_sum(const Tensor& y, const Tensor& w) {
    if (y.shape() != w.shape())
        throw std::invalid_argument("weighted_sum: shapes " + shape_str(y.shape()) + " and " + shape_str(w.shape()));
    double s = 0;
    for (int64_t i = 0; i < y.numel(); ++i) s += double(y.data()[i]) * w.data()[i];
    Tensor out = Tensor::scalar(static_cast<real>(s));
    record(out, "weighted_sum", {y}, [y, w](Tensor& o) mutable {
        const real g = o.grad_data()[0];
        real* gy = y.grad_data();
        for (int64_t i = 0; i < y.numel(); ++i) gy[i] += g * w.data()[i];
    });
    return out;
}

// sum_i t[i] * (1 + i % 13): one number that moves when any element or its place does. An
// exercise's test compares its output with the reference's checksum, written as a literal, so
// that a handout can keep the check and leave out the code that computed the reference.
inline double checksum(const Tensor& t) {
    double s = 0;
    for (int64_t i = 0; i < t.numel(); ++i) s += double(t.data()[i]) * double(1 + i % 13);
    return s;
}

// Two ways to compute the same results (a value, then gradients), bit for bit: as many
// results, and a[k] == b[k] for each; `legend` says what k counts in a failure's message.
inline void check_same_bits(const std::vector<std::vector<real>>& a, const std::vector<std::vector<real>>& b,
                            const char* legend) {
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) {
        INFO(legend << "; k = " << k);
        CHECK(a[k] == b[k]);
    }
}

inline void require_close(const Tensor& actual, const Tensor& expected, double tol = 1e-6,
                          const std::string& what = "") {
    INFO(what << " actual " << actual.str() << "\nexpected " << expected.str());
    REQUIRE(actual.shape() == expected.shape());
    for (int64_t i = 0; i < actual.numel(); ++i) {
        INFO("element " << i);
        REQUIRE(std::abs(double(actual.data()[i]) - double(expected.data()[i])) <=
                tol * (1 + std::abs(double(expected.data()[i]))));
    }
}

#ifdef PATCHGRAD_DOUBLE
// The tutorials' grader (tutorials/tools/grade.cpp) runs the tests with PATCHGRAD_GRADE_REPORT
// naming a file; check_gradients then appends "<test name> <relative error>" to it for the
// grade table (nothing happens when the variable is unset). gradcheck's per-element
// max_rel_error is noise where a gradient is ~0 (such elements pass by the absolute rule and
// often show 1.0), so the number reported is the directional one, as in PyTorch's fast
// gradcheck: for a random direction v, |g.v - (f(x + h v) - f(x - h v)) / 2h| / max(|g.v|, |.|),
// with g the analytic gradient. One extra backward and two forwards, only while grading.
inline void report_to_grader(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                             const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
    const char* path = std::getenv("PATCHGRAD_GRADE_REPORT");
    if (path == nullptr || *path == '\0') return;
    std::vector<Tensor> xs = inputs;
    for (Tensor& x : xs) x.zero_grad();
    f(xs).backward();
    Rng rng(options.seed + 1);
    double analytic = 0;
    std::vector<std::vector<real>> saved(xs.size()), direction(xs.size());
    for (size_t k = 0; k < xs.size(); ++k) {
        if (!xs[k].requires_grad()) continue;
        saved[k].assign(xs[k].data(), xs[k].data() + xs[k].numel());
        for (int64_t i = 0; i < xs[k].numel(); ++i) {
            direction[k].push_back(static_cast<real>(rng.uniform(-1, 1)));
            if (xs[k].has_grad()) analytic += double(xs[k].grad_data()[i]) * direction[k][i];
        }
        xs[k].zero_grad();
    }
    auto shifted = [&](double t) {
        for (size_t k = 0; k < xs.size(); ++k)
            for (size_t i = 0; i < direction[k].size(); ++i)
                xs[k].data()[i] = static_cast<real>(saved[k][i] + t * direction[k][i]);
        NoGradGuard no_grad;
        return double(f(xs).item());
    };
    const double numeric = (shifted(options.step) - shifted(-options.step)) / (2 * options.step);
    for (size_t k = 0; k < xs.size(); ++k) std::copy(saved[k].begin(), saved[k].end(), xs[k].data());
    const double error = std::abs(analytic - numeric) / std::max({std::abs(analytic), std::abs(numeric), 1e-30});
    std::ofstream out(path, std::ios::app);
    out << Catch::getResultCapture().getCurrentTestName() << ' ' << error << '\n';
}

// For an f that sums hundreds of outputs (|f| ~ 10 to 100): at the default h = 1e-6 the
// round-off term eps |f| / h of chapter 3 reaches a few 1e-8, above atol for small gradients,
// and how far depends on the order of the sums (so on the BLAS). h = 1e-5 balances it with
// the truncation term h^2 |f'''| / 6.
inline GradcheckOptions options_for_large_sums() {
    GradcheckOptions options;
    options.step = 1e-5;
    return options;
}

// Gradient check of a tensor-valued op: checks the scalar weighted_sum(op(inputs), W) for a
// random W, with the default tight tolerances (relative error <= 1e-6, or the PyTorch rule
// atol 1e-8, rtol 1e-6). Fails the test with the per-input report.
inline void check_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& op,
                            const std::vector<Tensor>& inputs, uint64_t seed = 1, GradcheckOptions options = {}) {
    Tensor probe;
    {
        NoGradGuard no_grad;
        probe = op(inputs);
    }
    Rng rng(seed);
    Tensor w = Tensor::uniform(probe.shape(), -1, 1, rng);
    auto scalar = [&](const std::vector<Tensor>& xs) { return weighted_sum(op(xs), w); };
    auto result = gradcheck(scalar, inputs, options);
    report_to_grader(scalar, inputs, options);
    INFO(result.summary());
    REQUIRE(result.passed());
}
#endif

// A fresh directory under the system's temporary directory, removed with its contents.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::random_device rd;
        path =
            std::filesystem::temp_directory_path() / ("patchgrad_test_" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(const std::string& name) const { return (path / name).string(); }
};

// Names of the files in `dir` ending in `suffix`.
inline std::vector<std::string> files_ending_in(const std::string& dir, const std::string& suffix) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            names.push_back(name);
    }
    return names;
}

// A disk that fills up, for as long as this object lives: every write that would take a file
// past `bytes` fails (RLIMIT_FSIZE, EFBIG: "File too large"), as a full disk fails with
// ENOSPC, through the same error paths; SIGXFSZ, which would kill the process, is ignored.
// Keep assertions out of its scope: test output going to a file would fail too.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_) == 0);
        rlimit limit = old_;
        limit.rlim_cur = bytes;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
        old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    }
    ~FileSizeLimit() {
        ::setrlimit(RLIMIT_FSIZE, &old_);
        std::signal(SIGXFSZ, old_handler_);
    }
    FileSizeLimit(const FileSizeLimit&) = delete;
    FileSizeLimit& operator=(const FileSizeLimit&) = delete;

private:
    rlimit old_{};
    void (*old_handler_)(int) = SIG_DFL;
};

// A process forked to run `body`, which exits with body's return value (2 if it throws) and
// never returns into the test; killed, if it still runs, when the test leaves its scope.
struct Child {
    pid_t pid = -1;
    template <class F>
    explicit Child(F body) {
        pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid > 0) return;
        int status = 2;
        try {
            status = body();
        } catch (...) {
        }
        ::_exit(status);
    }
    // The exit status, or 128 + the signal that ended it.
    int wait() {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    ~Child() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
};

// A one-way channel between two processes: a byte sent, a byte received (0 at end of file).
struct Pipe {
    int fd[2] = {-1, -1};
    Pipe() { REQUIRE(::pipe(fd) == 0); }
    ~Pipe() {
        for (int f : fd)
            if (f >= 0) ::close(f);
    }
    void send(char c) { REQUIRE(::write(fd[1], &c, 1) == 1); }
    char receive() {
        char c = 0;
        return ::read(fd[0], &c, 1) == 1 ? c : char(0);
    }
    void close_writing() {
        ::close(fd[1]);
        fd[1] = -1;
    }
};

// Whether `s` is UTF-8 as strict decoders (Python's) read it: no overlong forms, no
// surrogates, nothing above U+10FFFF, no sequence cut short.
inline bool is_strict_utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const unsigned char b = static_cast<unsigned char>(s[i]);
        const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + size_t(n) > s.size()) return false;
        uint32_t cp = n == 1 ? b : b & (0xFFu >> (n + 1));
        for (int k = 1; k < n; ++k) {
            const unsigned char c = static_cast<unsigned char>(s[i + size_t(k)]);
            if ((c >> 6) != 2) return false;
            cp = (cp << 6) | (c & 0x3Fu);
        }
        const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < smallest[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
        i += size_t(n);
    }
    return true;
}

// Runs `f` and requires it to throw std::invalid_argument whose message contains every one
// of `fragments` (the op name, the shapes...).
template <class F>
void require_error(F&& f, const std::vector<std::string>& fragments) {
    try {
        f();
    } catch (const std::exception& e) {
        const std::string msg = e.what();
        for (const auto& frag : fragments) {
            INFO("message: " << msg << "\nmissing: " << frag);
            CHECK(msg.find(frag) != std::string::npos);
        }
        return;
    }
    FAIL("expected an exception mentioning " << (fragments.empty() ? std::string() : fragments[0]));
}

// ---- fuzzing the file readers ([fuzz]) ---------------------------------------------------

// One random change to a file's bytes, of the kinds that break readers: flipped bits, a cut,
// an 8-byte little-endian field overwritten with an extreme value (at offset 0 half the
// time: safetensors' header length), a run of digits (a shape, an offset) replaced by a
// huge or negative number, a copied span inserted, a byte set to a JSON delimiter.
inline std::string mutate(std::string s, Rng& rng) {
    auto below = [&rng](size_t n) { return n == 0 ? size_t(0) : static_cast<size_t>(rng.below(n)); };
    switch (rng.below(6)) {
        case 0:
            for (uint64_t k = 0, n = 1 + rng.below(4); k < n && !s.empty(); ++k)
                s[below(s.size())] ^= static_cast<char>(1 << rng.below(8));
            break;
        case 1:
            s.resize(below(s.size() + 1));
            break;
        case 2: {
            const uint64_t extremes[] = {
                0, 1, 7, 8, 4096, uint64_t(1) << 32, uint64_t(1) << 62, ~uint64_t(0) >> 1, ~uint64_t(0)};
            const uint64_t v = rng.below(2) ? extremes[rng.below(std::size(extremes))] : rng.next_u64();
            const size_t at = rng.below(2) ? 0 : below(s.size());
            for (size_t i = 0; i < 8 && at + i < s.size(); ++i) s[at + i] = static_cast<char>(v >> (8 * i));
            break;
        }
        case 3: {
            const char* numbers[] = {
                "0", "-1", "4294967296", "9223372036854775807", "18446744073709551616", "99999999999999999999999"};
            size_t begin = s.find_first_of("0123456789", below(s.size()));
            if (begin == std::string::npos) break;
            const size_t end = std::min(s.find_first_not_of("0123456789", begin), s.size());
            s.replace(begin, end - begin, numbers[rng.below(std::size(numbers))]);
            break;
        }
        case 4: {
            const size_t from = below(s.size()), length = below(std::min<size_t>(s.size() - from, 64) + 1);
            s.insert(below(s.size() + 1), s.substr(from, length));
            break;
        }
        case 5: {
            const char bytes[] = {'\0', '\xff', '"', '{', '}', '[', ']', ',', ':', '\\', '-', '9'};
            if (!s.empty()) s[below(s.size())] = bytes[rng.below(std::size(bytes))];
            break;
        }
    }
    return s;
}

// Feeds `runs` inputs, each one to three mutate() steps away from one of `seeds`, to
// parse(bytes, name), a reader's in-memory entry point. Each must load, or throw
// `Documented` with a message naming the input; any other exception (std::bad_alloc
// included) fails the test, naming the input and how to rebuild it. A crash or a hang fails
// the run itself. Returns how many loaded; the rest were refused.
template <class Documented, class Parse>
int64_t fuzz(const std::vector<std::string>& seeds, int64_t runs, uint64_t seed, Parse parse) {
    Rng rng(seed);
    int64_t loaded = 0;
    for (int64_t i = 0; i < runs; ++i) {
        std::string bytes = seeds[rng.below(seeds.size())];
        for (uint64_t k = 0, n = 1 + rng.below(3); k < n; ++k) bytes = mutate(bytes, rng);
        const std::string name = "fuzz input " + std::to_string(i);
        INFO(name << " of Rng(" << seed << "), " << bytes.size() << " bytes");
        try {
            parse(bytes, name);
            ++loaded;
        } catch (const Documented& e) {
            const std::string message = e.what();
            INFO(message);
            CHECK(message.find(name) != std::string::npos);
        } catch (const std::exception& e) {
            FAIL("threw " << typeid(e).name() << ": " << e.what());
        } catch (...) {
            FAIL("threw something that is not a std::exception");
        }
    }
    return loaded;
}

}  // namespace patchgrad::test
