// llm.c token files of uint32 tokens, loss masks beside token files, and the writer of both: what
// is written reads back, a masked target reaches the batch as kIgnoredTarget, and bad files get
// one error naming them.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "data/llmc_format.hpp"
#include "data/sampler.hpp"
#include "data/token_file_writer.hpp"
#include "read_all.hpp"
#include "temp_dir.hpp"

using namespace zt;
using zt::test::read_all;

namespace {

template <typename T>
std::string with_header(int32_t magic, int32_t version, int64_t count, const std::vector<T>& values) {
  std::vector<int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = int32_t(count);
  std::string bytes(reinterpret_cast<const char*>(header.data()), 1024);
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return bytes;
}

std::vector<uint8_t> mask_of(const TokenDataset& d) {
  std::vector<uint8_t> out(size_t(d.size()));
  d.read_loss_mask(0, d.size(), out.data());
  return out;
}

}  // namespace

TEST_CASE("llm.c files of uint32 tokens (magic 20240801, version 7) are read", "[data]") {
  TempDir dir;
  const std::vector<uint32_t> tokens = {128000, 9906, 1917, 0, 151668, 65536};
  const auto path = dir.write("llama.bin", with_header(20240801, 7, 6, tokens));
  CHECK(detect_token_format(path) == TokenFormat::LlmC);
  auto d = open_dataset(path, "auto");
  CHECK(d->size() == 6);
  CHECK(d->vocab_size() == 151669);
  CHECK(read_all(*d) == std::vector<int32_t>(tokens.begin(), tokens.end()));
  std::vector<int32_t> part(2);
  d->read(3, 2, part.data());
  CHECK(part == std::vector<int32_t>{0, 151668});
  CHECK_FALSE(d->has_loss_mask());
  CHECK(mask_of(*d) == std::vector<uint8_t>(6, 1));
  CHECK_THROWS_WITH(d->check_vocab(128256), Catch::Contains("token 151668") && Catch::Contains("index 4") &&
                                                Catch::Contains("byte offset 1040"));
  CHECK_THROWS_WITH(open_dataset(dir.write("v2.bin", with_header(20240801, 2, 6, tokens)), "llmc"),
                    Catch::Contains("v2.bin: unsupported llm.c version 2 with magic 20240801"));
  CHECK_THROWS_WITH(open_dataset(dir.write("short.bin", with_header(20240801, 7, 7, tokens)), "llmc"),
                    Catch::Contains("short.bin: size mismatch") && Catch::Contains("7 tokens of 4 bytes"));
}

TEST_CASE("a loss mask beside a token file marks the targets that count", "[data][sampler]") {
  TempDir dir;
  // 9 tokens; B*T = 4: windows [0, 5) and [4, 9).
  const std::vector<uint16_t> tokens = {10, 11, 12, 13, 14, 15, 16, 17, 18};
  const std::vector<uint8_t> mask = {0, 0, 1, 1, 0, 1, 0, 1, 1};
  const auto path = dir.write("chat.bin", with_header(20240520, 1, 9, tokens));
  CHECK(llmc::mask_path_of(path) == dir.file("chat.mask"));
  dir.write("chat.mask", with_header(20240523, 1, 9, mask));
  auto d = open_dataset(path, "auto");
  CHECK(d->has_loss_mask());
  CHECK(mask_of(*d) == mask);
  BatchSampler sampler(*d, 1, 4, 1, 0, 1, false, 0);
  std::vector<int32_t> inputs(4), targets(4);
  sampler.fill(0, 0, inputs.data(), targets.data());
  CHECK(inputs == std::vector<int32_t>{10, 11, 12, 13});
  CHECK(targets == std::vector<int32_t>{kIgnoredTarget, 12, 13, kIgnoredTarget});  // targets are tokens 1..4
  CHECK(count_targets(targets.data(), 4) == 2);
  sampler.fill(1, 0, inputs.data(), targets.data());
  CHECK(targets == std::vector<int32_t>{15, kIgnoredTarget, 17, 18});
  CHECK(sampler.fill_eval(0, 1, inputs.data(), targets.data()));
  CHECK(targets == std::vector<int32_t>{kIgnoredTarget, 12, 13, kIgnoredTarget});
  // The divisor of a step's loss: every rank counts the targets of all ranks' windows alike.
  CHECK(sampler.counted_targets_in_step(0) == 2);
  CHECK(sampler.counted_targets_in_step(1) == 3);
  CHECK(sampler.counted_targets_in_step(2) == 2);  // wrapped to the first window
  BatchSampler rank1(*d, 1, 4, 2, 1, 1, false, 0);  // two ranks: a step reads both windows
  CHECK(rank1.counted_targets_in_step(0) == 5);
  rank1.fill(0, 0, inputs.data(), targets.data());
  CHECK(count_targets(targets.data(), 4) == 3);
  BatchSampler shuffled(*d, 1, 4, 1, 0, 1, true, 7);
  for (int64_t step = 0; step < 4; ++step) {
    shuffled.fill(step, 0, inputs.data(), targets.data());
    CHECK(shuffled.counted_targets_in_step(step) == count_targets(targets.data(), 4));
  }
  const std::vector<uint16_t> plain = {1, 2, 3, 4, 5};
  auto unmasked = open_dataset(dir.write("plain.bin", with_header(20240520, 1, 5, plain)), "auto");
  CHECK(BatchSampler(*unmasked, 1, 4, 1, 0, 1, false, 0).counted_targets_in_step(0) == 4);
}

