// test_cli.cpp — the flag parsing and stop signals the `patchgrad` subcommands share (vit/cli/cli.h), linked
// into the tests on its own: a bad command line is one UsageError naming the flag.
#include "patchgrad/vit/cli/cli.h"

#include <csignal>

#include "catch.h"
#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/version.h"
#include "test_util.h"

namespace patchgrad::cli {
namespace {

using patchgrad::test::Child;
using patchgrad::test::Pipe;
using patchgrad::test::require_error;

TEST_CASE("cli: parse_flags takes --name value and --name=value", "[cli]") {
    const Flags flags = parse_flags({"--out", "runs/a", "--lr=0.5", "-h"}, {"--out", "--lr"});
    CHECK(flags.values == std::map<std::string, std::string>{{"--out", "runs/a"}, {"--lr", "0.5"}});
    CHECK(flags.help);
    require_error([] { parse_flags({"--lr"}, {"--lr"}); }, {"--lr needs a value"});
    require_error([] { parse_flags({"--lt", "1"}, {"--lr"}); }, {"unknown option '--lt'"});
    require_error([] { parse_flags({"stray"}, {"--lr"}); }, {"unexpected argument 'stray'"});
}

// A flag given twice silently took its last value.
TEST_CASE("cli: a flag given twice is a usage error naming it and both values", "[cli][errors]") {
    require_error(
        [] {
            parse_flags({"--out", "runs/a", "--lr", "1", "--out=runs/b"}, {"--out", "--lr"});
        },
        {"--out is given twice", "'runs/a'", "'runs/b'"});
    CHECK_THROWS_AS(parse_flags({"--lr", "1", "--lr", "1"}, {"--lr"}), UsageError);
}

// --threads 2147483648 passed the flag check and failed later as -2147483648.
TEST_CASE("cli: counts are checked against their range when parsed, naming the flag", "[cli][errors]") {
    CHECK(parse_positive_int("--batch", "128") == 128);
    CHECK(parse_positive_int("--batch", "999999999999") == 999999999999);
    require_error([] { parse_positive_int("--batch", "1000000000000"); }, {"--batch", "positive integer"});
    require_error([] { parse_positive_int("--batch", "0"); }, {"--batch", "'0'"});
    require_error([] { parse_positive_int("--repeats", "11", 10); }, {"--repeats must be at most 10, got '11'"});
    CHECK(parse_threads("4") == 4);
    CHECK(parse_threads("1024") == 1024);
    require_error([] { parse_threads("2147483648"); }, {"--threads must be at most 1024, got '2147483648'"});
    require_error([] { parse_threads("-1"); }, {"--threads", "'-1'"});
    CHECK(parse_count("--warmup", "0") == 0);
    CHECK(parse_threads("auto") == 0);
    CHECK(parse_unsigned("--seed", "18446744073709551615") == 18446744073709551615ull);
    require_error([] { parse_unsigned("--image", "-1"); }, {"--image needs a non-negative integer, got '-1'"});
    require_error([] { parse_unsigned("--seed", "18446744073709551616"); }, {"--seed", "'18446744073709551616'"});
}

// eval's --precision fp16 was an invalid_argument (exit status 1, like a missing file), where
// bench's was a usage error (status 2).
TEST_CASE("cli: an enum flag's unknown value is a usage error naming the flag and the choices", "[cli][errors]") {
    CHECK(parse_enum_flag<Pool>("--pool", "seq") == Pool::Seq);
    require_error([] { parse_enum_flag<Pool>("--pool", "max"); }, {"--pool 'max' is not cls, mean or seq"});
    CHECK_THROWS_AS(parse_enum_flag<MatmulPrecision>("--precision", "fp16"), UsageError);
}

// What `patchgrad --version` prints (CTest "cli: --version prints the version" runs it) and
// checkpoints carry: the generated header holds project()'s MAJOR.MINOR.PATCH.
// (Checked by hand: <regex> draws false -Wmaybe-uninitialized errors from GCC 12 at -O1, the
// sanitizer build's level.)
TEST_CASE("cli: the version is MAJOR.MINOR.PATCH from CMakeLists.txt", "[cli]") {
    const std::string version = kVersion;
    INFO("version " << version);
    int numbers = 0;
    bool digit_before = false, well_formed = !version.empty();
    for (char c : version) {
        const bool digit = c >= '0' && c <= '9';
        if (digit && !digit_before) ++numbers;
        if (!digit && (c != '.' || !digit_before)) well_formed = false;  // a dot follows a digit
        digit_before = digit;
    }
    CHECK(well_formed);
    CHECK(digit_before);  // ends in a digit
    CHECK(numbers == 3);
}

// `--data ''` quietly used the default folder while `--out ''` was an error.
TEST_CASE("cli: an empty --data is a usage error, a missing one the default or PATCHGRAD_DATA", "[cli][errors]") {
    require_error([] { data_dir_from_flags(parse_flags({"--data="}, {"--data"})); },
                  {"--data needs a directory, got an empty value"});
    require_error([] { data_dir_from_flags(parse_flags({"--data", ""}, {"--data"})); }, {"--data needs a directory"});
    CHECK(data_dir_from_flags(parse_flags({"--data", "d"}, {"--data"})).path == "d");
    CHECK(data_dir_from_flags(parse_flags({}, {"--data"})).source != "--data");
    require_error([] { eval_command({"--checkpoint", "c.safetensors", "--data="}); }, {"--data needs a directory"});
    require_error(
        [] {
            inspect_command({"--config", "cifar-tiny", "--out", "o", "--data", ""});
        },
        {"--data needs a directory"});
}

// SIGHUP (a closed terminal) ended a training run without saving.
TEST_CASE("cli: SIGINT, SIGTERM and SIGHUP ask training to save and stop", "[cli]") {
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
        INFO("signal " << signal);
        StopSignals signals;
        CHECK_FALSE(stop_signal_received());
        std::raise(signal);  // would end the test binary were it not caught
        CHECK(stop_signal_received());
    }
}

// A step that never ends (an endless loop of a damaged resume file's making) held the run:
// the first signal only asks for a stop after the step, so the second must end the program.
TEST_CASE("cli: a second SIGINT or SIGTERM ends a program stuck in a step", "[cli][signals]") {
    for (int signal : {SIGINT, SIGTERM}) {
        INFO("signal " << signal);
        Pipe ready;
        Child stuck([&] {
            StopSignals signals;
            ready.send('r');
            for (;;) ::pause();  // a step that never polls
            return 0;
        });
        ready.close_writing();
        REQUIRE(ready.receive() == 'r');
        REQUIRE(::kill(stuck.pid, signal) == 0);
        ::usleep(100000);
        CHECK(::waitpid(stuck.pid, nullptr, WNOHANG) == 0);  // the first one asked for a stop only
        REQUIRE(::kill(stuck.pid, signal) == 0);
        CHECK(stuck.wait() == 128 + signal);
    }
}

}  // namespace
}  // namespace patchgrad::cli
