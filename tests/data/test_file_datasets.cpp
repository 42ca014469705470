#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "read_all.hpp"
#include "temp_dir.hpp"

using namespace zt;
using zt::test::read_all;

namespace {

// Bytes of an llm.c shard: the 256-int32 header then the uint16 tokens.
std::vector<uint8_t> llmc_bytes(const std::vector<uint16_t>& tokens, int32_t magic = 20240520, int32_t version = 1,
                                int32_t count = -1) {
  std::vector<int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = count < 0 ? int32_t(tokens.size()) : count;
  std::vector<uint8_t> bytes(1024 + 2 * tokens.size());
  std::memcpy(bytes.data(), header.data(), 1024);
  std::memcpy(bytes.data() + 1024, tokens.data(), 2 * tokens.size());
  return bytes;
}

}  // namespace

TEST_CASE("llm.c shards are read, sized and their vocabulary reported", "[data]") {
  TempDir dir;
  std::vector<uint16_t> tokens = {50256, 15496, 11, 995, 0, 7, 50000};
  auto bytes = llmc_bytes(tokens);
  auto path = dir.write("shard_000.bin", bytes.data(), bytes.size());
  auto d = open_dataset(path, "auto");
  CHECK(d->format() == TokenFormat::LlmC);
  CHECK(d->path() == path);
  CHECK(d->size() == 7);
  CHECK(d->vocab_size() == 50257);  // largest token + 1
  CHECK(read_all(*d) == std::vector<int32_t>(tokens.begin(), tokens.end()));
  std::vector<int32_t> part(3);
  d->read(2, 3, part.data());
  CHECK(part == std::vector<int32_t>{11, 995, 0});
  CHECK_THROWS_AS(d->read(5, 3, part.data()), zt::Error);
  // The header magic decides before the extension does.
  auto odd_name = dir.write("tokens.data", bytes.data(), bytes.size());
  CHECK(detect_token_format(odd_name) == TokenFormat::LlmC);
}

TEST_CASE("bad llm.c files give one clear error each", "[data]") {
  TempDir dir;
  std::vector<uint16_t> tokens(10, 3);
  auto bad_magic = llmc_bytes(tokens, 12345);
  CHECK_THROWS_WITH(open_dataset(dir.write("a.bin", bad_magic.data(), bad_magic.size()), "auto"),
                    Catch::Contains("a.bin") && Catch::Contains("bad llm.c magic 12345") &&
                        Catch::Contains("20240520"));
  auto version2 = llmc_bytes(tokens, 20240520, 2);
  CHECK_THROWS_WITH(open_dataset(dir.write("b.bin", version2.data(), version2.size()), "llmc"),
                    Catch::Contains("b.bin") && Catch::Contains("unsupported llm.c version 2"));
  auto wrong_count = llmc_bytes(tokens, 20240520, 1, 12);  // says 12 tokens, holds 10
  CHECK_THROWS_WITH(open_dataset(dir.write("c.bin", wrong_count.data(), wrong_count.size()), "llmc"),
                    Catch::Contains("c.bin") && Catch::Contains("size mismatch") && Catch::Contains("1048") &&
                        Catch::Contains("1044"));
  auto truncated = llmc_bytes(tokens);
  truncated.resize(600);
  CHECK_THROWS_WITH(open_dataset(dir.write("d.bin", truncated.data(), truncated.size()), "llmc"),
                    Catch::Contains("d.bin") && Catch::Contains("too small"));
  auto empty = llmc_bytes({});
  CHECK_THROWS_WITH(open_dataset(dir.write("e.bin", empty.data(), empty.size()), "llmc"),
                    Catch::Contains("e.bin") && Catch::Contains("no tokens"));
  CHECK_THROWS_WITH(open_dataset(dir.file("missing.bin"), "auto"),
                    Catch::Contains("missing.bin") && Catch::Contains("not found"));
  CHECK_THROWS_WITH(open_dataset(dir.file("missing.bin"), "llmc"),
                    Catch::Contains("missing.bin") && Catch::Contains("not found"));
}

TEST_CASE("raw uint16 token files", "[data]") {
  TempDir dir;
  std::vector<uint16_t> tokens = {1, 2, 3, 65535, 4};
  auto path = dir.write("t.u16", tokens.data(), tokens.size() * 2);
  auto d = open_dataset(path, "auto");
  CHECK(d->format() == TokenFormat::Uint16);
  CHECK(d->vocab_size() == 65536);
  CHECK(read_all(*d) == std::vector<int32_t>{1, 2, 3, 65535, 4});
  CHECK(detect_token_format(dir.write("t.uint16", tokens.data(), 4)) == TokenFormat::Uint16);
  // Any name works with an explicit format; the size must be even.
  auto odd = dir.write("odd.raw", tokens.data(), 9);
  CHECK_THROWS_WITH(open_dataset(odd, "uint16"), Catch::Contains("odd.raw") && Catch::Contains("odd size 9"));
}

