#include "vit/cli/cli.h"

#include <algorithm>
#include <csignal>
#include <limits>

#include "autograd/cpu/parallel.h"
#include "autograd/cpu/thread_choice.h"

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
        if (name.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "'");
        if (std::find(value_flags.begin(), value_flags.end(), name) == value_flags.end())
            throw UsageError("unknown option '" + name + "'");
        std::string value;
        if (eq != std::string::npos) {
            value = arg.substr(eq + 1);
        } else {
            if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
            value = args[++i];
        }
        // Silently keeping the last of two values would hide a typo or a pasted command line.
        const auto [it, inserted] = flags.values.emplace(name, value);
        if (!inserted) throw UsageError(name + " is given twice ('" + it->second + "' and '" + value + "')");
    }
    return flags;
}

int64_t parse_positive_int(const std::string& flag, const std::string& text, int64_t max) {
    const bool digits = !text.empty() && text.size() <= 12 &&
                        std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    const int64_t value = digits ? std::stoll(text) : 0;
    if (value <= 0) throw UsageError(flag + " needs a positive integer, got '" + text + "'");
    if (value > max) throw UsageError(flag + " must be at most " + std::to_string(max) + ", got '" + text + "'");
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
        throw UsageError("unknown config '" + name + "' (known: " + known + ")");
    }
}

int64_t parse_count(const std::string& flag, const std::string& text) {
    if (text == "0") return 0;
    try {
        return parse_positive_int(flag, text);
    } catch (const UsageError&) {
        throw UsageError(flag + " needs 0 or a positive integer, got '" + text + "'");
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
