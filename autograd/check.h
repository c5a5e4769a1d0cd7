// check.h — check(condition, message parts...): how patchgrad refuses a bad argument.
//
//   check(a.size(-1) == in, "linear: input ", a.shape(), " does not end in the ", in, " in-features");
//
// throws std::invalid_argument("linear: input [2, 5] does not end in the 4 in-features") when
// the condition is false. The parts are joined only then: on the success path a check costs
// the comparison and nothing else (no string is built, nothing is allocated), so ops call it
// on every forward. That only holds if the parts are raw values: pass `x.shape()`, a number
// or a `const char*`, never `shape_str(x.shape())` or `std::string(op) + ...`, which would be
// built before check() even looks at the condition. Being arguments, the parts are computed
// before the condition is tested: each must be safe to compute when the condition holds (an
// undefined tensor's shape() is not; keep such a check behind an `if`).
//
// How a part is written:
//   strings, string literals, const char*      as they are
//   Shape                                      "[2, 3, 4]" (shape_str)
//   integers                                   std::to_string: 42, -1
//   floating point                             std::to_string: 0.500000 (six decimals)
// A message that needs other number formatting (the shortest round-trip form, say) keeps its
// own `if (!ok) throw ...`.
//
// check<std::out_of_range>(...) and check<std::runtime_error>(...) throw those instead;
// fail<Error>(parts...) throws unconditionally, for the end of a chain of cases.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace patchgrad {

// A tensor's dimensions, outermost first: [batch, rows, cols].
using Shape = std::vector<int64_t>;

// "[2, 3, 4]" — used in every error message.
std::string shape_str(const Shape& shape);

namespace check_detail {

inline void append(std::string& s, std::string_view text) { s += text; }
inline void append(std::string& s, const Shape& shape) { s += shape_str(shape); }

template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
void append(std::string& s, T value) {
    // A bool would print as 0/1 and a char as its code: say what is meant with a string.
    static_assert(!std::is_same_v<T, bool> && !std::is_same_v<T, char>, "check: pass text, not a bool or a char");
    s += std::to_string(value);
}

}  // namespace check_detail

// Kept out of line and marked cold so that the callers' fast path stays small.
template <class Error = std::invalid_argument, class... Parts>
[[noreturn, gnu::cold, gnu::noinline]] void fail(const Parts&... parts) {
    std::string message;
    (check_detail::append(message, parts), ...);
    throw Error(message);
}

template <class Error = std::invalid_argument, class... Parts>
inline void check(bool condition, const Parts&... parts) {
    if (__builtin_expect(!condition, 0)) fail<Error>(parts...);
}

}  // namespace patchgrad