TEST_CASE("text is read as bytes with vocabulary 256", "[data]") {
  TempDir dir;
  auto path = dir.write("hello.txt", std::string("Hi!\n\xff", 5));
  auto d = open_dataset(path, "auto");
  CHECK(d->format() == TokenFormat::Text);
  CHECK(d->vocab_size() == 256);
  CHECK(read_all(*d) == std::vector<int32_t>{'H', 'i', '!', '\n', 255});
  CHECK(detect_token_format(dir.write("notes.md", "x")) == TokenFormat::Text);
  CHECK(open_dataset(dir.write("raw.dat", "abc"), "text")->size() == 3);
  CHECK_THROWS_WITH(open_dataset(dir.write("empty.txt", ""), "auto"), Catch::Contains("no tokens"));
}

TEST_CASE("format detection and names", "[data]") {
  TempDir dir;
  CHECK_THROWS_WITH(detect_token_format(dir.write("weights.xyz", "abcd")),
                    Catch::Contains("weights.xyz") && Catch::Contains("cannot tell") && Catch::Contains(".xyz"));
  CHECK(detect_token_format("synthetic") == TokenFormat::Synthetic);
  CHECK(detect_token_format("synthetic:vocab=8") == TokenFormat::Synthetic);
  for (auto f : {TokenFormat::Auto, TokenFormat::LlmC, TokenFormat::Uint16, TokenFormat::Text, TokenFormat::Synthetic})
    CHECK(kTokenFormatNames.parse(kTokenFormatNames.name(f), "data.format") == f);
  CHECK_THROWS_WITH(kTokenFormatNames.parse("parquet", "data.format"),
                    Catch::Contains("data.format") && Catch::Contains("parquet"));
}

TEST_CASE("tokens outside the model vocabulary are named with their offset", "[data]") {
  TempDir dir;
  std::vector<uint16_t> tokens = {1, 2, 3, 4, 5, 300, 6, 400};
  auto bytes = llmc_bytes(tokens);
  auto d = open_dataset(dir.write("v.bin", bytes.data(), bytes.size()), "llmc");
  CHECK(d->vocab_size() == 401);
  CHECK_NOTHROW(d->check_vocab(401));
  CHECK_THROWS_WITH(d->check_vocab(256), Catch::Contains("v.bin") && Catch::Contains("token 300") &&
                                             Catch::Contains("index 5") && Catch::Contains("byte offset 1034") &&
                                             Catch::Contains("256"));
  // Text declares 256 but only the bytes present matter to the check.
  auto text = open_dataset(dir.write("ascii.txt", "plain ascii"), "text");
  CHECK_NOTHROW(text->check_vocab(128));
  auto high = open_dataset(dir.write("high.txt", std::string("ab\x80", 3)), "text");
  CHECK_THROWS_WITH(high->check_vocab(128), Catch::Contains("token 128") && Catch::Contains("index 2"));
}

TEST_CASE("a token file that shrinks under a reader is an error naming it, not a crash", "[data]") {
  TempDir dir;
  std::vector<uint16_t> tokens(100000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = uint16_t(i % 1000);
  auto path = dir.write("tokens.u16", tokens.data(), 2 * tokens.size());
  auto d = open_dataset(path, "auto");
  std::vector<int32_t> window(64);
  d->read(90000, 64, window.data());
  CHECK(window[0] == 0);
  CHECK(window[63] == 63);
  // Truncated by another program: with the file mapped, touching the lost pages was a SIGBUS.
  std::filesystem::resize_file(path, 4096);
  CHECK_THROWS_WITH(d->read(90000, 64, window.data()),
                    path + ": the data file shrank while training read it (200000 bytes when opened, 4096 now; bytes "
                           "[180000, 180128) are gone): was it truncated or rewritten by another program?");
  d->read(0, 64, window.data());  // what is still there reads as before
  CHECK(window[5] == 5);
}

TEST_CASE("a data path that is no regular file is refused without blocking, saying what it is", "[data]") {
  TempDir dir;
  const std::string fifo = dir.file("fifo.txt");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  for (const char* format : {"auto", "text", "uint16", "llmc"})
    CHECK_THROWS_WITH(open_dataset(fifo, format), fifo + ": cannot open data file: is a FIFO, not a regular file");
  CHECK_THROWS_WITH(open_dataset(dir.path.string(), "text"),
                    dir.path.string() + ": cannot open data file: is a directory, not a regular file");
  CHECK_THROWS_WITH(open_dataset(dir.file("none/x.txt"), "auto"), dir.file("none/x.txt") + ": data file not found");
  const std::string file = dir.write("file.txt", "abc");
  CHECK_THROWS_WITH(open_dataset(file + "/x.txt", "auto"), file + "/x.txt: cannot open data file: Not a directory");
}
