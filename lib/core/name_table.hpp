#pragma once
// An enum's values and the names the config, the command line and files give them, written once:
// the name of a value, the value of a name, and the list of names for messages. A table may give
// a value other spellings after its first (dtype's "float32" for fp32): those are read, never
// written nor listed.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace zt {

template <class E>
struct NamedValue {
  E value;
  std::string_view name;
};

template <class E, size_t N>
struct NameTable {
  std::array<NamedValue<E>, N> entries;

  // The first name of `value`; "?" for a value the table lacks.
  constexpr std::string_view name(E value) const {
    for (const NamedValue<E>& e : entries)
      if (e.value == value) return e.name;
    return "?";
  }
  constexpr std::optional<E> find(std::string_view name) const {
    for (const NamedValue<E>& e : entries)
      if (e.name == name) return e.value;
    return std::nullopt;
  }
  // Each value's first name, in table order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < N; ++i)
      if (name(entries[i].value) == entries[i].name) out.emplace_back(entries[i].name);
    return out;
  }
  // "a, b or c" (`last` "or"), or "a, b, c" (`last` ","): for messages.
  std::string list(std::string_view last = "or") const {
    const std::vector<std::string> all = names();
    std::string out;
    for (size_t i = 0; i < all.size(); ++i) {
      if (i > 0 && (i + 1 < all.size() || last == ",")) {
        out += ", ";
      } else if (i > 0) {
        out += ' ';
        out += last;
        out += ' ';
      }
      out += all[i];
    }
    return out;
  }
  // The value of `name`; anything else is an error naming `key`.
  E parse(std::string_view name, std::string_view key) const {
    if (const std::optional<E> v = find(name)) return *v;
    fail("{}: unknown value \"{}\" (expected {})", key, name, list());
  }
};

// name_table<Packing>({{Packing::None, "none"}, ...}): N from the list.
template <class E, size_t N>
constexpr NameTable<E, N> name_table(const NamedValue<E> (&entries)[N]) {
  NameTable<E, N> t{};
  for (size_t i = 0; i < N; ++i) t.entries[i] = entries[i];
  return t;
}

}  // namespace zt
