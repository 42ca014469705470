// Several token files read as one stream (llm.c's shards): the stream equals the concatenated file
// token for token, mask for mask and window for window (shuffled too), glob patterns expand in
// order, and a missing, empty or mismatched shard, or a pattern matching nothing, is one error
// naming it.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "data/data_files.hpp"
#include "data/dataset.hpp"
#include "data/sampler.hpp"
#include "data/token_file_writer.hpp"
#include "temp_dir.hpp"

using namespace zt;

namespace {

std::string write_tokens(const TempDir& dir, const std::string& name, const std::vector<int32_t>& tokens,
                         const std::vector<uint8_t>& mask, int64_t vocab) {
  TokenFileWriter writer(dir.file(name), vocab);
  writer.append(tokens, mask);
  writer.finish();
  return dir.file(name);
}

std::vector<int32_t> slice(const std::vector<int32_t>& v, size_t a, size_t b) {
  return {v.begin() + long(a), v.begin() + long(b)};
}
std::vector<uint8_t> slice(const std::vector<uint8_t>& v, size_t a, size_t b) {
  return {v.begin() + long(a), v.begin() + long(b)};
}

}  // namespace

TEST_CASE("shards read in order equal the concatenated file, window for window", "[data][stream]") {
  TempDir dir;
  std::vector<int32_t> tokens(1000);
  std::vector<uint8_t> mask(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = int32_t((i * 7919) % 500);
    mask[i] = uint8_t(i % 5 != 0);
  }
  const std::string whole = write_tokens(dir, "whole.bin", tokens, mask, 500);
  // Shards of 301, 2 and 697 tokens: windows of 8 cross both boundaries.
  const std::vector<std::string> shards = {
      write_tokens(dir, "part_000001.bin", slice(tokens, 0, 301), slice(mask, 0, 301), 500),
      write_tokens(dir, "part_000002.bin", slice(tokens, 301, 303), slice(mask, 301, 303), 500),
      write_tokens(dir, "part_000003.bin", slice(tokens, 303, 1000), slice(mask, 303, 1000), 500)};
  CHECK(expand_data_files({dir.file("part_*.bin")}) == shards);  // sorted: the shards' order
  CHECK(count_tokens(shards, TokenFormat::Auto) == 1000);
  const auto one = open_dataset(std::vector<std::string>{whole}, "auto");
  const auto stream = open_dataset(shards, "auto");
  REQUIRE(stream->size() == one->size());
  CHECK(stream->vocab_size() == one->vocab_size());
  CHECK(stream->has_loss_mask());
  CHECK(stream->files().size() == 3);
  CHECK(stream->files()[1].tokens == 2);
  CHECK(stream->path().find("(3 files)") != std::string::npos);
  std::vector<int32_t> a(1000), b(1000);
  stream->read(0, 1000, a.data());
  CHECK(a == tokens);
  std::vector<uint8_t> ma(1000);
  stream->read_loss_mask(0, 1000, ma.data());
  CHECK(ma == mask);
  stream->read(299, 5, a.data());  // across two boundaries
  CHECK(slice(a, 0, 5) == slice(tokens, 299, 304));

  for (bool shuffle : {false, true}) {
    BatchSampler s1(*one, 2, 4, 2, 1, 3, shuffle, 9), s2(*stream, 2, 4, 2, 1, 3, shuffle, 9);
    std::vector<int32_t> i1(8), t1(8), i2(8), t2(8);
    for (int64_t step = 0; step < 40; ++step) {  // past the 124 windows: two epochs
      CHECK(s1.counted_targets_in_step(step) == s2.counted_targets_in_step(step));
      for (int m = 0; m < 3; ++m) {
        s1.fill(step, m, i1.data(), t1.data());
        s2.fill(step, m, i2.data(), t2.data());
        REQUIRE(i1 == i2);
        REQUIRE(t1 == t2);
      }
    }
  }
  CHECK_THROWS_WITH(stream->check_vocab(400), Catch::Contains("part_00000") && Catch::Contains("outside the model"));
}

TEST_CASE("a bad shard or a pattern matching nothing is one error naming it", "[data][stream]") {
  TempDir dir;
  const std::vector<int32_t> small = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::string a = write_tokens(dir, "a.bin", small, {}, 100);
  const std::string wide = write_tokens(dir, "wide.bin", {1, 70000, 3}, {}, 70001);  // uint32 tokens
  CHECK_THROWS_WITH(open_dataset(std::vector<std::string>{a, dir.file("gone.bin")}, "auto"),
                    Catch::Contains("gone.bin"));
  CHECK_THROWS_WITH(
      open_dataset(std::vector<std::string>{a, wide}, "auto"),
      Catch::Contains("wide.bin: llmc with 4-byte tokens") && Catch::Contains("a.bin is llmc with 2-byte"));
  const std::string text = dir.write("notes.txt", "hello");
  CHECK_THROWS_WITH(open_dataset(std::vector<std::string>{a, text}, "auto"), Catch::StartsWith(text + ": text"));
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  const std::string empty = dir.write("empty.bin", header.data(), 1024);
  CHECK_THROWS_WITH(open_dataset(std::vector<std::string>{a, empty}, "auto"),
                    Catch::Equals(empty + ": the file holds no tokens"));
  CHECK_THROWS_WITH(count_tokens(std::vector<std::string>{a, empty}, TokenFormat::Auto),
                    Catch::Equals(empty + ": the file holds no tokens"));
  const std::string pattern = dir.file("fineweb_train_*.bin");
  CHECK_THROWS_WITH(expand_data_files({a, pattern}), Catch::Equals(pattern + ": the pattern matches no file"));
}
