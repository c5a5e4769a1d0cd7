#include "vit/cli/cli.h"

#include <algorithm>
#include <limits>

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
        if (name.rfind("--", 0) != 0)
            throw UsageError("unexpected argument '" + arg + "'");
        if (std::find(value_flags.begin(), value_flags.end(), name) == value_flags.end())
            throw UsageError("unknown option '" + name + "'");
        if (eq != std::string::npos) {
            flags.values[name] = arg.substr(eq + 1);
        } else {
            if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
            flags.values[name] = args[++i];
        }
    }
    return flags;
}

int64_t parse_positive_int(const std::string& flag, const std::string& text) {
    const bool digits = !text.empty() && text.size() <= 12 &&
                        std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    const int64_t value = digits ? std::stoll(text) : 0;
    if (value <= 0) throw UsageError(flag + " needs a positive integer, got '" + text + "'");
    return value;
}

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

}  // namespace patchgrad::cli
