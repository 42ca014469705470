#include "metrics/tb_event_writer.hpp"

#include <unistd.h>

#include <bit>
#include <chrono>
#include <cmath>

#include "core/crc32c.hpp"
#include "core/error.hpp"

namespace zt {

namespace {

// Protobuf wire types.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(uint8_t(v)));
}

void put_key(std::string& out, int field, int wire_type) {
  put_varint(out, uint64_t(field) << 3 | uint64_t(wire_type));
}

// Little-endian, whatever the host's byte order.
void put_fixed32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char(uint8_t(v >> (8 * i))));
}

void put_fixed64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(char(uint8_t(v >> (8 * i))));
}

void put_double(std::string& out, int field, double v) {
  put_key(out, field, kFixed64);
  put_fixed64(out, std::bit_cast<uint64_t>(v));
}

void put_float(std::string& out, int field, float v) {
  put_key(out, field, kFixed32);
  put_fixed32(out, std::bit_cast<uint32_t>(v));
}

void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

std::string encode_version_event(double wall_time) {
  std::string event;
  put_double(event, 1, wall_time);
  put_bytes(event, 3, "brain.Event:2");
  return event;
}

std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag, float value) {
  std::string summary_value;  // Summary.Value
  put_bytes(summary_value, 1, tag);
  put_float(summary_value, 2, value);
  std::string summary;
  put_bytes(summary, 1, summary_value);
  std::string event;
  put_double(event, 1, wall_time);
  if (step != 0) {  // proto3: a zero is not written
    put_key(event, 2, kVarint);
    put_varint(event, uint64_t(step));  // a negative int64 takes 10 bytes, as protobuf writes it
  }
  put_bytes(event, 5, summary);
  return event;
}

std::string tf_record(const std::string& data) {
  std::string length;
  put_fixed64(length, data.size());
  std::string record = length;
  put_fixed32(record, masked_crc32c(length.data(), length.size()));
  record += data;
  put_fixed32(record, masked_crc32c(data.data(), data.size()));
  return record;
}

std::string event_file_name(int64_t unix_seconds, const std::string& host) {
  return "events.out.tfevents." + std::to_string(unix_seconds) + "." + host;
}

TbEventWriter::TbEventWriter(const std::filesystem::path& dir) {
  const double now = unix_time();
  path_ = dir / event_file_name(int64_t(std::floor(now)), hostname());
  // Appending: a second run started in the same second adds its records after the first run's
  // (TensorBoard reads a file_version record in the middle of a file) instead of erasing them.
  out_ = CheckedFile(path_.string(), CheckedFile::Mode::Append, "tensorboard");
  write(encode_version_event(now));
  flush();
}

void TbEventWriter::write(const std::string& event) {
  if (out_.is_open()) pending_ += tf_record(event);
}

void TbEventWriter::scalar(const std::string& tag, int64_t step, float value) {
  write(encode_scalar_event(unix_time(), step, tag, value));
}

void TbEventWriter::flush() {
  if (pending_.empty()) return;
  const std::string records = std::move(pending_);
  pending_.clear();
  out_.write(records);
}

void TbEventWriter::close() {
  pending_.clear();
  out_ = CheckedFile();
}

}  // namespace zt
