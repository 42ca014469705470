#include "config/value_sources.hpp"

#include <fmt/format.h>

namespace zt::config {

const nlohmann::json* ValueSources::find(const std::string& path) const {
  const nlohmann::json* node = &raw_;
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end() || it->is_null()) return nullptr;
    node = &*it;
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

bool ValueSources::is_auto(const std::string& path) const {
  const nlohmann::json* v = find(path);
  return v && v->is_string() && v->get<std::string>() == "auto";
}

std::string ValueSources::how(const std::string& path) const {
  if (!given(path)) return "default";
  if (const std::string* option = origins_.find(path)) return *option;
  return "config";
}

std::string ValueSources::described(const std::string& path) const { return fmt::format("{} ({})", path, how(path)); }

std::string ValueSources::chain(const std::string& path, const std::string& auto_took) const {
  if (is_auto(path)) return fmt::format("{} \"auto\" ({}) = {}", path, how(path), auto_took);
  return described(path);
}

}  // namespace zt::config
