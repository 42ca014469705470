#pragma once
// The reference fixtures of tests/fixtures/tokenizer (scripts/make_tokenizer_fixtures.py) and the
// real tokenizer files they were made from.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace zt::test {

inline std::string fixture_path(const std::string& name) {
  return std::string(ZT_SOURCE_DIR) + "/tests/fixtures/tokenizer/" + name;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline nlohmann::json read_fixture(const std::string& name) {
  return nlohmann::json::parse(read_file(fixture_path(name)));
}

struct Sample {
  std::string source, text;
};

inline std::vector<Sample> read_corpus() {
  std::vector<Sample> out;
  std::istringstream lines(read_file(fixture_path("corpus.jsonl")));
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    out.push_back({j["source"].get<std::string>(), j["text"].get<std::string>()});
  }
  return out;
}

// FNV-1a 64 of the values as little-endian uint32, as the fixture script writes it.
template <typename Int>
std::string fnv_hash(const std::vector<Int>& values) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (Int v : values)
    for (int b = 0; b < 4; ++b) h = (h ^ ((uint32_t(v) >> (8 * b)) & 0xFF)) * 0x100000001B3ull;
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(h));
  return text;
}

#ifdef ZT_TOKENIZERS_DIR  // defined where the build looked for them (tests/tokenizer)
// The real tokenizer files (gpt2/, llama3/, qwen3/, llama2/): $ZT_TOKENIZERS_DIR, or the folder the
// build found beside the repository; empty when there is none.
inline std::string real_tokenizers_dir() {
  if (const char* env = std::getenv("ZT_TOKENIZERS_DIR"); env && *env) return env;
  return ZT_TOKENIZERS_DIR;
}
#endif

// The tokenizer directory of a format of chat.json: its trimmed tokenizer as it is, or, where the
// format gives a template (for a tokenizer that has none: Llama 2's) or a pipeline (variants.json's
// patch of the tokenizer.json: Mistral's newer layout), a copy under `dir` with them.
inline std::string chat_tokenizer(const nlohmann::json& format, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const std::string base = fixture_path(format["tokenizer"].get<std::string>());
  if (!format.contains("template") && !format.contains("pipeline")) return base;
  nlohmann::json tokenizer = nlohmann::json::parse(read_file(base + "/tokenizer.json"));
  if (format.contains("pipeline")) {
    const nlohmann::json variants = read_fixture("variants.json");
    for (const auto& [key, value] : variants["variants"][format["pipeline"].get<std::string>()]["patch"].items())
      tokenizer[key] = value;
  }
  nlohmann::json config = nlohmann::json::parse(read_file(base + "/tokenizer_config.json"));
  if (format.contains("template")) {
    const std::string file = format["template"].get<std::string>();
    config["chat_template"] = read_file(fs::path(file).is_absolute() ? file : fixture_path(file));
  }
  const fs::path to = dir / ("tokenizer-" + std::to_string(std::hash<std::string>{}(format.dump())));
  fs::create_directories(to);
  std::ofstream(to / "tokenizer.json") << tokenizer.dump();
  std::ofstream(to / "tokenizer_config.json") << config.dump();
  return to.string();
}

}  // namespace zt::test
