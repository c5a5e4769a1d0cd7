#include "patchgrad/vit/cli/cli.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/thread_choice.h"

namespace patchgrad::cli {

Flags parse_flags(const std::vector<std::string>& args, const std::vector<std::string>& value_flags) {
    Flags flags;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            flags.help = true;
            continue;
        }
        const size_t eq = arg.find('=');
        const std::string name = arg.substr(0, eq);
        check<UsageError>(name.rfind("--", 0) == 0, "unexpected argument '", arg, "'");
        check<UsageError>(std::find(value_flags.begin(), value_flags.end(), name) != value_flags.end(),
                          "unknown option '", name, "'");
        std::string value;
        if (eq != std::string::npos) {
            value = arg.substr(eq + 1);
        } else {
            check<UsageError>(i + 1 < args.size(), name, " needs a value");
            value = args[++i];
        }
        // Silently keeping the last of two values would hide a typo or a pasted command line.
        const auto [it, inserted] = flags.values.emplace(name, value);
        check<UsageError>(inserted, name, " is given twice ('", it->second, "' and '", value, "')");
    }
    return flags;
}

DataDir data_dir_from_flags(const Flags& flags) {
    check<UsageError>(!flags.given("--data") || !flags.values.at("--data").empty(),
                      "--data needs a directory, got an empty value");
    return resolve_data_dir(flags.value_or("--data", ""));
}

int64_t parse_positive_int(const std::string& flag, const std::string& text, int64_t max) {
    const bool digits = !text.empty() && text.size() <= 12 &&
                        std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    const int64_t value = digits ? std::stoll(text) : 0;
    check<UsageError>(value > 0, flag, " needs a positive integer, got '", text, "'");
    check<UsageError>(value <= max, flag, " must be at most ", max, ", got '", text, "'");
    return value;
}

int parse_threads(const std::string& text) {
    if (text == "auto") return 0;
    return static_cast<int>(parse_positive_int("--threads", text, kMaxThreads));
}

void use_threads(int threads) { set_num_threads(threads > 0 ? threads : choose_thread_count(kMaxThreads).threads); }

ViTConfig config_from_flag(const std::string& name) {
    try {
        return vit_config(name);
    } catch (const std::invalid_argument&) {
        std::string known;
        for (const std::string& n : vit_config_names()) known += (known.empty() ? "" : ", ") + n;
        fail<UsageError>("unknown config '", name, "' (known: ", known, ")");
    }
}

int64_t parse_count(const std::string& flag, const std::string& text) {
    if (text == "0") return 0;
    try {
        return parse_positive_int(flag, text);
    } catch (const UsageError&) {
        fail<UsageError>(flag, " needs 0 or a positive integer, got '", text, "'");
    }
}

uint64_t parse_unsigned(const std::string& flag, const std::string& text) {
    try {
        return parse_uint64(text, flag, "the value");
    } catch (const std::invalid_argument&) {
        fail<UsageError>(flag, " needs a non-negative integer, got '", text, "'");
    }
}

double parse_number(const std::string& flag, const std::string& text) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    check<UsageError>(!text.empty() && end == text.c_str() + text.size() && std::isfinite(value), flag,
                      " needs a number, got '", text, "'");
    return value;
}

// ---- `patchgrad train`'s flags ---------------------------------------------------------------

namespace {

// Removes every "--name" from args; returns whether there was one.
bool take_switch(std::vector<std::string>& args, const std::string& name) {
    const auto end = std::remove(args.begin(), args.end(), name);
    const bool found = end != args.end();
    args.erase(end, args.end());
    return found;
}

}  // namespace

Flags parse_train_flags(std::vector<std::string> args, const std::vector<std::string>& command_switches) {
    std::vector<std::string> switches = command_switches, value_flags;
    for (const TrainOption& option : train_options())
        (option.is_switch() ? switches : value_flags).push_back(std::string("--") + option.flag);
    std::vector<std::string> given;
    for (const std::string& name : switches)
        if (take_switch(args, name)) given.push_back(name);
    Flags flags = parse_flags(args, value_flags);
    for (const std::string& name : given) flags.values[name] = "true";
    return flags;
}

void set_train_option(TrainOptions& o, const TrainOption& option, const std::string& text) {
    const std::string flag = std::string("--") + option.flag;
    std::visit(
        [&](auto field) {
            using F = decltype(field);
            if constexpr (std::is_same_v<F, int64_t*>) {
                *field = parse_positive_int(flag, text);
            } else if constexpr (std::is_same_v<F, Count>) {
                *field.value = parse_count(flag, text);
            } else if constexpr (std::is_same_v<F, ThreadCount>) {
                *field.value = parse_threads(text);
            } else if constexpr (std::is_same_v<F, uint64_t*>) {
                *field = parse_unsigned(flag, text);
            } else if constexpr (std::is_same_v<F, double*> || std::is_same_v<F, float*>) {
                *field = static_cast<std::remove_pointer_t<F>>(parse_number(flag, text));
            } else if constexpr (std::is_same_v<F, bool*>) {
                check<UsageError>(text == "true", flag, " is a switch: it takes no value, got '", text, "'");
                *field = true;
            } else if constexpr (std::is_same_v<F, std::string*>) {
                *field = text;
            } else {  // one of the enums
                using E = std::remove_pointer_t<F>;
                const std::optional<E> value = enum_from_name<E>(text);
                if (!value)
                    fail<UsageError>("train options: ", flag, " must be ", enum_choices<E>(), ", got '", text, "'");
                *field = *value;
            }
        },
        option.field(o));
}

void apply_train_flags(TrainOptions& o, const Flags& flags) {
    for (const TrainOption& option : train_options()) {
        const auto given = flags.values.find(std::string("--") + option.flag);
        if (given != flags.values.end()) set_train_option(o, option, given->second);
    }
}

// ---- stopping on a signal --------------------------------------------------------------------

namespace {
// The one piece of global state of the program: a signal handler may do no more than set a
// volatile std::sig_atomic_t, which the training loop polls after every step (saves a
// checkpoint and stops). The handler also restores the default action, so a second Ctrl-C
// ends the program at once (checkpoint files are written atomically, so even that cannot
// leave a half-written one).
volatile std::sig_atomic_t g_stop_signal = 0;

void request_stop(int signal) {
    g_stop_signal = signal;
    std::signal(signal, SIG_DFL);
}
}  // namespace

StopSignals::StopSignals() {
    g_stop_signal = 0;
    for (int signal : kSignals) previous_.push_back(std::signal(signal, request_stop));
}

StopSignals::~StopSignals() {
    for (size_t i = 0; i < previous_.size(); ++i) std::signal(kSignals[i], previous_[i]);
}

bool stop_signal_received() { return g_stop_signal != 0; }

}  // namespace patchgrad::cli
