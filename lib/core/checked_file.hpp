#pragma once
// Output files whose every write is checked. A failed or short write (a full disk, a file size
// limit, /dev/full) is an error naming the file and the reason, and a record is written whole or
// not at all: after a failure the file ends with the last record that was written whole, so a
// reader never meets half a line.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/unique_fd.hpp"

namespace zt {

class CheckedFile {
public:
  enum class Mode { Truncate, Append };

  CheckedFile() = default;  // writes nothing
  // Opens (creating) `path`. `label` starts every message: the config key the path came from, such
  // as "training.metrics". Regular files and character devices (/dev/null) are accepted; a
  // directory, FIFO or socket is an error (a FIFO would block, or kill the process when its reader
  // goes away).
  CheckedFile(std::string path, Mode mode, std::string label);
  CheckedFile(CheckedFile&& other) noexcept = default;
  CheckedFile& operator=(CheckedFile&& other) noexcept = default;

  bool is_open() const { return fd_.get() >= 0; }
  const std::string& path() const { return path_; }
  // Bytes in the file (a regular file; 0 for a device), the last whole record included.
  uint64_t size() const { return uint64_t(size_); }

  // Appends `record` whole, or throws zt::Error "LABEL: cannot write 'PATH': REASON" with the
  // file cut back to where it was.
  void write(std::string_view record);
  void sync();   // fsync: the bytes are on disk, or an error naming the file
  void close();  // checked; a closed file writes nothing

private:
  [[noreturn]] void fail_write(int error, const char* what);

  UniqueFd fd_;
  std::string path_, label_;
  bool regular_ = false;
  off_t size_ = 0;  // of a regular file, after the last whole record
};

// Writes `path` whole or not at all: `write` fills PATH.tmp, which is flushed to disk and renamed
// onto `path`. On any failure PATH.tmp is removed and the zt::Error says which file and why:
// "LABEL: cannot write 'PATH.tmp': No space left on device (nothing written to PATH; the partial
// file was removed)".
void write_file_atomically(const std::string& path, const std::string& label,
                           const std::function<void(CheckedFile&)>& write);

}  // namespace zt
