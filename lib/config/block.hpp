#pragma once
// One JSON object of a config being judged (docs/config.md, "How keys are judged"): typed reads with
// defaults, ranges and "auto"; aliases and deprecated spellings; keys DeepSpeed knows that have no
// effect here; and, once every key has been read, the verdict on the keys nobody asked for.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/diagnostics.hpp"
#include "core/name_table.hpp"

namespace zt::config {

enum class UnknownKeys {
  Error,  // strict blocks: a typo must not silently fall back to a default
  Warn,   // DeepSpeed ignores unknown keys here; warn with a suggestion, then ignore
};

struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
  static IntRange at_least(int64_t lo) { return {lo, std::numeric_limits<int64_t>::max()}; }
  static IntRange between(int64_t lo, int64_t hi) { return {lo, hi}; }
  std::string describe() const;  // "0..3", ">= 1"
};

struct NumberRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false, max_open = false;
  static NumberRange positive() { return {0.0, std::numeric_limits<double>::infinity(), true, false}; }
  static NumberRange non_negative() { return {0.0, std::numeric_limits<double>::infinity(), false, false}; }
  static NumberRange unit() { return {0.0, 1.0, false, false}; }            // [0, 1]
  static NumberRange unit_half_open() { return {0.0, 1.0, false, true}; }   // [0, 1)
  bool contains(double v) const;
  std::string describe() const;  // "> 0", "in [0, 1)"
};

class Block {
public:
  // `value` null or absent: an empty block. Anything else but an object is an error.
  Block(const Diagnostics& diag, std::string path, const nlohmann::json* value, UnknownKeys unknown);

  const Diagnostics& diagnostics() const { return diag_; }
  const std::string& path() const { return path_; }
  std::string path_of(const std::string& key) const { return join_path(path_, key); }
  // An error about how keys relate: thrown, ending this block's reading.
  [[noreturn]] void fail(const std::string& key, const std::string& what) const { diag_.fail(path_of(key), what); }
  // An error about one key's value: collected with the config's other errors (Diagnostics::reject);
  // the read goes on with the key's default.
  void reject(const std::string& key, const std::string& what) const { diag_.reject(path_of(key), what); }
  void warn(const std::string& key, const std::string& what) const { diag_.warn(path_of(key), what); }

  // Queries do not mark the key as known.
  bool present(const std::string& key) const;  // given and not null
  bool is_null(const std::string& key) const;  // given as null
  bool is_auto(const std::string& key) const;  // given as "auto"

  // The raw value; marks the key known. nullptr when absent or null.
  const nlohmann::json* raw(const std::string& key);

  // Typed reads; each marks the key known. Absent or null: the fallback (or nullopt). "auto":
  // `auto_value` when the key has a row in the "auto" table, otherwise an error naming the key.
  std::optional<int64_t> optional_integer(const std::string& key, IntRange range,
                                          std::optional<int64_t> auto_value = std::nullopt);
  int64_t integer(const std::string& key, int64_t fallback, IntRange range,
                  std::optional<int64_t> auto_value = std::nullopt);
  std::optional<double> optional_number(const std::string& key, NumberRange range,
                                        std::optional<double> auto_value = std::nullopt);
  double number(const std::string& key, double fallback, NumberRange range,
                std::optional<double> auto_value = std::nullopt);
  bool boolean(const std::string& key, bool fallback);
  std::string text(const std::string& key, const std::string& fallback);
  // A file or directory path: a string with no NUL character (the system would cut the path there).
  std::string file_path(const std::string& key, const std::string& fallback);
  // A string or a list of strings, as a list (absent or null: empty).
  std::vector<std::string> texts(const std::string& key);
  // One of `allowed`, matched case-insensitively; returns the spelling in `allowed`.
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed);
  // One of the first names of `names`, as above, read into its value.
  template <class E, size_t N>
  E choice(const std::string& key, E fallback, const NameTable<E, N>& names) {
    return *names.find(choice(key, std::string(names.name(fallback)), names.names()));
  }

  // A nested block (marks the key known).
  Block child(const std::string& key, UnknownKeys unknown);

  // `old_key` is read as `new_key`, with a warning saying why. Both given: an error.
  void rename(const std::string& old_key, const std::string& new_key, const std::string& why);
  // Another name of a key this block reads (the Hugging Face Trainer's learning_rate for lr, which
  // the raw config had turned into lr before): a candidate of "did you mean" too.
  void known_as_well(const std::string& other_name);
  // A key DeepSpeed knows that has no effect in zerotrain: one warning when its value is not the default.
  void unimplemented(const std::string& key, const nlohmann::json& default_value);
  // A key that is an error whenever it is given.
  void forbid(const std::string& key, const std::string& why);
  // A key DeepSpeed 0.19.8 removed and refuses whenever it is given (`what`: the feature, and what to
  // use instead): an error, except when `off` (the value asks for nothing, as configs written for
  // older DeepSpeed carry it): then a warning, and the key is ignored.
  void removed(const std::string& key, bool off, const std::string& what);

  // Keys never read: errors or warnings (per UnknownKeys) with a did-you-mean suggestion.
  void finish();

private:
  const nlohmann::json* find(const std::string& key) const;
  // nullopt after rejecting the value.
  std::optional<int64_t> to_integer(const std::string& key, const nlohmann::json& v, IntRange range) const;
  std::optional<double> to_number(const std::string& key, const nlohmann::json& v, NumberRange range) const;
  void auto_not_allowed(const std::string& key, const std::string& expected) const;

  Diagnostics diag_;
  std::string path_;
  nlohmann::json object_;
  UnknownKeys unknown_;
  std::set<std::string> known_;
};

}  // namespace zt::config
