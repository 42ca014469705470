#pragma once
// A lock on a directory that one job writes alone (training.checkpoint_dir, an offload nvme_path),
// so that two jobs given the same directory never overwrite each other's files.
//
// DIR/zerotrain.lock names the holder (host, boot id, pid, the process's start, when it started
// and when it last refreshed the file) and is held with flock(2) while the job runs; the file is
// removed at a clean end. A second job is refused, naming the directory and the holder. What a job
// that died left behind is taken over with a warning:
// - from this host (same host name and boot id): when no process holds its flock (the holder has
//   ended, even if it is not yet reaped) or, without flock, when the holder's process is gone (no
//   such pid, a zombie, or a pid now used by a process that started later);
// - from another host: when the holder has not refreshed the file for kLockLeaseSeconds (a
//   running holder refreshes it every kLockRefreshSeconds, from a thread of its own).
// flock(2) decides alone where it works (a local file system, NFSv4); the file's contents decide
// where it does not, or where the holder is on another host.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace zt {

constexpr std::string_view kDirLockFile = "zerotrain.lock";
constexpr double kLockLeaseSeconds = 300;   // another host's lock not refreshed for this long is stale
constexpr double kLockRefreshSeconds = 30;  // how often a running holder refreshes its lock

struct LockHolder {
  std::string host, boot_id;
  int64_t pid = 0;
  int64_t process_start = 0;  // clock ticks after boot (/proc/PID/stat); 0: unknown
  int64_t started = 0;        // seconds since the epoch
  int64_t refreshed = 0;      // seconds since the epoch
};

// This process, as a lock names it.
LockHolder this_process_holder();
// The lock file's text (a fixed length: a refresh rewrites it in place) and back; nullopt for text
// that is not a lock of this format.
std::string lock_file_text(const LockHolder& holder);
std::optional<LockHolder> parse_lock_file(std::string_view text);
// What a lock file's text means to `me`, who wants the lock: why it still stands (refused), or
// why it is stale (taken over with a warning). flock_free: `me` could flock the file, so no
// process on this machine holds it.
struct LockVerdict {
  std::optional<LockHolder> holder;  // nullopt: not a lock file
  std::string stands, stale;         // exactly one is set
};
LockVerdict judge_lock(std::string_view text, const LockHolder& me, double lease_seconds, bool flock_free);
// "pid 123 on host node7, started 2025-03-01 12:00:00 UTC"
std::string describe_holder(const LockHolder& holder);

struct DirLockTiming {
  double lease_seconds = kLockLeaseSeconds;
  double refresh_seconds = kLockRefreshSeconds;
  double busy_wait_seconds = 3;  // how long a flock held by another process is waited for
};

class DirLock {
public:
  // Takes the lock of the directory `dir` (it exists); `key` names the setting in messages
  // ("training.checkpoint_dir"). Throws zt::Error naming the directory and the holder when
  // another job holds it; logs a warning when it takes over a stale one.
  DirLock(std::string dir, std::string key, DirLockTiming timing = {});
  ~DirLock();  // stops refreshing and removes the file
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  const std::string& path() const { return path_; }

private:
  void take();
  void claim(int fd, bool flock_free, const std::string& refused, const std::string& advice);
  void refresh_until_released();
  bool file_is_ours() const;

  std::string dir_, key_, path_;
  DirLockTiming timing_;
  LockHolder me_;
  int fd_ = -1;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool released_ = false;
  std::thread refresher_;
};

}  // namespace zt
