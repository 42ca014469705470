#pragma once
// The step records of a metrics file (docs/metrics.md), in order.
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace zt::test {

inline std::vector<nlohmann::json> step_records(const std::string& path) {
  std::vector<nlohmann::json> steps;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "step") steps.push_back(j);
  }
  return steps;
}

}  // namespace zt::test
