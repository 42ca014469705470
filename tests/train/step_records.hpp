#pragma once
// The step and eval records of a metrics file (docs/metrics.md), in order.
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

// The eval records, in order.
inline std::vector<nlohmann::json> eval_records(const std::string& path) {
  std::vector<nlohmann::json> evals;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "eval") evals.push_back(j);
  }
  return evals;
}

}  // namespace zt::test
