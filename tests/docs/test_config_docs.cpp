// docs/config.md is the reference a user reads: every dotted key that `zerotrain --print-config`
// prints (every block, every scheduler's params) must be documented there as `key`, and every key
// documented in its tables must still be printed. A new key fails this test until it is documented.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json print_config(const std::string& args) {
  const std::string command = "env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE " +
                              std::string(ZT_ZEROTRAIN) + " --print-config " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  INFO(command);
  REQUIRE(pclose(pipe) == 0);
  return nlohmann::json::parse(out);
}

// Dotted paths of the leaves (arrays are leaves: optimizer.params.betas).
void collect(const nlohmann::json& j, const std::string& path, std::set<std::string>& keys) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      collect(it.value(), path.empty() ? it.key() : path + "." + it.key(), keys);
  } else if (!path.empty()) {
    keys.insert(path);
  }
}

// Every key any config prints: the defaults, every preset, every scheduler, both 16-bit types.
std::set<std::string> printed_keys() {
  std::set<std::string> keys;
  const char* const command_lines[] = {
      "",
      "--config zero0",
      "--config zero1",
      "--config zero2",
      "--config zero2_offload",
      "--config zero3",
      "--config zero3_offload",
      "--model gpt2-124m --set fp16.enabled=true --set bf16.enabled=false",
      "--model llama-3.2-1b",  // the llama family's keys, rope_scaling's among them
      "--model qwen3-0.6b",    // rope_scaling null
      R"(--set 'scheduler={"type":"WarmupLR"}')",
      R"(--set 'scheduler={"type":"WarmupDecayLR","params":{"total_num_steps":100}}')",
      R"(--set 'scheduler={"type":"WarmupCosineLR","params":{"total_num_steps":100}}')",
      R"(--set 'scheduler={"type":"OneCycle","params":{"cycle_min_lr":1e-4,"cycle_max_lr":1e-3}}')",
      R"(--set 'scheduler={"type":"LRRangeTest"}')",
  };
  for (const char* args : command_lines) collect(print_config(args), "", keys);
  return keys;
}

}  // namespace

TEST_CASE("docs/config.md documents every key of the resolved config, and no other") {
  const std::set<std::string> keys = printed_keys();
  REQUIRE(keys.size() > 100);
  REQUIRE(keys.count("scheduler.params.cycle_momentum") == 1);  // every scheduler was printed
  const std::string docs = read_file(std::string(ZT_SOURCE_DIR) + "/docs/config.md");

  std::string missing;
  for (const auto& key : keys)
    if (docs.find("`" + key + "`") == std::string::npos) missing += "\n  " + key;
  INFO("printed by --print-config but not documented as `key` in docs/config.md:" << missing);
  CHECK(missing.empty());

  // The first column of the reference tables: keys that must exist.
  const std::regex row(R"(\n\| `([A-Za-z0-9_.]+)` \|)");
  std::string stale;
  size_t rows = 0;
  for (auto it = std::sregex_iterator(docs.begin(), docs.end(), row); it != std::sregex_iterator(); ++it) {
    ++rows;
    if (keys.count((*it)[1]) == 0) stale += "\n  " + (*it)[1].str();
  }
  INFO("documented in docs/config.md but not printed by --print-config:" << stale);
  CHECK(stale.empty());
  CHECK(rows == keys.size());  // one row per key
}
