// Sample indexes beside token files of record data (data/sample_index.hpp): the writer's index
// reads back as the documents' starts, a validation split of whole documents carries its own, and
// an index that does not belong to its token file is refused with one error naming it.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "data/llmc_format.hpp"
#include "data/sample_index.hpp"
#include "data/token_file_writer.hpp"
#include "temp_dir.hpp"

using namespace zt;

namespace {

// Documents of 3, 2, 4 and 1 tokens (token values 1..10), written with their index.
std::string write_documents(const TempDir& dir, const std::string& name, TokenFileWriter::Outputs outputs = {}) {
  TokenFileWriter w(dir.file(name), 100);
  const std::vector<int64_t> starts{0, 3, 5};  // three documents start in the first append
  w.append(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}, {}, starts);
  w.append(std::vector<int32_t>{8, 9}, {}, std::vector<int64_t>{1});  // the third goes on; a fourth starts
  outputs.samples = true;
  w.finish(outputs);
  return dir.file(name);
}

std::vector<int64_t> offsets_of(const std::string& path) {
  const auto d = open_dataset(path, TokenFormat::LlmC);
  return {d->sample_offsets().begin(), d->sample_offsets().end()};
}

std::string error_of(const std::string& path) {
  try {
    open_dataset(path, TokenFormat::LlmC);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void overwrite(const std::string& path, size_t offset, const void* bytes, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(std::streamoff(offset));
  f.write(static_cast<const char*>(bytes), std::streamsize(n));
}

}  // namespace

TEST_CASE("the writer's sample index reads back as the documents' starts", "[data][samples]") {
  TempDir dir;
  const std::string path = write_documents(dir, "a.bin");
  CHECK(std::filesystem::exists(dir.file("a.idx")));
  CHECK(offsets_of(path) == std::vector<int64_t>{0, 3, 5, 8, 9});
  // The layout docs/data.md gives: a 1024-byte header, then uint64 offsets.
  const std::string bytes = file_bytes(dir.file("a.idx"));
  REQUIRE(bytes.size() == 1024 + 5 * 8);
  int32_t header[4];
  std::memcpy(header, bytes.data(), sizeof(header));
  CHECK(header[0] == llmc::kIndexMagic);
  CHECK(header[2] == 4);
  CHECK(header[3] == 9);
}

TEST_CASE("a validation split of whole documents carries its own index", "[data][samples]") {
  TempDir dir;
  TokenFileWriter::Outputs outputs;
  outputs.val_path = dir.file("a.val.bin");
  outputs.val_documents = [](int64_t d) { return d == 1 || d == 3; };
  const std::string path = write_documents(dir, "a.bin", outputs);
  CHECK(offsets_of(path) == std::vector<int64_t>{0, 3, 6});  // documents 0 and 2
  CHECK(offsets_of(dir.file("a.val.bin")) == std::vector<int64_t>{0, 2, 3});  // documents 1 and 3
  const auto val = open_dataset(dir.file("a.val.bin"), TokenFormat::LlmC);
  std::vector<int32_t> tokens(3);
  val->read(0, 3, tokens.data());
  CHECK(tokens == std::vector<int32_t>{4, 5, 9});
}

TEST_CASE("a sample index that does not belong to its token file is refused, naming it", "[data][samples]") {
  TempDir dir;
  const std::string path = write_documents(dir, "a.bin"), index = dir.file("a.idx");
  const std::string good = file_bytes(index);
  const auto restore = [&] { dir.write("a.idx", good); };

  const int32_t other_magic = 20240520;
  overwrite(index, 0, &other_magic, 4);
  CHECK_THAT(error_of(path), Catch::StartsWith(index + ": not a sample index (expected the header magic 20240524"));
  restore();
  const int32_t other_count = 12;
  overwrite(index, 12, &other_count, 4);
  CHECK(error_of(path) == index + ": the sample index is for 12 tokens, but " + path +
                              " holds 9: it belongs to another token file");
  restore();
  dir.write("a.idx", good.substr(0, good.size() - 8));
  CHECK_THAT(error_of(path),
             Catch::StartsWith(index + ": size mismatch: 4 samples need 1064 bytes, the file has 1056"));
  restore();
  const uint64_t backwards = 2;  // entry 2 below entry 1 (3)
  overwrite(index, 1024 + 2 * 8, &backwards, 8);
  CHECK(error_of(path) == index + ": entry 2 (byte offset 1040) is 2, not above the entry before it (3): a sample "
                              "holds at least one token");
  restore();
  const uint64_t beyond = 10;
  overwrite(index, 1024 + 4 * 8, &beyond, 8);
  CHECK(error_of(path) == index + ": entry 4 (byte offset 1056) is 10, beyond the 9 tokens of the token file");
  restore();
  CHECK(offsets_of(path) == std::vector<int64_t>{0, 3, 5, 8, 9});
}
