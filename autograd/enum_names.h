// enum_names.h — one table of names per enum, for everything that spells an enum as text:
// command-line flags, checkpoint metadata, --help and describe(). The table sits beside the
// enum it names, as a specialisation of EnumNames:
//
//   enum class Pool { Cls, Mean };
//   template <> struct EnumNames<Pool> {
//       static constexpr std::pair<Pool, const char*> table[] = {{Pool::Cls, "cls"}, {Pool::Mean, "mean"}};
//   };
//
// so that a name is written once, and a new value without a name fails where it is printed.
#pragma once

#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace patchgrad {

template <class E>
struct EnumNames;

template <class E>
std::string enum_name(E value) {
    for (const auto& [v, name] : EnumNames<E>::table)
        if (v == value) return name;
    throw std::logic_error("enum_name: a value without a name in its EnumNames table");
}

// "sgd, adam or adamw": the names for a message or --help.
template <class E>
std::string enum_choices() {
    std::string s;
    const size_t n = std::size(EnumNames<E>::table);
    for (size_t i = 0; i < n; ++i)
        s += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + EnumNames<E>::table[i].second;
    return s;
}

template <class E>
std::optional<E> enum_from_name(const std::string& name) {
    for (const auto& [v, n] : EnumNames<E>::table)
        if (name == n) return v;
    return std::nullopt;
}

// The value named `name`, or std::invalid_argument "<what> 'max' is not cls or mean"
// (`what`: "ViTConfig: pool", "checkpoint F: train.optimizer").
template <class E>
E parse_enum(const std::string& name, const std::string& what) {
    const std::optional<E> value = enum_from_name<E>(name);
    if (!value) throw std::invalid_argument(what + " '" + name + "' is not " + enum_choices<E>());
    return *value;
}

}  // namespace patchgrad
