// `zerotrain tokenize` on preference records: each form to a file of pairs (sample 2i prompt +
// chosen, 2i + 1 prompt + rejected, the answers counted, an index of pairs) whose ids and masks are
// those TRL's DPOTrainer gives the same records (tests/fixtures/preference, made by
// scripts/make_preference_token_fixtures.py with the real Qwen3 and Llama 3 tokenizers); a file's
// form is its first record's and a record of another form is refused by file and line; bad records
// named, or left out and counted; --val moves whole pairs.
#include <catch2/catch.hpp>

#include <cstring>
#include <nlohmann/json.hpp>

#include "../data/temp_dir.hpp"
#include "../tokenizer/fixtures.hpp"
#include "core/error.hpp"
#include "data/sample_index.hpp"
#include "tokenize/tokenize_files.hpp"
#include "tokenize_options.hpp"

using namespace zt;

namespace {

std::string preference_fixture(const std::string& name) {
  return std::string(ZT_SOURCE_DIR) + "/tests/fixtures/preference/" + name;
}

// A file of pairs as it lies on disk: the tokens, the mask and the index, read by their layout
// (docs/data.md), each header checked.
struct PairFile {
  std::vector<int64_t> ids;
  std::vector<uint8_t> mask;
  std::vector<uint64_t> offsets;
  int32_t index_magic = 0;
};

template <typename T>
std::vector<T> body(const std::string& bytes) {
  std::vector<T> out((bytes.size() - 1024) / sizeof(T));
  std::memcpy(out.data(), bytes.data() + 1024, out.size() * sizeof(T));
  return out;
}

std::array<int32_t, 4> header(const std::string& bytes) {
  std::array<int32_t, 4> h{};
  std::memcpy(h.data(), bytes.data(), sizeof(h));
  return h;
}

PairFile read_pairs(const std::string& stem) {
  PairFile f;
  const std::string tokens = test::read_file(stem + ".bin");
  const auto h = header(tokens);
  if (h[0] == 20240801) {
    for (uint32_t id : body<uint32_t>(tokens)) f.ids.push_back(id);
  } else {
    REQUIRE(h[0] == 20240520);
    for (uint16_t id : body<uint16_t>(tokens)) f.ids.push_back(id);
  }
  REQUIRE(int64_t(f.ids.size()) == h[2]);
  const std::string mask = test::read_file(stem + ".mask");
  REQUIRE(header(mask)[0] == 20240523);
  f.mask = body<uint8_t>(mask);
  const std::string index = test::read_file(stem + ".idx");
  const auto ih = header(index);
  f.index_magic = ih[0];
  f.offsets = body<uint64_t>(index);
  REQUIRE(ih[1] == 1);
  REQUIRE(int64_t(f.offsets.size()) == ih[2] + 1);
  REQUIRE(ih[3] == int32_t(f.ids.size()));
  REQUIRE(f.offsets.back() == f.ids.size());
  return f;
}

TokenizeOptions options(const std::string& tokenizer, std::vector<std::string> inputs, const std::string& output) {
  return test::options_for(tokenizer, std::move(inputs), output);
}

std::string error_of(const TokenizeOptions& o) {
  try {
    run_tokenize(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string trimmed(const std::string& name) { return test::fixture_path("trimmed/" + name); }

}  // namespace

TEST_CASE("tokenize: preference pairs are TRL's prompt, chosen and rejected ids and masks, in every form",
          "[tokenizer]") {
  const std::string real = test::real_tokenizers_dir();
  if (real.empty()) {
    WARN("no real tokenizer files (set ZT_TOKENIZERS_DIR): skipped");
    return;
  }
  const nlohmann::json expected = nlohmann::json::parse(test::read_file(preference_fixture("expected.json")));
  TempDir dir;
  // All the forms in one run per tokenizer: each file keeps its own form, and the pairs come in order.
  for (const auto& [tokenizer, forms] : expected["tokenizers"].items()) {
    std::vector<std::string> inputs;
    size_t pairs = 0;
    for (const auto& [form, rows] : forms.items())
      inputs.push_back(preference_fixture(form + ".jsonl")), pairs += rows.size();
    const std::string stem = dir.file(tokenizer);
    const TokenizeSummary s = run_tokenize(options(real + "/" + tokenizer, inputs, stem + ".bin"));
    CHECK(s.pairs == int64_t(pairs));
    const PairFile f = read_pairs(stem);
    CHECK(f.index_magic == llmc::kPairIndexMagic);
    REQUIRE(f.offsets.size() == 2 * pairs + 1);
    size_t pair = 0;
    for (const auto& [form, rows] : forms.items()) {
      for (size_t i = 0; i < rows.size(); ++i, ++pair) {
        const auto& row = rows[i];
        for (int k = 0; k < 2; ++k) {
          const std::string answer = k == 0 ? "chosen" : "rejected";
          INFO(tokenizer << ", " << form << ", pair " << i << ", " << answer);
          std::vector<int64_t> want = row["prompt_ids"].get<std::vector<int64_t>>();
          for (int64_t id : row[answer + "_ids"]) want.push_back(id);
          const size_t begin = f.offsets[2 * pair + size_t(k)], end = f.offsets[2 * pair + size_t(k) + 1];
          CHECK(std::vector<int64_t>(f.ids.begin() + long(begin), f.ids.begin() + long(end)) == want);
          CHECK(std::vector<uint8_t>(f.mask.begin() + long(begin), f.mask.begin() + long(end)) ==
                row[answer + "_mask"].get<std::vector<uint8_t>>());
        }
      }
    }
  }
}

TEST_CASE("tokenize: a file of pairs holds one form; pairs and other data are not mixed", "[tokenizer]") {
  TempDir dir;
  const std::string gpt2 = trimmed("gpt2");
  const std::string text_pairs =
      dir.write("pairs.jsonl", R"({"prompt": "The sky is", "chosen": " blue", "rejected": " red"}
{"chosen": "The sky is blue", "rejected": "The sky is red"}
)");
  CHECK(error_of(options(gpt2, {text_pairs}, dir.file("a.bin"))) ==
        text_pairs + ":2: TRL's chosen/rejected as text with an implicit prompt, but the file's first record (" +
            text_pairs + ":1) is TRL's prompt/chosen/rejected as text: a file holds records of one form");
  const std::string sft_first = dir.write("sft.jsonl", R"({"text": "The sky"}
{"prompt": "The sky is", "chosen": " blue", "rejected": " red"}
)");
  CHECK(error_of(options(gpt2, {sft_first}, dir.file("b.bin"))) ==
        sft_first + ":2: TRL's prompt/chosen/rejected as text, but the file's first record (" + sft_first +
            ":1) is no preference pair: a file holds records of one form");
  // Mixed forms stop the run even where bad records are left out.
  TokenizeOptions skipping = options(gpt2, {text_pairs}, dir.file("c.bin"));
  skipping.skip_invalid = true;
  CHECK_THAT(error_of(skipping), Catch::Contains("a file holds records of one form"));
  const std::string pairs_only = dir.write("only.jsonl",
                                           "{\"prompt\": \"The sky is\", \"chosen\": \" blue\", "
                                           "\"rejected\": \" red\"}\n");
  const std::string text = dir.write("text.txt", "The sky is blue.");
  CHECK(error_of(options(gpt2, {pairs_only, text}, dir.file("d.bin"))) ==
        pairs_only + " holds preference pairs (TRL's prompt/chosen/rejected as text, told by " + pairs_only +
            ":1), but " + text + " holds text: pairs and other data are not tokenized into one file");
  CHECK(!std::filesystem::exists(dir.file("a.bin")));
  CHECK(!std::filesystem::exists(dir.file("d.bin")));
  // A JSON array: its first element tells the form, the others are named by element.
  const std::string array = dir.write("pairs.json", R"([{"prompt": "The sky is", "chosen": " blue", "rejected": " red"},
 {"prompt": "Grass is", "chosen": " green", "rejected": " blue"},
 {"chosen": "The sky is blue", "rejected": "The sky is red"}])");
  CHECK(error_of(options(gpt2, {array}, dir.file("e.bin"))) ==
        array + ": element 2: TRL's chosen/rejected as text with an implicit prompt, but the file's first record (" +
            array + ": element 0) is TRL's prompt/chosen/rejected as text: a file holds records of one form");
  const std::string two = dir.write("two.json", R"([{"prompt": "The sky is", "chosen": " blue", "rejected": " red"},
 {"prompt": "Grass is", "chosen": " green", "rejected": " blue"}])");
  CHECK(run_tokenize(options(gpt2, {two, pairs_only}, dir.file("f.bin"))).pairs == 3);
  CHECK(read_pairs(dir.file("f")).offsets.size() == 7);
}

TEST_CASE("tokenize: bad preference records are named by line, or left out and counted", "[tokenizer]") {
  TempDir dir;
  const std::string input = dir.write("pairs.jsonl", R"({"prompt": "The sky is", "chosen": " blue", "rejected": " red"}
{"prompt": "The sky is", "chosen": " blue"}
{"prompt": "The sky is", "chosen": 7, "rejected": " red"}
{"prompt": "Grass is", "chosen": " green", "rejected": " blue"}
{"answer": "yes"}
)");
  CHECK(error_of(options(trimmed("gpt2"), {input}, dir.file("a.bin"))) == input + ":2: rejected: missing");
  TokenizeOptions o = options(trimmed("gpt2"), {input}, dir.file("b.bin"));
  o.skip_invalid = true;
  const TokenizeSummary s = run_tokenize(o);
  CHECK(s.pairs == 2);
  CHECK(s.skipped == 3);
  CHECK(s.skipped_first ==
        std::vector<std::string>{input + ":2: rejected: missing", input + ":3: chosen: expected a string, got number",
                                 input + ":5: no \"chosen\" or \"rejected\" field: the file holds TRL's "
                                         "prompt/chosen/rejected as text"});
  const PairFile f = read_pairs(dir.file("b"));
  CHECK(f.offsets.size() == 5);

  // Each launcher's own mistakes, by field.
  const std::string chats = dir.write(
      "chats.jsonl", R"({"messages": [{"role": "user", "content": "Best pet?"}], "rejected_response": "A rock."}
{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "A"}], "rejected_messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "B"}]}
{"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}], "chosen": {"from": "gpt", "value": "A"}, "rejected": {"from": "gpt", "value": "B"}}
{"conversations": [{"from": "human", "value": "Hi"}], "chosen": {"from": "gpt", "value": "A"}, "rejected": {"from": "human", "value": "B"}}
{"chosen": [{"role": "user", "content": "Hi"}], "rejected": [{"role": "assistant", "content": "Hi"}]}
)");
  auto first_error = [&](const std::string& line) {
    const std::string one = dir.write("one.jsonl", line + "\n");
    return error_of(options(trimmed("qwen3"), {one}, dir.file("e.bin")));
  };
  std::istringstream lines(test::read_file(chats));
  std::vector<std::string> errors;
  for (std::string line; std::getline(lines, line);) errors.push_back(first_error(line));
  const std::string one = dir.file("one.jsonl");
  CHECK(errors == std::vector<std::string>{
                      one + ":1: messages: the last message is a user's, not an assistant's answer (ms-swift's pairs end "
                            "with it)",
                      one + ":1: rejected_messages: its messages before the last differ from those of messages: a "
                            "pair shares its prompt",
                      one + ":1: conversations: the last message is the assistant's; a pair's prompt ends with the "
                            "question its answers answer",
                      one + ":1: rejected.from: a user's message, not an assistant's answer",
                      one + ":1: chosen and rejected share no first message: there is no prompt to split off (TRL's "
                            "implicit prompt)"});
}

TEST_CASE("tokenize: --val moves whole pairs, and both files index pairs", "[tokenizer]") {
  TempDir dir;
  std::string records;
  for (int i = 0; i < 20; ++i)
    records += "{\"prompt\": \"The sky is" + std::string(size_t(i), '!') +
               "\", \"chosen\": \" blue\", \"rejected\": \" red and green\"}\n";
  const std::string input = dir.write("pairs.jsonl", records);
  TokenizeOptions o = options(trimmed("gpt2"), {input}, dir.file("p.bin"));
  o.val = "10%";
  const TokenizeSummary s = run_tokenize(o);
  CHECK(s.pairs == 20);
  CHECK(s.val_documents == 4);
  for (const std::string stem : {"p", "p.val"}) {
    INFO(stem);
    const PairFile f = read_pairs(dir.file(stem));
    CHECK(f.index_magic == llmc::kPairIndexMagic);
    CHECK(f.offsets.size() == (stem == "p" ? 37u : 5u));
    // Each pair: the same prompt, then " blue" (one token) and " red and green" (three).
    for (size_t p = 0; p + 1 < f.offsets.size(); p += 2) {
      const size_t chosen = f.offsets[p + 1] - f.offsets[p], rejected = f.offsets[p + 2] - f.offsets[p + 1];
      CHECK(rejected == chosen + 3 - 1);
      CHECK(std::equal(f.ids.begin() + long(f.offsets[p]), f.ids.begin() + long(f.offsets[p + 1]) - 2,
                       f.ids.begin() + long(f.offsets[p + 1])));
    }
  }
}
