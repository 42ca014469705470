#include "ckpt/dir_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/quoted_bytes.hpp"

namespace zt {

namespace {

constexpr std::string_view kFirstLine = "zerotrain directory lock";

int64_t now_seconds() { return int64_t(std::time(nullptr)); }

std::string first_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Clock ticks after boot at which process `pid` started (field 22 of /proc/PID/stat); 0 if unknown.
int64_t process_start_ticks(int64_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  const std::string stat{std::istreambuf_iterator<char>(in), {}};
  const size_t name_end = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (name_end == std::string::npos) return 0;
  std::string_view rest = std::string_view(stat).substr(name_end + 1);
  for (int field = 3; field <= 22; ++field) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const size_t end = std::min(rest.find(' '), rest.size());
    if (field == 22) {
      int64_t ticks = 0;
      auto [stop, ec] = std::from_chars(rest.data(), rest.data() + end, ticks);
      return ec == std::errc() && stop == rest.data() + end ? ticks : 0;
    }
    rest.remove_prefix(end);
  }
  return 0;
}

std::string utc_time(int64_t seconds) {
  const std::time_t t = std::time_t(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32] = {};
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, size_t(n));
    at += n;
    if (text.size() > (size_t(1) << 16)) break;  // not a lock this zerotrain wrote
  }
  return text;
}

bool same_file(int fd, const std::string& path) {
  struct stat open_file {}, named {};
  return ::fstat(fd, &open_file) == 0 && ::stat(path.c_str(), &named) == 0 && open_file.st_dev == named.st_dev &&
         open_file.st_ino == named.st_ino;
}

bool same_holder(const LockHolder& a, const LockHolder& b) {
  return a.host == b.host && a.boot_id == b.boot_id && a.pid == b.pid && a.process_start == b.process_start;
}

// The state letter of /proc/PID/stat ('R', 'S', 'Z', ...), or 0 if there is no such process.
char process_state(int64_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  const std::string stat{std::istreambuf_iterator<char>(in), {}};
  const size_t name_end = stat.rfind(')');
  return name_end != std::string::npos && name_end + 2 < stat.size() ? stat[name_end + 2] : 0;
}

}  // namespace

LockHolder this_process_holder() {
  LockHolder me;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) me.host = host;
  me.boot_id = first_line_of("/proc/sys/kernel/random/boot_id");
  me.pid = int64_t(::getpid());
  me.process_start = process_start_ticks(me.pid);
  me.started = me.refreshed = now_seconds();
  return me;
}

std::string lock_file_text(const LockHolder& h) {
  // Fixed-width refreshed: a refresh rewrites the file in place, never shorter or longer.
  return fmt::format("{}\nhost={}\nboot_id={}\npid={}\nprocess_start={}\nstarted={}\nrefreshed={:020d}\n", kFirstLine,
                     h.host, h.boot_id, h.pid, h.process_start, h.started, h.refreshed);
}

std::optional<LockHolder> parse_lock_file(std::string_view text) {
  LockHolder h;
  bool first = true, has_host = false, has_pid = false, has_started = false, has_refreshed = false;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (first) {
      if (line != kFirstLine) return std::nullopt;
      first = false;
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    auto number = [&](int64_t& out, bool& seen) {
      auto [stop, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
      seen = ec == std::errc() && stop == value.data() + value.size();
      return seen;
    };
    bool ok = true, ignored = false;
    if (key == "host") h.host = value, has_host = true;
    else if (key == "boot_id") h.boot_id = value;
    else if (key == "pid") ok = number(h.pid, has_pid);
    else if (key == "process_start") ok = number(h.process_start, ignored);
    else if (key == "started") ok = number(h.started, has_started);
    else if (key == "refreshed") ok = number(h.refreshed, has_refreshed);
    if (!ok) return std::nullopt;
  }
  if (first || !has_host || !has_pid || !has_started || !has_refreshed) return std::nullopt;
  return h;
}

LockVerdict judge_lock(std::string_view text, const LockHolder& me, double lease_seconds, bool flock_free) {
  LockVerdict v;
  v.holder = parse_lock_file(text);
  if (!v.holder) {
    v.stale = fmt::format("the file is not a lock zerotrain wrote: it reads {}", quoted_bytes(text));
    return v;
  }
  const LockHolder& h = *v.holder;
  if (h.host == me.host && h.boot_id == me.boot_id) {
    const bool exists = ::kill(pid_t(h.pid), 0) == 0 || errno == EPERM;
    const char state = exists ? process_state(h.pid) : 0;
    if (!exists) {
      v.stale = fmt::format("process {} no longer runs", h.pid);
    } else if (flock_free || state == 'Z' || state == 'X') {
      // A process on this machine that holds the lock holds its flock too, until its last moment.
      v.stale = fmt::format("process {} has ended and no longer holds it", h.pid);
    } else if (h.process_start && process_start_ticks(h.pid) != h.process_start) {
      v.stale = fmt::format("process {} ended; the pid now belongs to another process", h.pid);
    } else {
      v.stands = "it is running on this machine";
    }
    return v;
  }
  // flock(2) may not reach across machines (NFS mounted without locks): the lease decides.
  const double age = double(now_seconds() - h.refreshed);
  if (age > lease_seconds) {
    v.stale = fmt::format("another host's lock, not refreshed for {:.0f} s (more than the lease of {:.0f} s)", age,
                          lease_seconds);
  } else {
    v.stands = fmt::format("it refreshed the lock {:.0f} s ago; a lock of another host not refreshed for {:.0f} s is "
                           "taken over, or remove it by hand once that job is gone",
                           std::max(0.0, age), lease_seconds);
  }
  return v;
}

std::string describe_holder(const LockHolder& h) {
  return fmt::format("pid {} on host {}, started {}", h.pid, h.host, utc_time(h.started));
}

DirLock::DirLock(std::string dir, std::string key, DirLockTiming timing)
    : dir_(std::move(dir)), key_(std::move(key)), path_((std::filesystem::path(dir_) / kDirLockFile).string()),
      timing_(timing), me_(this_process_holder()) {
  take();
  refresher_ = std::thread([this] { refresh_until_released(); });
}

DirLock::~DirLock() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
  }
  wake_.notify_all();
  if (refresher_.joinable()) refresher_.join();
  if (file_is_ours()) ::unlink(path_.c_str());  // while the flock is held: no one took it in between
  ::close(fd_);
}

