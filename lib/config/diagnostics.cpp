#include "config/diagnostics.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>

#include "core/error.hpp"
#include "core/printable.hpp"

namespace zt::config {

namespace {

// `inner` is `outer` or lies below it: "a.b" contains "a.b", "a.b.c" and "a.b[0]", not "a.bc".
bool contains_path(const std::string& outer, const std::string& inner) {
  if (inner.compare(0, outer.size(), outer) != 0) return false;
  return inner.size() == outer.size() || inner[outer.size()] == '.' || inner[outer.size()] == '[';
}

}  // namespace

void ValueOrigins::set(const std::string& path, const std::string& origin) {
  for (auto it = origins_.begin(); it != origins_.end();)
    it = contains_path(path, it->first) ? origins_.erase(it) : std::next(it);
  origins_[path] = origin;
}

void ValueOrigins::alias(const std::string& from, const std::string& to) {
  std::map<std::string, std::string> moved;
  for (const auto& [path, origin] : origins_)
    if (contains_path(from, path)) moved[to + path.substr(from.size())] = origin;
  // Outermost first, so that set() keeps the inner entries it is given after.
  for (const auto& [path, origin] : moved) set(path, origin);
}

const std::string* ValueOrigins::find(const std::string& path) const {
  const std::string* found = nullptr;
  size_t longest = 0;
  for (const auto& [p, origin] : origins_)
    if (contains_path(p, path) && (!found || p.size() > longest)) {
      found = &origin;
      longest = p.size();
    }
  return found;
}

const std::string& Diagnostics::origin_of(const std::string& path) const {
  if (origins && !path.empty())
    if (const std::string* o = origins->find(path)) return *o;
  return source;
}

std::string Diagnostics::message(const std::string& path, const std::string& what) const {
  std::string m;
  const std::string& where = origin_of(path);
  if (!where.empty()) m += where + ": ";
  if (!path.empty()) m += path + ": ";
  return printable(m + what);  // keys and values may hold newlines or escape sequences
}

void Diagnostics::fail(const std::string& path, const std::string& what) const { throw Error(message(path, what)); }

void Diagnostics::reject(const std::string& path, const std::string& what) const {
  if (!errors) fail(path, what);
  errors->add(message(path, what));
}

void ErrorList::throw_if_any() const {
  if (messages_.empty()) return;
  std::string all;
  for (size_t i = 0; i < messages_.size() && i < kShown; ++i) {
    if (i) all += '\n';
    all += messages_[i];
  }
  if (messages_.size() > kShown)
    all += fmt::format("\n{} more errors not shown (fix these first)", messages_.size() - kShown);
  throw Error(all);
}

void Diagnostics::warn(const std::string& path, const std::string& what) const {
  spdlog::warn("{}", message(path, what));
}

}  // namespace zt::config
