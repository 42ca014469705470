// Tokenizer files: the pipelines tokenizer.json can describe beyond the four real files (against
// tokenizers' ids), GPT-2's two files worked by hand, and a clear error for each bad file.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "../data/temp_dir.hpp"
#include "core/error.hpp"
#include "fixtures.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace zt;
using nlohmann::json;

namespace {

// GPT-2's vocab.json + merges.txt as a tokenizer.json (as the fixture script builds it).
json gpt2_as_json(const std::string& dir) {
  json j = json::parse(test::read_file(dir + "/vocab.json"));
  json merges = json::array();
  std::istringstream lines(test::read_file(dir + "/merges.txt"));
  std::string line;
  std::getline(lines, line);  // #version
  while (std::getline(lines, line))
    if (!line.empty()) merges.push_back(line);
  return {{"added_tokens", json::array()},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", j}, {"merges", merges}}}};
}

std::string load_error(const json& j) {
  try {
    Tokenizer::from_json(j, "t.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Metaspace, prefix-space, Digits, Tekken and added-token options give tokenizers' ids", "[tokenizer]") {
  const auto fixture = test::read_fixture("variants.json");
  const auto texts = fixture["texts"].get<std::vector<std::string>>();
  for (const auto& [name, variant] : fixture["variants"].items()) {
    SECTION(name) {
      const std::string base = variant["base"];
      const std::string dir = test::fixture_path("trimmed/" + base);
      json j = base == "gpt2" ? gpt2_as_json(dir) : json::parse(test::read_file(dir + "/tokenizer.json"));
      j.update(variant["patch"]);
      const Tokenizer tokenizer = Tokenizer::from_json(j, name);
      for (size_t i = 0; i < texts.size(); ++i) {
        INFO(name << ": " << texts[i]);
        CHECK(tokenizer.encode(texts[i], {.special_tokens = variant["special_tokens"].get<bool>()}) ==
              variant["ids"][i].get<std::vector<int32_t>>());
      }
    }
  }
}

TEST_CASE("GPT-2's files: merges in rank order, worked by hand", "[tokenizer]") {
  TempDir dir;
  json vocab;
  for (int b = 0; b < 256; ++b) vocab[byte_level::spelling_of(std::string(1, char(b)))] = b;
  const char* merges[][3] = {{"h", "e", "he"},       {"l", "l", "ll"},   {"he", "ll", "hell"}, {"hell", "o", "hello"},
                             {"\xC4\xA0", "w", "\xC4\xA0w"}, {"o", "r", "or"}, {"\xC4\xA0w", "or", "\xC4\xA0wor"}};
  std::string merges_txt = "#version: 0.2\n";
  for (int i = 0; i < 7; ++i) {
    vocab[merges[i][2]] = 256 + i;
    merges_txt += std::string(merges[i][0]) + " " + merges[i][1] + "\n";
  }
  dir.write("vocab.json", vocab.dump());
  dir.write("merges.txt", merges_txt);
  const Tokenizer t = Tokenizer::load(dir.path.string());
  // "hello" merges whole; " world" is Ġw (rank 4) + or (rank 5) -> Ġwor (rank 6), then l and d.
  CHECK(t.encode("hello world!") == std::vector<int32_t>{259, 262, 'l', 'd', '!'});
  CHECK(t.decode(t.encode("hello world!")) == "hello world!");
  CHECK(t.vocab_size() == 263);
  CHECK(Tokenizer::load(dir.file("merges.txt")).encode("hello") == std::vector<int32_t>{259});

  dir.write("merges.txt", "#version: 0.2\nh e\nnot a pair\n");
  CHECK_THROWS_WITH(Tokenizer::load(dir.path.string()),
                    dir.file("merges.txt") + ":3: expected two tokens separated by one space, got \"not a pair\"");
  dir.write("merges.txt", "q \xC4\xA0zz\n");
  CHECK_THROWS_WITH(Tokenizer::load(dir.path.string()),
                    Catch::Contains("model.merges[0] (\"q \xC4\xA0zz\"): \"\xC4\xA0zz\" is not in model.vocab"));
}

TEST_CASE("bad tokenizer files name the file and the JSON path", "[tokenizer]") {
  const json gpt2 = gpt2_as_json(test::fixture_path("trimmed/gpt2"));
  json j = gpt2;
  j["normalizer"] = {{"type", "NFKC"}};
  CHECK(load_error(j) == "t.json: normalizer.type: normalizer \"NFKC\" is not supported (supported: Sequence, NFC, "
                         "Prepend, Replace)");
  j = gpt2;
  j["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Isolated"}]})");
  CHECK_THAT(load_error(j),
             Catch::StartsWith("t.json: pre_tokenizer.pretokenizers[0].pattern.Regex: no scanner for this "
                               "regex") &&
                 Catch::EndsWith(": \\w+"));
  j = gpt2;
  j["model"]["type"] = "WordPiece";
  CHECK(load_error(j) == "t.json: model.type: \"WordPiece\": only BPE models are supported");
  j = gpt2;
  j["model"]["vocab"].erase("!");
  CHECK_THAT(load_error(j), Catch::Contains("model.vocab has no token for byte 33 (\"!\")"));
  j = gpt2;
  j["model"]["dropout"] = 0.1;
  CHECK(load_error(j) == "t.json: model.dropout: BPE dropout is not supported");
  j = gpt2;
  j["decoder"] = {{"type", "WordPiece"}};
  CHECK_THAT(load_error(j), Catch::StartsWith("t.json: decoder.type: decoder \"WordPiece\" is not supported"));
  j = gpt2;
  j["added_tokens"] = {{{"content", "<x>"}}};
  CHECK(load_error(j) == "t.json: added_tokens[0]: expected an object with an integer id");

  TempDir dir;
  dir.write("tokenizer.json", "{\"model\": ");
  CHECK_THROWS_WITH(Tokenizer::load(dir.path.string()),
                    Catch::StartsWith(dir.file("tokenizer.json") + ": not valid JSON"));
  TempDir empty;
  CHECK_THROWS_WITH(Tokenizer::load(empty.path.string()),
                    empty.path.string() + ": no tokenizer here: neither tokenizer.json nor vocab.json with merges.txt");
  CHECK_THROWS_WITH(Tokenizer::load(empty.file("missing.json")), Catch::Contains("missing.json: data file not found"));
}
