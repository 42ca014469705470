#pragma once
// A small reader of TensorFlow event files for the tests, written from the format's rules and
// independent of lib/train: it parses the TFRecord frames, checks both CRCs of each, and decodes
// the Event fields zerotrain writes. Anything malformed throws std::runtime_error.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zt::test {

struct TbEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> values;  // Summary.Value: tag, simple_value
};

inline uint32_t tb_crc32c(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int i = 0; i < 8; ++i) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

inline uint32_t tb_masked_crc32c(const std::string& bytes) {
  const uint32_t crc = tb_crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

namespace tb_detail {

// Reads protobuf fields from a byte string.
struct Fields {
  const std::string& bytes;
  size_t pos = 0;

  bool done() const { return pos >= bytes.size(); }
  uint8_t byte() {
    if (pos >= bytes.size()) throw std::runtime_error("protobuf: truncated message");
    return uint8_t(bytes[pos++]);
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = byte();
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::runtime_error("protobuf: varint too long");
  }
  uint64_t fixed(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(byte()) << (8 * i);
    return v;
  }
  std::string length_delimited() {
    const uint64_t n = varint();
    if (n > bytes.size() - pos) throw std::runtime_error("protobuf: truncated field");
    std::string s = bytes.substr(pos, n);
    pos += n;
    return s;
  }
  // The next field's number and wire type, its value read by the caller.
  std::pair<int, int> key() {
    const uint64_t k = varint();
    return {int(k >> 3), int(k & 7)};
  }
  void skip(int wire_type) {
    switch (wire_type) {
      case 0: varint(); break;
      case 1: fixed(8); break;
      case 2: length_delimited(); break;
      case 5: fixed(4); break;
      default: throw std::runtime_error("protobuf: unknown wire type " + std::to_string(wire_type));
    }
  }
};

inline double as_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

inline float as_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline std::pair<std::string, float> decode_value(const std::string& bytes) {
  std::pair<std::string, float> value{"", 0.0f};
  Fields in{bytes};
  while (!in.done()) {
    auto [field, type] = in.key();
    if (field == 1 && type == 2) value.first = in.length_delimited();
    else if (field == 2 && type == 5) value.second = as_float(uint32_t(in.fixed(4)));
    else in.skip(type);
  }
  return value;
}

}  // namespace tb_detail

inline TbEvent decode_tb_event(const std::string& bytes) {
  using namespace tb_detail;
  TbEvent event;
  Fields in{bytes};
  while (!in.done()) {
    auto [field, type] = in.key();
    if (field == 1 && type == 1) event.wall_time = as_double(in.fixed(8));
    else if (field == 2 && type == 0) event.step = int64_t(in.varint());
    else if (field == 3 && type == 2) event.file_version = in.length_delimited();
    else if (field == 5 && type == 2) {
      const std::string summary = in.length_delimited();
      Fields s{summary};
      while (!s.done()) {
        auto [f, t] = s.key();
        if (f == 1 && t == 2) event.values.push_back(decode_value(s.length_delimited()));
        else s.skip(t);
      }
    } else in.skip(type);
  }
  return event;
}

// The data of every TFRecord in `file`, each frame's CRCs checked.
inline std::vector<std::string> read_tf_records(const std::string& file) {
  std::vector<std::string> records;
  size_t pos = 0;
  auto take = [&](size_t n) {
    if (n > file.size() - pos) throw std::runtime_error("tfrecord: truncated at byte " + std::to_string(pos));
    std::string s = file.substr(pos, n);
    pos += n;
    return s;
  };
  auto u32 = [](const std::string& s) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(s[size_t(i)])) << (8 * i);
    return v;
  };
  while (pos < file.size()) {
    const std::string length = take(8);
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(length[size_t(i)])) << (8 * i);
    if (u32(take(4)) != tb_masked_crc32c(length))
      throw std::runtime_error("tfrecord: bad length CRC in record " + std::to_string(records.size()));
    std::string data = take(n);
    if (u32(take(4)) != tb_masked_crc32c(data))
      throw std::runtime_error("tfrecord: bad data CRC in record " + std::to_string(records.size()));
    records.push_back(std::move(data));
  }
  return records;
}

inline std::vector<TbEvent> read_tb_events(const std::string& file) {
  std::vector<TbEvent> events;
  for (const auto& record : read_tf_records(file)) events.push_back(decode_tb_event(record));
  return events;
}

}  // namespace zt::test
