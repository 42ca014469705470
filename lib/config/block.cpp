#include "config/block.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "config/edit_distance.hpp"

namespace zt::config {

namespace {

bool same_value(const nlohmann::json& a, const nlohmann::json& b) {
  // 1e9 and 1000000000 are the same setting.
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string list_choices(const std::vector<std::string>& allowed) {
  std::string s;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (i) s += i + 1 == allowed.size() ? " or " : ", ";
    s += allowed[i];
  }
  return s;
}

// Why `v` is not an integer in `range`, or "" when it is (then `n` holds it).
std::string integer_problem(const nlohmann::json& v, IntRange range, int64_t& n) {
  const std::string expected = range.describe() == "any integer" ? "an integer" : "an integer " + range.describe();
  const std::string out_of_range = fmt::format("{} is out of range (expected {})", show(v), range.describe());
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) return out_of_range;
    n = int64_t(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_number_float()) {
    // Integers may be written as 5e8; 2.5 for an integer key is a mistake, not something to round.
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d)
      return fmt::format("{} is not an integer (expected {})", show(v), expected);
    if (std::fabs(d) >= 9.2e18) return out_of_range;
    n = int64_t(d);
  } else {
    return fmt::format("{} is not a number (expected {})", show(v), expected);
  }
  return n < range.min || n > range.max ? out_of_range : "";
}

}  // namespace

std::string IntRange::describe() const {
  constexpr auto lo = std::numeric_limits<int64_t>::min();
  constexpr auto hi = std::numeric_limits<int64_t>::max();
  if (min != lo && max != hi) return fmt::format("{}..{}", min, max);
  if (min != lo) return fmt::format(">= {}", min);
  if (max != hi) return fmt::format("<= {}", max);
  return "any integer";
}

bool NumberRange::contains(double v) const {
  if (std::isnan(v)) return false;
  bool above = min_open ? v > min : v >= min;
  bool below = max_open ? v < max : v <= max;
  return above && below;
}

std::string NumberRange::describe() const {
  bool has_min = std::isfinite(min), has_max = std::isfinite(max);
  if (has_min && has_max)
    return fmt::format("in {}{}, {}{}", min_open ? "(" : "[", min, max, max_open ? ")" : "]");
  if (has_min) return fmt::format("{} {}", min_open ? ">" : ">=", min);
  if (has_max) return fmt::format("{} {}", max_open ? "<" : "<=", max);
  return "a number";
}

Block::Block(const Diagnostics& diag, std::string path, const nlohmann::json* value, UnknownKeys unknown)
    : diag_(diag), path_(std::move(path)), object_(nlohmann::json::object()), unknown_(unknown) {
  if (value && !value->is_null()) {
    if (value->is_object())
      object_ = *value;
    else
      diag_.reject(path_, show(*value) + " is not an object (expected a JSON object {...})");
  }
}