void DirLock::take() {
  const std::string refused = fmt::format("{}: {} is in use by another job", key_, dir_);
  const std::string advice = "two jobs writing one directory would overwrite each other's files: give this job "
                             "another directory, or end the other job";
  // A job started again right after its previous run died may find that run's last process still
  // exiting, holding the flock for a moment: it waits a little before it refuses.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(timing_.busy_wait_seconds);
  for (int replaced = 0; replaced < 8;) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) fail("{}: cannot open the lock {}: {}", key_, path_, std::strerror(errno));
    bool flock_free = true;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        const std::string text = read_all(fd);
        ::close(fd);
        if (std::chrono::steady_clock::now() < give_up) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
        if (const auto holder = parse_lock_file(text))
          fail("{}: {} (it is running, and holds {}); {}", refused, describe_holder(*holder), path_, advice);
        fail("{}: its lock {} is held by a process that wrote {}; {}", refused, path_, quoted_bytes(text), advice);
      }
      // No flock on this file system (some network file systems): the file's contents decide.
      if (err != ENOLCK && err != EOPNOTSUPP && err != EINVAL) {
        ::close(fd);
        fail("{}: cannot lock {}: {}", key_, path_, std::strerror(err));
      }
      flock_free = false;
    }
    if (!same_file(fd, path_)) {  // removed by a holder that released it as we opened it: again
      ::close(fd);
      ++replaced;
      continue;
    }
    claim(fd, flock_free, refused, advice);
    return;
  }
  fail("{}: cannot take the lock {}: it was replaced again and again while this job tried", key_, path_);
}

// The lock file is open (and flocked where the file system can): what an earlier holder wrote
// decides whether it may be taken over; then it names this job.
void DirLock::claim(int fd, bool flock_free, const std::string& refused, const std::string& advice) {
  const std::string text = read_all(fd);
  if (!text.empty()) {
    const LockVerdict v = judge_lock(text, me_, timing_.lease_seconds, flock_free);
    if (!v.stands.empty()) {
      ::close(fd);
      fail("{}: {} ({}; its lock is {}); {}", refused, describe_holder(*v.holder), v.stands, path_, advice);
    }
    if (v.holder)
      spdlog::warn("{}: taking over the lock {} of a job that is gone ({}): {}", key_, path_,
                   describe_holder(*v.holder), v.stale);
    else
      spdlog::warn("{}: taking over the lock {}: {}", key_, path_, v.stale);
  }
  const std::string mine = lock_file_text(me_);
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) != ssize_t(mine.size()) ||
      ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("{}: cannot write the lock {}: {}", key_, path_, std::strerror(err));
  }
  fd_ = fd;
}

bool DirLock::file_is_ours() const {
  if (fd_ < 0 || !same_file(fd_, path_)) return false;
  const auto holder = parse_lock_file(read_all(fd_));
  return holder && same_holder(*holder, me_);
}

void DirLock::refresh_until_released() {
  const auto period = std::chrono::duration<double>(timing_.refresh_seconds);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return released_; })) {
    if (!file_is_ours()) {
      spdlog::warn("{}: the lock {} was taken over by another job while this one ran; this job no longer holds {}",
                   key_, path_, dir_);
      return;
    }
    me_.refreshed = now_seconds();
    const std::string text = lock_file_text(me_);
    if (::pwrite(fd_, text.data(), text.size(), 0) != ssize_t(text.size()))
      spdlog::warn("{}: cannot refresh the lock {}: {}", key_, path_, std::strerror(errno));
  }
}

}  // namespace zt
