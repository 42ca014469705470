#pragma once
// TensorFlow event files, as TensorBoard reads them, written by hand (no protobuf dependency).
//
// The file is a sequence of TFRecords: uint64 length (little-endian), uint32 masked CRC-32C of
// those 8 bytes, the data, uint32 masked CRC-32C of the data. Each record holds one serialized
// tensorflow.Event message; the first one carries file_version "brain.Event:2".
//
// The messages used (field number, protobuf wire type):
//   Event   { 1 wall_time double (64-bit), 2 step int64 (varint), 3 file_version string, 5 summary Summary }
//   Summary { 1 value repeated Value }
//   Value   { 1 tag string, 2 simple_value float (32-bit) }
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/checked_file.hpp"

namespace zt {

// The serialized Event messages.
std::string encode_version_event(double wall_time);  // file_version "brain.Event:2"
std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag, float value);

// One TFRecord holding `data`.
std::string tf_record(const std::string& data);

// events.out.tfevents.<unix seconds>.<hostname>, as TensorBoard's writers name their files.
std::string event_file_name(int64_t unix_seconds, const std::string& hostname);

class TbEventWriter {
public:
  TbEventWriter() = default;  // writes nothing
  // Opens <dir>/events.out.tfevents.<now>.<hostname> (the directory must exist) and writes the
  // file_version record; fails naming the file when it cannot.
  explicit TbEventWriter(const std::filesystem::path& dir);

  void scalar(const std::string& tag, int64_t step, float value);
  // Writes the records made since the last flush, all or none: on failure (a full disk) the file is
  // cut back to its last whole record and a zt::Error names it.
  void flush();
  void close();  // writes nothing more
  const std::filesystem::path& path() const { return path_; }

private:
  void write(const std::string& event);

  std::filesystem::path path_;
  CheckedFile out_;
  std::string pending_;  // records not yet written
};

}  // namespace zt
