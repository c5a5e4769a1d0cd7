// cli.h — what the subcommands of the `patchgrad` program share (main.cpp dispatches).
//
// A subcommand takes the arguments after its name and returns the exit status. A bad
// command line throws UsageError; main prints its message as one line and exits with 2.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/vit/train/train_options.h"
#include "patchgrad/vit/vision_transformer.h"

namespace patchgrad::cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Flags {
    std::map<std::string, std::string> values;  // "--config" -> "vit-b16"
    bool help = false;                          // --help or -h was given

    bool given(const std::string& name) const { return values.count(name) > 0; }
    // The flag's value, or `fallback` where the command line does not give the flag.
    std::string value_or(const std::string& name, const std::string& fallback) const {
        const auto it = values.find(name);
        return it == values.end() ? fallback : it->second;
    }
};

// Accepts "--name value" and "--name=value" for the flags in `value_flags`, and --help/-h.
// Anything else (an unknown flag, a stray word, a flag without its value, a flag given
// twice) is a UsageError.
Flags parse_flags(const std::vector<std::string>& args, const std::vector<std::string>& value_flags);

// The data folder of --data, $PATCHGRAD_DATA or the default (resolve_data_dir). --data given
// with an empty value is a UsageError, as --out's is: it would quietly mean the default folder.
DataDir data_dir_from_flags(const Flags& flags);

// The named configuration (vit_config); an unknown name is a UsageError listing the known ones.
ViTConfig config_from_flag(const std::string& name);

// "42" -> 42; anything but a positive decimal integer of at most 12 digits, or a value above
// `max`, is a UsageError naming `flag`.
int64_t parse_positive_int(const std::string& flag, const std::string& text,
                           int64_t max = std::numeric_limits<int64_t>::max());
// --threads: 1 to kMaxThreads (autograd/cpu/threads/parallel.h), or "auto" -> 0.
int parse_threads(const std::string& text);
// set_num_threads(threads), or for 0 (auto) the count choose_thread_count measures to pay here.
void use_threads(int threads);
// The same with 0 allowed ("--warmup 0").
int64_t parse_count(const std::string& flag, const std::string& text);
// "7" -> 7 for a seed or an index: any integer from 0 to 2^64 - 1, else a UsageError naming `flag`.
uint64_t parse_unsigned(const std::string& flag, const std::string& text);
// "0.5" -> 0.5; anything but a finite number is a UsageError naming `flag`.
double parse_number(const std::string& flag, const std::string& text);
// "bf16" -> MatmulPrecision::Bf16: parse_enum (autograd/enum_names.h) for a flag's value, its
// error (naming `flag`, the value and the choices) a UsageError.
template <class E>
E parse_enum_flag(const std::string& flag, const std::string& text) {
    try {
        return parse_enum<E>(text, flag);
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
}

// ---- `patchgrad train`'s flags: the rows of the option table (vit/train/train_options.h) ----

// A row with a bool member is a switch ("--nesterov", recorded as "true"); every other row
// takes a value, as parse_flags reads them. `command_switches` are switches of the command
// that are no option (--print-recipe), recorded the same way.
Flags parse_train_flags(std::vector<std::string> args, const std::vector<std::string>& command_switches = {});
// Sets the row's member from the flag's text: a UsageError naming the flag for text that is
// not of the member's kind ("--epochs needs a positive integer, got '0'", "train options:
// --optimizer must be sgd, adam or adamw, got 'lamb'").
void set_train_option(TrainOptions& o, const TrainOption& option, const std::string& text);
// set_train_option for every row given in `flags`.
void apply_train_flags(TrainOptions& o, const Flags& flags);

// For its lifetime, SIGINT (Ctrl-C), SIGTERM and, where there is one, SIGHUP (a closed
// terminal or ssh session) only set a flag, which `train` polls after every step to save a
// checkpoint and stop; the handlers before are restored afterwards.
class StopSignals {
public:
    StopSignals();
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

private:
#ifdef SIGHUP
    static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
#else
    static constexpr int kSignals[] = {SIGINT, SIGTERM};
#endif
    std::vector<void (*)(int)> previous_;
};
// Whether one of those signals arrived since the last StopSignals was installed.
bool stop_signal_received();

// The subcommands.
int summary_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);
int bench_memory_command(const std::vector<std::string>& args);  // bench memory (bench_memory.cpp)
// The fastest of `repeats` runs of `run`, in seconds, after one warm-up run (bench.cpp).
double best_seconds(int64_t repeats, const std::function<void()>& run);
int train_command(const std::vector<std::string>& args);
int eval_command(const std::vector<std::string>& args);
int predict_command(const std::vector<std::string>& args);
int inspect_command(const std::vector<std::string>& args);
int compare_command(const std::vector<std::string>& args);

}  // namespace patchgrad::cli
