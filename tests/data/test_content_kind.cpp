// What a data file holds, told by its content: JSON records under any name are not read as text
// or tokens, and training's refusal says how to tokenize them (never to read them as text).
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "data/content_kind.hpp"
#include "data/dataset.hpp"
#include "data/llmc_format.hpp"
#include "temp_dir.hpp"

using namespace zt;

namespace {

const std::string kChat =
    "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": \"Hello\"}]}\n"
    "{\"text\": \"plain\"}\n";

}  // namespace

TEST_CASE("content is told by the first bytes, not the name", "[data]") {
  TempDir dir;
  for (const char* name : {"a.jsonl", "a.ndjson", "a.arrow", "a", "a.data"})
    CHECK(sniff_content(dir.write(name, kChat)) == ContentKind::JsonLines);
  CHECK(sniff_content(dir.write("bom", "\xEF\xBB\xBF\n\n" + kChat)) == ContentKind::JsonLines);
  CHECK(sniff_content(dir.write("arr", "[\n  {\"text\": \"x\"}\n]\n")) == ContentKind::JsonArray);
  CHECK(sniff_content(dir.write("arrow", std::string("ARROW1\0\0", 8))) == ContentKind::Arrow);
  CHECK(sniff_content(dir.write("stream.arrow", std::string("\xFF\xFF\xFF\xFF\x10\0\0\0", 8))) == ContentKind::Arrow);
  CHECK(sniff_content(dir.write("p", "PAR1....")) == ContentKind::Parquet);
  CHECK(sniff_content(dir.write("t.md", "[a link](x) and {braces}\n")) == ContentKind::Text);
  CHECK(sniff_content(dir.write("c", "{ not json at all\nsecond line\n")) == ContentKind::Text);
  CHECK(sniff_content(dir.write("empty", "")) == ContentKind::Text);
  const int32_t header[3] = {llmc::kMagic32, llmc::kVersion32, 0};
  CHECK(sniff_content(dir.write("x.jsonl", header, sizeof(header))) == ContentKind::LlmcTokens);
  // A first record longer than what is sniffed at once (a long conversation) is still one.
  const std::string long_record = "{\"text\": \"" + std::string(200000, 'w') + "\"}\n{\"text\": \"b\"}\n";
  CHECK(sniff_content(dir.write("long", long_record)) == ContentKind::JsonLines);
}

TEST_CASE("training refuses JSON records under any name with the command that tokenizes them", "[data]") {
  TempDir dir;
  for (const char* name : {"train.jsonl", "train.ndjson", "train.arrow", "train"}) {
    const std::string path = dir.write(name, kChat);
    CHECK_THROWS_WITH(detect_token_format(path, "/models/Qwen3-0.6B"),
                      Catch::Contains(path + " holds JSON lines") &&
                          Catch::Contains("`zerotrain tokenize --tokenizer /models/Qwen3-0.6B " + path + " -o " +
                                          dir.file("train.bin") + "`") &&
                          !Catch::Contains("data.format"));
    // Without a known model directory, a placeholder said to be one.
    CHECK_THROWS_WITH(detect_token_format(path),
                      Catch::Contains("--tokenizer MODEL_DIR") && Catch::Contains("MODEL_DIR: the directory"));
  }
  CHECK_THROWS_WITH(detect_token_format(dir.write("data.json", "[{\"text\": \"x\"}]")),
                    Catch::Contains("a JSON array of records"));
  CHECK_THROWS_WITH(detect_token_format(dir.write("cache.arrow", std::string("ARROW1\0\0", 8))),
                    Catch::Contains("an Apache Arrow file") && Catch::Contains("to_json"));
  // A name that says text is read as text (the run warns: train/data_warnings.hpp).
  CHECK(detect_token_format(dir.write("notes.txt", kChat)) == TokenFormat::Text);
  CHECK_THROWS_WITH(detect_token_format(dir.write("x.dat", "plain words\n")), Catch::Contains("set data.format"));
}
