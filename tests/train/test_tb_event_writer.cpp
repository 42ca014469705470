// TensorFlow event files (lib/core/crc32c, lib/metrics/tb_event_writer): CRC-32C test vectors, one
// scalar Event and its TFRecord frame byte for byte, and a written file read back by the tests'
// own reader (tests/e2e/tb_reader.hpp).
#include <catch2/catch.hpp>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tb_reader.hpp"
#include "core/crc32c.hpp"
#include "metrics/tb_event_writer.hpp"

using namespace zt;

namespace {

std::string bytes(std::initializer_list<int> list) {
  std::string s;
  for (int b : list) s.push_back(char(uint8_t(b)));
  return s;
}

std::string hex(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    std::snprintf(buf, sizeof buf, "%02x ", c);
    out += buf;
  }
  return out;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Event { wall_time: 2.0, step: 3, summary { value { tag: "a", simple_value: 1.5 } } }
const std::string kScalarEvent = bytes({
    0x09, 0, 0, 0, 0, 0, 0, 0, 0x40,  // field 1 wall_time, fixed64: 2.0 = 0x4000000000000000, little-endian
    0x10, 0x03,                       // field 2 step, varint: 3
    0x2a, 0x0a,                       // field 5 summary, 10 bytes:
    0x0a, 0x08,                       //   field 1 value, 8 bytes:
    0x0a, 0x01, 'a',                  //     field 1 tag, 1 byte: "a"
    0x15, 0x00, 0x00, 0xc0, 0x3f,     //     field 2 simple_value, fixed32: 1.5f = 0x3fc00000, little-endian
});

}  // namespace

TEST_CASE("crc32c: the Castagnoli test vectors") {
  CHECK(crc32c("123456789", 9) == 0xE3069283u);
  const std::vector<unsigned char> zeros(32, 0);
  CHECK(crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);
  CHECK(crc32c("", 0) == 0u);
  // masked = rotate right by 15, plus 0xa282ead8
  CHECK(masked_crc32c("123456789", 9) == uint32_t(((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u));
  // The tests' reader computes the same.
  CHECK(test::tb_crc32c("123456789") == 0xE3069283u);
  CHECK(test::tb_crc32c(std::string(32, '\0')) == 0x8A9136AAu);
}

TEST_CASE("tb_event_writer: one scalar Event, byte for byte") {
  const std::string event = encode_scalar_event(2.0, 3, "a", 1.5f);
  INFO(hex(event));
  CHECK(event == kScalarEvent);
  CHECK(event.size() == 23);
  // Step 0 is proto3's default and is not written.
  CHECK(encode_scalar_event(2.0, 0, "a", 1.5f) == kScalarEvent.substr(0, 9) + kScalarEvent.substr(11));
  // Steps past 127 take several varint bytes: 300 = 0xac 0x02.
  CHECK(encode_scalar_event(2.0, 300, "a", 1.5f).substr(9, 3) == bytes({0x10, 0xac, 0x02}));
}

TEST_CASE("tb_event_writer: the file_version Event") {
  const std::string event = encode_version_event(2.0);
  INFO(hex(event));
  CHECK(event == bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x1a, 13}) + "brain.Event:2");
}

TEST_CASE("tb_event_writer: the TFRecord frame of the scalar Event, byte for byte") {
  const std::string record = tf_record(kScalarEvent);
  INFO(hex(record));
  // uint64 length 23, masked CRC-32C of those 8 bytes, the data, masked CRC-32C of the data: the
  // CRCs as computed by a separate implementation of the rules above.
  const std::string expected = bytes({0x17, 0, 0, 0, 0, 0, 0, 0}) + bytes({0xe7, 0xce, 0xf8, 0x1e}) + kScalarEvent +
                               bytes({0xed, 0x90, 0x6a, 0xf8});
  CHECK(record == expected);
  CHECK(masked_crc32c(record.data(), 8) == 0x1ef8cee7u);
  CHECK(masked_crc32c(kScalarEvent.data(), kScalarEvent.size()) == 0xf86a90edu);

  // The tests' reader takes it back, and refuses it with any byte changed.
  auto events = test::read_tb_events(record);
  REQUIRE(events.size() == 1);
  CHECK(events[0].wall_time == 2.0);
  CHECK(events[0].step == 3);
  REQUIRE(events[0].values.size() == 1);
  CHECK(events[0].values[0].first == "a");
  CHECK(events[0].values[0].second == 1.5f);
  for (size_t i = 0; i < record.size(); ++i) {
    INFO("byte " << i);
    std::string bad = record;
    bad[i] = char(bad[i] ^ 0x01);
    CHECK_THROWS_AS(test::read_tb_events(bad), std::runtime_error);
  }
  CHECK_THROWS_AS(test::read_tb_events(record.substr(0, record.size() - 1)), std::runtime_error);
}

TEST_CASE("TbEventWriter: events.out.tfevents.<seconds>.<host>, file_version first, then the scalars") {
  const auto dir = std::filesystem::path(ZT_BINARY_DIR) / "test-runs" / "tb-event-writer";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto before = std::time(nullptr);
  std::filesystem::path path;
  {
    TbEventWriter writer(dir);
    path = writer.path();
    writer.scalar("Train/Samples/train_loss", 8, 2.25f);
    writer.scalar("Train/Samples/lr", 8, 1e-4f);
    writer.flush();
    // Flushed: readable while the writer is still open.
    CHECK(test::read_tb_events(read_all(path)).size() == 3);
  }
  CHECK(path.parent_path() == dir);
  std::smatch m;
  const std::string name = path.filename().string();
  REQUIRE(std::regex_match(name, m, std::regex(R"(events\.out\.tfevents\.(\d+)\.(.+))")));
  CHECK(std::stoll(m[1]) >= before);
  CHECK(std::stoll(m[1]) <= std::time(nullptr));

  auto events = test::read_tb_events(read_all(path));
  REQUIRE(events.size() == 3);
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(events[0].values.empty());
  CHECK(events[0].wall_time >= double(before));
  CHECK(events[1].step == 8);
  CHECK(events[1].values == std::vector<std::pair<std::string, float>>{{"Train/Samples/train_loss", 2.25f}});
  CHECK(events[2].values == std::vector<std::pair<std::string, float>>{{"Train/Samples/lr", 1e-4f}});
  CHECK(events[2].wall_time >= events[0].wall_time);

  // A directory that does not exist: an error naming the file.
  try {
    TbEventWriter bad(dir / "missing");
    FAIL("no error");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()).find("tensorboard: cannot open '" + (dir / "missing").string() +
                                     "/events.out.tfevents.") != std::string::npos);
  }
}
