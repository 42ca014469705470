#pragma once
// Files that survive a crash or a power cut: written under a temporary name, fsync'ed, renamed
// into place, and the directory fsync'ed so that the rename itself is on disk. A reader sees the
// old file or the complete new one, never a part. Every error names the file and the cause
// ("No space left on device").
#include <cstdint>
#include <string>
#include <string_view>

namespace zt {

// A file opened for writing (created or truncated), synced on request: the piece of a durable
// write that holds the data.
class SyncedFile {
public:
  explicit SyncedFile(std::string path);
  ~SyncedFile();  // closes without syncing (a file that was not committed is garbage anyway)
  SyncedFile(const SyncedFile&) = delete;
  SyncedFile& operator=(const SyncedFile&) = delete;

  void append(const void* data, size_t bytes);
  void write_at(uint64_t offset, const void* data, size_t bytes);
  void sync();   // fsync: the data is on disk
  void close();  // errors of the last writes surface here too
  const std::string& path() const { return path_; }

private:
  std::string path_;
  int fd_ = -1;
  uint64_t end_ = 0;  // where append() writes
};

// fsync of a directory: renames and new entries in it are on disk.
void sync_directory(const std::string& dir);
// rename(2), then fsync of the directory that holds `to`.
void rename_durably(const std::string& from, const std::string& to);
// Writes PATH.tmp, fsyncs it, renames it to PATH and fsyncs the directory.
void write_file_durably(const std::string& path, std::string_view contents);

}  // namespace zt
