// metadata_mutator.h — hostile edits of a checkpoint's metadata, for the fuzz tests of the
// resume reader: the [fuzz] test in tests/vit/train/test_resume_state.cpp and the libFuzzer
// entry point tests/fuzz/fuzz_resume.cpp. Needs no test framework.
#pragma once

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "patchgrad/autograd/rng.h"
#include "patchgrad/vit/train/checkpoint.h"

namespace patchgrad::test {

// One hostile change to a checkpoint's metadata, seven times in eight to its training state
// ("state.*"): a field set to an extreme or malformed number or to another field's value,
// nudged by one, removed, or the dropout generator's four words set to 0. Returns what it did.
inline std::string mutate_metadata(Metadata& m, Rng& rng) {
    std::vector<std::string> keys, state_keys;
    for (const auto& entry : m) {
        keys.push_back(entry.first);
        if (entry.first.rfind("state.", 0) == 0) state_keys.push_back(entry.first);
    }
    const std::vector<std::string>& pool = rng.below(8) < 7 && !state_keys.empty() ? state_keys : keys;
    const std::string key = pool[rng.below(pool.size())];
    // Counts, the ends of the integer types, and text that is no count, '|' between them.
    const std::string choices =
        "0|1|-1|2|4|5|8|1000|1000000000000000000|1e18|9223372036854775807|-9223372036854775808|"
        "18446744073709551615|nan|inf|-inf|1e308|-0|0.5|1.0000001||x| 1|0x10";
    std::vector<std::string> values(1);
    for (const char c : choices) {
        if (c == '|')
            values.emplace_back();
        else
            values.back() += c;
    }
    switch (rng.below(5)) {
        case 0:
        case 1:
            m[key] = values[rng.below(values.size())];
            return key + " = '" + m[key] + "'";
        case 2: {
            const std::string& other = keys[rng.below(keys.size())];
            m[key] = m[other];
            return key + " = " + other + "'s '" + m[key] + "'";
        }
        case 3: {
            char* end = nullptr;
            const long long v = std::strtoll(m[key].c_str(), &end, 10);
            if (m[key].empty() || *end != '\0' || v == LLONG_MIN || v == LLONG_MAX) break;
            m[key] = std::to_string(rng.below(2) ? v + 1 : v - 1);
            return key + " nudged to " + m[key];
        }
        case 4:
            if (rng.below(2)) {
                for (int i = 0; i < 4; ++i) m["state.dropout_rng." + std::to_string(i)] = "0";
                return "state.dropout_rng.0..3 = 0";
            }
            break;
    }
    m.erase(key);
    return key + " removed";
}

}  // namespace patchgrad::test
