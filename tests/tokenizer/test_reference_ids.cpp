// Ids equal Hugging Face's, id for id, on the corpus of tests/fixtures/tokenizer: the real
// tokenizer files on all of it (where they are), the committed trimmed ones on the part they cover;
// decode(encode(x)) gives x back. Special tokens are found in text only when asked.
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "tokenizer/nfc.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace zt;
using namespace zt::test;

namespace {

const std::vector<Sample>& corpus() {
  static const std::vector<Sample> c = read_corpus();
  return c;
}

const nlohmann::json& ids_fixture() {
  static const nlohmann::json j = read_fixture("ids.json");
  return j;
}

std::string shown(const std::string& text) { return text.size() > 200 ? text.substr(0, 200) + "..." : text; }

const char* const kNames[] = {"gpt2", "llama3", "qwen3", "llama2"};

// The samples the trimmed tokenizers cover (in_ci_part of the fixture script).
bool in_ci_part(size_t i) { return i % 3 == 0 || corpus()[i].source == "written" || corpus()[i].source == "random"; }

// Encodes the corpus (all of it, or the part the trimmed tokenizers cover) and compares with the
// reference.
void check_corpus(const Tokenizer& tokenizer, const std::string& name, bool ci_part_only) {
  const auto& expected = ids_fixture()[name];
  const auto& samples = corpus();
  REQUIRE(expected["samples"].size() == samples.size());
  size_t mismatches = 0, checked = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (ci_part_only && !in_ci_part(i)) continue;
    ++checked;
    const std::vector<int32_t> ids = tokenizer.encode(samples[i].text);
    const auto& ref = expected["samples"][i];
    if (ids.size() != ref[0].get<size_t>() || fnv_hash(ids) != ref[1].get<std::string>()) {
      ++mismatches;
      if (mismatches <= 5) {
        INFO(name << " sample " << i << " (" << samples[i].source << "): " << ids.size() << " ids, reference "
                  << ref[0] << "\n" << shown(samples[i].text));
        if (expected["ids"].contains(std::to_string(i)))
          CHECK(ids == expected["ids"][std::to_string(i)].get<std::vector<int32_t>>());
        else
          CHECK(fnv_hash(ids) == ref[1].get<std::string>());
      }
    }
  }
  CHECK(mismatches == 0);
  CHECK(checked > (ci_part_only ? 200u : 600u));
}

// SentencePiece-style tokenizers write spaces as ▁ (U+2581): a ▁ in the text decodes as a space.
void check_round_trip(const Tokenizer& tokenizer, bool nfc, bool metaspace) {
  size_t mismatches = 0;
  for (const Sample& s : corpus()) {
    if (metaspace && s.text.find("\xE2\x96\x81") != std::string::npos) continue;
    std::string expected = s.text;
    if (nfc) {
      expected.clear();
      append_nfc(s.text, expected);
    }
    if (tokenizer.decode(tokenizer.encode(s.text)) != expected && ++mismatches <= 3)
      CHECK(tokenizer.decode(tokenizer.encode(s.text)) == expected);
  }
  CHECK(mismatches == 0);
}

void check_specials(const Tokenizer& tokenizer, const std::string& name) {
  const auto fixture = read_fixture("specials.json");
  const auto& strings = fixture["strings"];
  for (size_t i = 0; i < strings.size(); ++i) {
    const std::string text = strings[i];
    INFO(name << ": " << text);
    CHECK(tokenizer.encode(text, {.special_tokens = true}) ==
          fixture["tokenizers"][name]["with"][i].get<std::vector<int32_t>>());
    CHECK(tokenizer.encode(text) == fixture["tokenizers"][name]["without"][i].get<std::vector<int32_t>>());
    // SentencePiece's ▁ goes before each stretch between special tokens, and decodes as a space.
    if (name != "llama2") CHECK(tokenizer.decode(tokenizer.encode(text, {.special_tokens = true})) == text);
  }
}

Tokenizer load_trimmed(const std::string& name) { return Tokenizer::load(fixture_path("trimmed/" + name)); }

}  // namespace

TEST_CASE("the trimmed tokenizers give Hugging Face's ids on their part of the corpus", "[tokenizer]") {
  for (const char* name : kNames) {
    SECTION(name) {
      const Tokenizer tokenizer = load_trimmed(name);
      check_corpus(tokenizer, name, true);
      check_specials(tokenizer, name);
    }
  }
}

TEST_CASE("decode(encode(text)) is the text", "[tokenizer]") {
  for (const char* name : kNames) {
    SECTION(name) {
      const std::string n = name;
      check_round_trip(load_trimmed(name), n == "qwen3", n == "llama2");
    }
  }
}

TEST_CASE("decode drops special tokens when asked", "[tokenizer]") {
  const Tokenizer llama3 = load_trimmed("llama3");
  const auto ids = llama3.encode("<|begin_of_text|>Hi there<|eot_id|>", {.special_tokens = true});
  CHECK(ids.front() == 128000);
  CHECK(llama3.decode(ids, true) == "Hi there");
  const Tokenizer llama2 = load_trimmed("llama2");
  // As tokenizers decodes: ▁ before "Hello" is a space, and the first one of the text is dropped.
  const auto spm = llama2.encode("<s>Hello", {.special_tokens = true});
  CHECK(spm == std::vector<int32_t>{1, 22557});
  CHECK(llama2.decode(spm) == "<s> Hello");
  CHECK(llama2.decode(spm, true) == "Hello");
}

TEST_CASE("the real tokenizers give Hugging Face's ids on the corpus and decode it back", "[tokenizer]") {
  const std::string dir = real_tokenizers_dir();
  if (dir.empty()) {
    WARN("no real tokenizer files (set ZT_TOKENIZERS_DIR): skipped");
    return;
  }
  for (const char* name : kNames) {
    SECTION(name) {
      const Tokenizer tokenizer = Tokenizer::load(dir + "/" + name);
      check_corpus(tokenizer, name, false);
      check_specials(tokenizer, name);
    }
  }
}
