// docs/config.md is the reference a user reads: every dotted key that `zerotrain --print-config`
// prints (every block, every scheduler's params) must be documented there as `key`, and every key
// documented in its tables must still be printed. A new key fails this test until it is documented.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

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
const char* const kCommandLines[] = {
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
      "--set model.model_type=qwen2_moe",  // the experts' keys, the shared expert's among them
      "--model gemma-3-270m",  // Gemma's keys
      R"(--set 'scheduler={"type":"WarmupLR"}')",
      R"(--set 'scheduler={"type":"WarmupDecayLR","params":{"total_num_steps":100}}')",
      R"(--set 'scheduler={"type":"WarmupCosineLR","params":{"total_num_steps":100}}')",
      R"(--set 'scheduler={"type":"OneCycle","params":{"cycle_min_lr":1e-4,"cycle_max_lr":1e-3}}')",
      R"(--set 'scheduler={"type":"LRRangeTest"}')",
};

std::set<std::string> printed_keys() {
  std::set<std::string> keys;
  for (const char* args : kCommandLines) collect(print_config(args), "", keys);
  return keys;
}

// The value at a dotted path, or nullptr.
const nlohmann::json* at(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json* node = &j;
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

// A default written as a JSON value (0, 5e8, 1e-3, true, null, "", [0.9, 0.95]) or a bare word
// (none, AdamW, Warn): the value, else nullopt.
std::optional<nlohmann::json> literal(const std::string& text) {
  static const std::regex word(R"([A-Za-z][A-Za-z0-9_-]*)");
  if (std::regex_match(text, word) && text != "the") return text == "true"    ? nlohmann::json(true)
                                                            : text == "false" ? nlohmann::json(false)
                                                            : text == "null"  ? nlohmann::json(nullptr)
                                                                              : nlohmann::json(text);
  auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || parsed.is_object()) return std::nullopt;
  return parsed;
}

bool same(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

}  // namespace

TEST_CASE("docs/config.md's default column is what --print-config prints for a config that leaves the key out") {
  const std::string docs = read_file(std::string(ZT_SOURCE_DIR) + "/docs/config.md");
  // Configs that leave the documented keys out: no --config (only the batch keys, "auto"), one
  // scheduler block of each type with no params, and a llama-family model (its keys).
  std::vector<nlohmann::json> printed;
  for (const char* args :
       {"", R"(--set 'scheduler={"type":"WarmupLR"}')",
        R"(--set 'scheduler={"type":"WarmupDecayLR","params":{"total_num_steps":100}}')",
        R"(--set 'scheduler={"type":"WarmupCosineLR","params":{"total_num_steps":100}}')",
        R"(--set 'scheduler={"type":"OneCycle","params":{"cycle_min_lr":1e-4,"cycle_max_lr":1e-3}}')",
        R"(--set 'scheduler={"type":"LRRangeTest"}')", "--set model.model_type=llama",
         "--set model.model_type=qwen2_moe", "--set model.model_type=gemma2",
         "--set model.model_type=gemma3_text"})
    printed.push_back(print_config(args));
  // Defaults the column describes in words rather than as a value.
  const std::set<std::string> described = {
      "train_batch_size", "communication_data_type", "zero_optimization.overlap_comm", "data.train", "data.val",
      "optimizer.weight_decay_applies_to", "model.n_layer", "model.n_head", "model.d_model", "model.vocab_size",
      "model.max_seq_len", "model.model_type", "model.head_dim", "model.d_ff", "training.lr_scheduler_kwargs",
      "lora.enabled", "lora.target_modules", "preference.enabled"};
  const std::regex row(R"(\n\| `([A-Za-z0-9_.]+)` \| ([^|\n]*) \|)");
  size_t checked = 0;
  std::string wrong;
  for (auto it = std::sregex_iterator(docs.begin(), docs.end(), row); it != std::sregex_iterator(); ++it) {
    const std::string key = (*it)[1];
    std::string column = std::regex_replace((*it)[2].str(), std::regex("`"), "");
    column = column.substr(0, column.find_last_not_of(' ') + 1);
    if (described.count(key) || column.rfind("(required)", 0) == 0) continue;
    const nlohmann::json* value = nullptr;
    const nlohmann::json* config = nullptr;
    for (const auto& p : printed)
      if ((value = at(p, key))) {
        config = &p;
        break;
      }
    INFO(key << ": " << column);
    REQUIRE(value);
    // "1000 (at least 2)", "training.max_grad_norm (1.0)", "optimizer.params.lr", "[0.9, 0.95]".
    std::optional<nlohmann::json> expected;
    const size_t paren = column.find(" (");
    const std::string head = column.substr(0, paren);
    if (auto v = literal(head)) {
      expected = v;
    } else if (paren != std::string::npos && column.back() == ')') {
      expected = literal(column.substr(paren + 2, column.size() - paren - 3));
    }
    if (!expected && at(*config, head)) expected = *at(*config, head);  // another key's value
    if (!expected) {
      wrong += "\n  " + key + ": the default \"" + column + "\" is not a value (add it to `described`?)";
      continue;
    }
    ++checked;
    if (!same(*expected, *value))
      wrong += "\n  " + key + ": documented " + expected->dump() + ", printed " + value->dump();
  }
  INFO("docs/config.md's default column against --print-config:" << wrong);
  CHECK(wrong.empty());
  CHECK(checked > 100);
}

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
