#pragma once
// Runs the zerotrain binary (through scripts/launch.sh for several ranks) and reads what it wrote.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace zt::test {

struct Metrics {
  nlohmann::json setup;
  std::vector<nlohmann::json> steps, evals;
};

inline Metrics read_metrics(const std::string& path) {
  Metrics m;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "setup") m.setup = j;
    else if (j["event"] == "step") m.steps.push_back(j);
    else if (j["event"] == "eval") m.evals.push_back(j);
  }
  return m;
}

// Exit status of a shell command (its stdout and stderr go to log).
inline int run_command(const std::string& command, const std::string& log) {
  int status = std::system((command + " >" + log + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string fresh_dir(const std::string& name) {
  auto dir = std::filesystem::path(ZT_BINARY_DIR) / "test-runs" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::string launch(int ranks) {
  return std::string(ZT_SOURCE_DIR) + "/scripts/launch.sh -n " + std::to_string(ranks) + " -- " + ZT_ZEROTRAIN;
}

}  // namespace zt::test
