#pragma once
// The step and eval records of a metrics file (docs/metrics.md), in order.
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace zt::test {

// The records of one event ("step", "eval"), in order.
inline std::vector<nlohmann::json> records(const std::string& path, const std::string& event) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == event) out.push_back(j);
  }
  return out;
}

inline std::vector<nlohmann::json> step_records(const std::string& path) { return records(path, "step"); }
inline std::vector<nlohmann::json> eval_records(const std::string& path) { return records(path, "eval"); }

}  // namespace zt::test
