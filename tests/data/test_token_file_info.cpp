// The record of the tokenizer that made a token file (NAME.meta.json): written beside every file
// the writer finishes, read back, refused when it belongs to another file; and the judgement of a
// dataset's records against a model's tokenizer, which names both.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.hpp"
#include "data/data_tokenizer.hpp"
#include "data/dataset.hpp"
#include "data/llmc_format.hpp"
#include "data/model_data.hpp"
#include "data/token_file_info.hpp"
#include "data/token_file_writer.hpp"
#include "temp_dir.hpp"

using namespace zt;

namespace {

TokenizerIdentity identity(const std::string& source, const std::string& sha) {
  return {source, "byte-level BPE", 151669, {{"tokenizer.json", source + "/tokenizer.json", sha}}};
}

void write_tokens(const std::string& path, const std::optional<TokenizerIdentity>& tokenizer, int64_t tail = 0) {
  TokenFileWriter w(path, 151669);
  if (tokenizer) w.record_tokenizer(*tokenizer);
  w.append(std::vector<int32_t>{151643, 1, 2, 3, 4, 5, 6, 7});
  TokenFileWriter::Outputs split;
  if (tail > 0) split.val_path = path.substr(0, path.size() - 4) + ".val.bin";
  split.val_tail_tokens = tail;
  w.finish(split);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// llama.bin and qwen.bin, made by two tokenizers, and old.bin, which records none.
struct TwoTokenizers {
  TokenizerIdentity llama = identity("/models/llama3", std::string(64, 'b'));
  TokenizerIdentity qwen = identity("/models/qwen3", std::string(64, 'c'));
  TokenizerReference model{qwen, "the tokenizer of the model directory /models/qwen3"};

  explicit TwoTokenizers(const TempDir& dir) {
    write_tokens(dir.file("llama.bin"), llama);
    write_tokens(dir.file("qwen.bin"), qwen);
    write_tokens(dir.file("old.bin"), std::nullopt);
  }
};

const TokenizerJudgement kRefuse{"data.train", "--set data.tokenizer_mismatch=warn", TokenizerMismatch::Error, false};

}  // namespace

TEST_CASE("the writer records the tokenizer beside each file it finishes, and the record reads back", "[data]") {
  TempDir dir;
  const TokenizerIdentity qwen = identity("/models/qwen3", std::string(64, 'a'));
  write_tokens(dir.file("t.bin"), qwen, 3);
  const auto head = read_token_file_info(dir.file("t.bin"), 5);
  const auto tail = read_token_file_info(dir.file("t.val.bin"), 3);
  REQUIRE(head);
  REQUIRE(tail);
  CHECK(head->tokens == 5);
  CHECK(head->token_bytes == 4);
  CHECK(head->loss_mask.empty());
  CHECK(head->tokenizer.source == "/models/qwen3");
  CHECK(head->tokenizer.vocab_size == 151669);
  CHECK(same_tokenizer(head->tokenizer, qwen));
  CHECK(same_tokenizer(tail->tokenizer, qwen));
  CHECK(std::filesystem::exists(dir.file("t.meta.json")));
  CHECK_FALSE(std::filesystem::exists(dir.file("t.meta.json.tmp")));

  // A record that counts other tokens belongs to another file: an error naming it.
  CHECK_THROWS_WITH(read_token_file_info(dir.file("t.bin"), 8),
                    Catch::Contains(dir.file("t.meta.json")) && Catch::Contains("records 5 tokens"));
  // Rewritten without a tokenizer: the old record goes, so that it cannot describe other tokens.
  write_tokens(dir.file("t.bin"), std::nullopt);
  CHECK_FALSE(std::filesystem::exists(dir.file("t.meta.json")));
  CHECK_FALSE(read_token_file_info(dir.file("t.bin"), 8));

  std::ofstream(dir.file("bad.meta.json")) << "{\"format\": \"zerotrain token file\", \"version\": 1, \"tokens\": ";
  CHECK_THROWS_WITH(read_token_file_info(dir.file("bad.bin"), 1), Catch::Contains("bad.meta.json: not valid JSON"));
}

TEST_CASE("identities are the same when their files hash the same, whatever their paths", "[data]") {
  const TokenizerIdentity a = identity("/a", std::string(64, '1'));
  TokenizerIdentity copy = identity("/elsewhere/copy", std::string(64, '1'));
  copy.kind.clear();  // a model directory's tokenizer is identified without loading it
  copy.vocab_size = 0;
  CHECK(same_tokenizer(a, copy));
  CHECK_FALSE(same_tokenizer(a, identity("/a", std::string(64, '2'))));
  TokenizerIdentity gpt2{"/gpt2", "", 0, {{"vocab.json", "/gpt2/vocab.json", std::string(64, '1')},
                                          {"merges.txt", "/gpt2/merges.txt", std::string(64, '3')}}};
  CHECK_FALSE(same_tokenizer(a, gpt2));
  CHECK(same_tokenizer(gpt2, gpt2));
  const auto back = tokenizer_identity_from_json(to_json(gpt2), "x");
  CHECK(same_tokenizer(back, gpt2));
  CHECK(back.files[1].path == "/gpt2/merges.txt");
  CHECK_THROWS_WITH(tokenizer_identity_from_json(nlohmann::json{{"source", "/a"}}, "m.json"),
                    Catch::Contains("m.json") && Catch::Contains("kind"));
}

TEST_CASE("a dataset made by another tokenizer than the model's is refused, naming both", "[data]") {
  TempDir dir;
  const TokenizerReference model = TwoTokenizers(dir).model;

  const auto data = open_dataset(dir.file("llama.bin"), "auto");
  const DataTokenizer recorded = read_data_tokenizer(*data, kRefuse);
  REQUIRE(recorded.identity);
  const std::string refusal = error_of([&] { judge_data_tokenizer(recorded, model, kRefuse); });
  CHECK_THAT(refusal, Catch::Contains("/models/llama3") && Catch::Contains("/models/qwen3") &&
                          Catch::Contains(dir.file("llama.bin")) &&
                          Catch::Contains("--set data.tokenizer_mismatch=warn"));
  TokenizerJudgement warn = kRefuse;
  warn.policy = TokenizerMismatch::Warn;
  CHECK_NOTHROW(judge_data_tokenizer(recorded, model, warn));
  CHECK_NOTHROW(judge_data_tokenizer(read_data_tokenizer(*open_dataset(dir.file("qwen.bin"), "auto"), kRefuse),
                                     model, kRefuse));

  // One stream of files of two tokenizers: refused naming both files; a file without a record is
  // listed (and warned about against a reference), not refused.
  const auto mixed = open_dataset(std::vector<std::string>{dir.file("qwen.bin"), dir.file("llama.bin")}, "auto");
  CHECK_THAT(error_of([&] { read_data_tokenizer(*mixed, kRefuse); }),
             Catch::Contains(dir.file("qwen.bin")) && Catch::Contains(dir.file("llama.bin")));
  const auto older = open_dataset(std::vector<std::string>{dir.file("qwen.bin"), dir.file("old.bin")}, "auto");
  const DataTokenizer partly = read_data_tokenizer(*older, kRefuse);
  CHECK(partly.unrecorded == std::vector<std::string>{dir.file("old.bin")});
  CHECK_NOTHROW(judge_data_tokenizer(partly, model, kRefuse));
}

TEST_CASE("the data a model reads: its tokenizer judged before its ids' range, data.val against data.train", "[data]") {
  TempDir dir;
  const TokenizerReference model = TwoTokenizers(dir).model;
  auto request = [&](const std::string& key, const std::string& file, int vocab) {
    return ModelDataRequest{{dir.file(file)}, "auto", 0, "", vocab, {key, "", TokenizerMismatch::Error, false}};
  };

  const ModelData train = open_model_data(request("data.train", "qwen.bin", 151669), model);
  CHECK(train.what == "data.train");
  CHECK(train.data->size() == 8);
  REQUIRE(train.tokenizer.identity);
  CHECK(train.tokenizer.recorded_by == dir.file("qwen.bin"));
  // Another tokenizer's ids out of the vocabulary's range: the tokenizer is named, not the range.
  CHECK_THAT(error_of([&] { open_model_data(request("data.train", "llama.bin", 1000), model); }),
             Catch::Contains("/models/llama3") && !Catch::Contains("outside the model's vocabulary"));
  CHECK_THAT(error_of([&] { open_model_data(request("data.train", "qwen.bin", 1000), model); }),
             Catch::Contains(dir.file("qwen.bin")) && Catch::Contains("outside the model's vocabulary of 1000"));
  // Without a model tokenizer, data.val is judged against data.train's record when it has one.
  CHECK_THAT(error_of([&] { open_model_data(request("data.val", "llama.bin", 151669), std::nullopt, &train); }),
             Catch::Contains("data.val") && Catch::Contains("the tokenizer of data.train " + dir.file("qwen.bin")));
  CHECK_NOTHROW(open_model_data(request("data.val", "old.bin", 151669), std::nullopt, &train));
  CHECK_NOTHROW(open_model_data(request("data.val", "qwen.bin", 151669), std::nullopt, &train));
}