TEST_CASE("a loss mask that does not belong is refused, naming it", "[data]") {
  TempDir dir;
  const std::vector<uint16_t> tokens = {1, 2, 3, 4};
  const auto path = dir.write("t.bin", with_header(20240520, 1, 4, tokens));
  auto write_mask = [&](const std::string& bytes) { dir.write("t.mask", bytes); };
  write_mask(with_header(20240523, 1, 3, std::vector<uint8_t>{1, 1, 1}));
  CHECK_THROWS_WITH(open_dataset(path, "auto"), dir.file("t.mask") + ": the loss mask is for 3 tokens, but " + path +
                                                    " holds 4: it belongs to another token file");
  write_mask(with_header(20240523, 1, 4, std::vector<uint8_t>{1, 0, 2, 1}));
  CHECK_THROWS_WITH(open_dataset(path, "auto"), Catch::Contains("t.mask: value 2 for token 2 (byte offset 1026)"));
  write_mask(with_header(20240520, 1, 4, std::vector<uint8_t>{1, 0, 1, 1}));
  CHECK_THROWS_WITH(open_dataset(path, "auto"), Catch::Contains("t.mask: not a loss mask"));
  write_mask(with_header(20240523, 1, 4, std::vector<uint8_t>{1, 0, 1}));
  CHECK_THROWS_WITH(open_dataset(path, "auto"), Catch::Contains("t.mask: size mismatch"));
}

TEST_CASE("the token file writer writes llm.c files, a mask when needed, and a tail split", "[data]") {
  TempDir dir;
  SECTION("uint16 tokens, no mask: the file llm.c writes") {
    TokenFileWriter w(dir.file("a.bin"), 50257);
    w.append(std::vector<int32_t>{50256, 15496, 995});
    w.append(std::vector<int32_t>{50256, 0});
    const auto files = w.finish();
    REQUIRE(files.size() == 1);
    CHECK(files[0].mask_path.empty());
    auto d = open_dataset(dir.file("a.bin"), "auto");
    CHECK(read_all(*d) == std::vector<int32_t>{50256, 15496, 995, 50256, 0});
    CHECK(std::filesystem::file_size(dir.file("a.bin")) == 1024 + 2 * 5);
    CHECK_FALSE(std::filesystem::exists(dir.file("a.bin.tmp")));
    CHECK_FALSE(std::filesystem::exists(dir.file("a.mask")));
  }
  SECTION("uint32 tokens with a mask, the last tokens split off") {
    TokenFileWriter w(dir.file("b.bin"), 151669);
    w.append(std::vector<int32_t>{151643, 1, 2, 3}, std::vector<uint8_t>{0, 0, 1, 1});
    w.append(std::vector<int32_t>{151643, 70000, 5});  // text: every token counts
    TokenFileWriter::Outputs split;
    split.val_path = dir.file("b.val.bin");
    split.val_tail_tokens = 3;
    const auto files = w.finish(split);
    REQUIRE(files.size() == 2);
    CHECK(files[0].tokens == 4);
    CHECK(files[1].tokens == 3);
    auto head = open_dataset(dir.file("b.bin"), "auto");
    auto tail = open_dataset(dir.file("b.val.bin"), "auto");
    CHECK(read_all(*head) == std::vector<int32_t>{151643, 1, 2, 3});
    CHECK(mask_of(*head) == std::vector<uint8_t>{0, 0, 1, 1});
    CHECK(read_all(*tail) == std::vector<int32_t>{151643, 70000, 5});
    CHECK(mask_of(*tail) == std::vector<uint8_t>{1, 1, 1});
    CHECK(tail->has_loss_mask());
    CHECK(std::filesystem::file_size(dir.file("b.bin")) == 1024 + 4 * 4);
  }
  SECTION("an old mask beside a file rewritten without one is removed; unfinished writes leave nothing") {
    {
      TokenFileWriter w(dir.file("c.bin"), 300);
      w.append(std::vector<int32_t>{1, 2}, std::vector<uint8_t>{0, 1});
      w.finish();
    }
    CHECK(std::filesystem::exists(dir.file("c.mask")));
    {
      TokenFileWriter w(dir.file("c.bin"), 300);
      w.append(std::vector<int32_t>{7, 8, 9});
      w.finish();
    }
    CHECK_FALSE(std::filesystem::exists(dir.file("c.mask")));
    CHECK(read_all(*open_dataset(dir.file("c.bin"), "auto")) == std::vector<int32_t>{7, 8, 9});
    {
      TokenFileWriter w(dir.file("c.bin"), 300);
      w.append(std::vector<int32_t>{4});
    }  // not finished: the old file stays, no temporary is left
    CHECK(read_all(*open_dataset(dir.file("c.bin"), "auto")) == std::vector<int32_t>{7, 8, 9});
    CHECK_FALSE(std::filesystem::exists(dir.file("c.bin.tmp")));
    CHECK_FALSE(std::filesystem::exists(dir.file("c.mask.tmp")));
  }
  SECTION("a path that cannot be written fails at once, naming it") {
    CHECK_THROWS_WITH(TokenFileWriter(dir.file("no/such/dir/x.bin"), 256),
                      "cannot create '" + dir.file("no/such/dir/x.bin.tmp") + "': No such file or directory");
  }
}
