// cli.h — what the subcommands of the `patchgrad` program share (main.cpp dispatches).
//
// A subcommand takes the arguments after its name and returns the exit status. A bad
// command line throws UsageError; main prints its message as one line and exits with 2.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "vit/vision_transformer.h"

namespace patchgrad::cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Flags {
    std::map<std::string, std::string> values;  // "--config" -> "vit-b16"
    bool help = false;                          // --help or -h was given
};

// Accepts "--name value" and "--name=value" for the flags in `value_flags`, and --help/-h.
// Anything else (an unknown flag, a stray word, a flag without its value, a flag given
// twice) is a UsageError.
Flags parse_flags(const std::vector<std::string>& args, const std::vector<std::string>& value_flags);

// The named configuration (vit_config); an unknown name is a UsageError listing the known ones.
ViTConfig config_from_flag(const std::string& name);

// "42" -> 42; anything but a positive decimal integer of at most 12 digits, or a value above
// `max`, is a UsageError naming `flag`.
int64_t parse_positive_int(const std::string& flag, const std::string& text,
                           int64_t max = std::numeric_limits<int64_t>::max());
// --threads: 1 to kMaxThreads (autograd/parallel.h), or "auto" -> 0.
int parse_threads(const std::string& text);
// set_num_threads(threads), or for 0 (auto) the count choose_thread_count measures to pay here.
void use_threads(int threads);
// The same with 0 allowed ("--warmup 0").
int64_t parse_count(const std::string& flag, const std::string& text);

// The subcommands.
int summary_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);
int train_command(const std::vector<std::string>& args);
int eval_command(const std::vector<std::string>& args);
int inspect_command(const std::vector<std::string>& args);

}  // namespace patchgrad::cli