const nlohmann::json* Block::find(const std::string& key) const {
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

bool Block::present(const std::string& key) const {
  auto v = find(key);
  return v && !v->is_null();
}

bool Block::is_null(const std::string& key) const {
  auto v = find(key);
  return v && v->is_null();
}

bool Block::is_auto(const std::string& key) const {
  auto v = find(key);
  return v && v->is_string() && v->get<std::string>() == "auto";
}

const nlohmann::json* Block::raw(const std::string& key) {
  known_.insert(key);
  auto v = find(key);
  return v && !v->is_null() ? v : nullptr;
}

void Block::auto_not_allowed(const std::string& key, const std::string& expected) const {
  reject(key, fmt::format("\"auto\" cannot be resolved for this key (expected {})", expected));
}

std::optional<int64_t> Block::to_integer(const std::string& key, const nlohmann::json& v, IntRange range) const {
  int64_t n = 0;
  const std::string problem = integer_problem(v, range, n);
  if (problem.empty()) return n;
  reject(key, problem);
  return std::nullopt;
}

std::optional<double> Block::to_number(const std::string& key, const nlohmann::json& v, NumberRange range) const {
  std::string problem;
  if (!v.is_number())
    problem = fmt::format("{} is not a number (expected a number {})", show(v), range.describe());
  else if (!range.contains(v.get<double>()))
    problem = fmt::format("{} is out of range (expected {})", show(v), range.describe());
  if (problem.empty()) return v.get<double>();
  reject(key, problem);
  return std::nullopt;
}

std::optional<int64_t> Block::optional_integer(const std::string& key, IntRange range,
                                               std::optional<int64_t> auto_value) {
  auto v = raw(key);
  if (!v) return std::nullopt;
  if (is_auto(key)) {
    if (!auto_value) auto_not_allowed(key, "an integer " + range.describe());
    return auto_value;
  }
  return to_integer(key, *v, range);
}

int64_t Block::integer(const std::string& key, int64_t fallback, IntRange range, std::optional<int64_t> auto_value) {
  return optional_integer(key, range, auto_value).value_or(fallback);
}

std::optional<double> Block::optional_number(const std::string& key, NumberRange range,
                                             std::optional<double> auto_value) {
  auto v = raw(key);
  if (!v) return std::nullopt;
  if (is_auto(key)) {
    if (!auto_value) auto_not_allowed(key, "a number " + range.describe());
    return auto_value;
  }
  return to_number(key, *v, range);
}

double Block::number(const std::string& key, double fallback, NumberRange range, std::optional<double> auto_value) {
  return optional_number(key, range, auto_value).value_or(fallback);
}

bool Block::boolean(const std::string& key, bool fallback) {
  auto v = raw(key);
  if (!v) return fallback;
  if (is_auto(key)) {
    auto_not_allowed(key, "true or false");
    return fallback;
  }
  if (!v->is_boolean()) {
    reject(key, fmt::format("{} is not a boolean (expected true or false)", show(*v)));
    return fallback;
  }
  return v->get<bool>();
}

std::string Block::text(const std::string& key, const std::string& fallback) {
  auto v = raw(key);
  if (!v) return fallback;
  if (!v->is_string()) {
    reject(key, fmt::format("{} is not a string (expected a string)", show(*v)));
    return fallback;
  }
  return v->get<std::string>();
}

std::string Block::file_path(const std::string& key, const std::string& fallback) {
  std::string p = text(key, fallback);
  if (p.find('\0') == std::string::npos) return p;
  reject(key, fmt::format("{} holds a NUL character (expected a path)", show(nlohmann::json(p))));
  return fallback;
}

std::vector<std::string> Block::texts(const std::string& key) {
  auto v = raw(key);
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (v->is_array()) {
    std::vector<std::string> out;
    for (size_t i = 0; i < v->size(); ++i) {
      const nlohmann::json& e = (*v)[i];
      if (!e.is_string()) {
        reject(fmt::format("{}[{}]", key, i), fmt::format("{} is not a string (expected a string)", show(e)));
        return {};
      }
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  reject(key, fmt::format("{} is not a string or a list of strings", show(*v)));
  return {};
}

std::string Block::choice(const std::string& key, const std::string& fallback,
                          const std::vector<std::string>& allowed) {
  auto v = raw(key);
  if (!v) return fallback;
  if (v->is_string()) {
    std::string given = lower(v->get<std::string>());
    for (const auto& a : allowed)
      if (lower(a) == given) return a;
  }
  reject(key, fmt::format("{} is not valid (expected {})", show(*v), list_choices(allowed)));
  return fallback;
}

Block Block::child(const std::string& key, UnknownKeys unknown) {
  known_.insert(key);
  return Block(diag_, path_of(key), find(key), unknown);
}

void Block::rename(const std::string& old_key, const std::string& new_key, const std::string& why) {
  if (!object_.contains(old_key)) return;
  if (object_.contains(new_key)) {
    reject(old_key, fmt::format("given together with {} ({}); keep only {}", path_of(new_key), why, new_key));
    object_.erase(old_key);
    return;
  }
  object_[new_key] = object_[old_key];
  object_.erase(old_key);
  if (diag_.origins) diag_.origins->alias(path_of(old_key), path_of(new_key));
  warn(old_key, why);
}

void Block::known_as_well(const std::string& other_name) { known_.insert(other_name); }

void Block::unimplemented(const std::string& key, const nlohmann::json& default_value) {
  auto v = raw(key);
  if (!v) return;
  // Ignored, but still judged as DeepSpeed would read it: a boolean must be a boolean, a number a number.
  const char* expected = default_value.is_boolean() ? "a boolean" : default_value.is_number() ? "a number"
                         : default_value.is_string() ? "a string" : nullptr;
  if (is_auto(key) && expected) {
    auto_not_allowed(key, expected);
    return;
  }
  const bool type_ok = default_value.is_boolean()  ? v->is_boolean()
                       : default_value.is_number() ? v->is_number()
                       : default_value.is_string() ? v->is_string()
                                                   : true;
  if (!type_ok) {
    reject(key, fmt::format("{} is not {} (expected {} such as the default {})", show(*v), expected, expected,
                            show(default_value)));
    return;
  }
  if (!same_value(*v, default_value))
    warn(key, fmt::format("{} has no effect (not implemented in zerotrain; default {}); ignored", show(*v),
                          show(default_value)));
}

void Block::removed(const std::string& key, bool off, const std::string& what) {
  const nlohmann::json* v = find(key);
  known_.insert(key);
  if (!v) return;
  if (off)
    warn(key, fmt::format("{} asks for nothing, but DeepSpeed 0.19.8 removed this key ({}) and refuses it; ignored "
                          "(delete it)", show(*v), what));
  else
    reject(key, fmt::format("removed in DeepSpeed 0.19.8, which refuses it ({}); delete it", what));
}

void Block::forbid(const std::string& key, const std::string& why) {
  known_.insert(key);
  if (object_.contains(key)) reject(key, why);
}

void Block::finish() {
  std::vector<std::string> candidates(known_.begin(), known_.end());
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (known_.count(it.key())) continue;
    const auto suggestion = closest_match(it.key(), candidates);
    // Other tools' keys may sit beside DeepSpeed's in a lenient block; a misspelling of a known key,
    // or anything given with --set, is a mistake: the setting it was meant for would silently stay
    // at its default.
    const std::string* origin = diag_.origins ? diag_.origins->find(path_of(it.key())) : nullptr;
    const bool from_set = origin && origin->rfind("--set ", 0) == 0;
    const bool mistake =
        unknown_ == UnknownKeys::Error || from_set || (suggestion && is_near_miss(it.key(), *suggestion));
    std::string what = "unknown key";
    if (suggestion)
      what += "; did you mean " + *suggestion + "?";
    else if (unknown_ == UnknownKeys::Error)
      what += " (expected one of " + list_choices(candidates) + ")";
    else if (from_set)
      what += " (not a key zerotrain or DeepSpeed knows; docs/config.md lists them)";
    if (mistake)
      reject(it.key(), what);
    else
      warn(it.key(), what + " (ignored)");
  }
}

}  // namespace zt::config
