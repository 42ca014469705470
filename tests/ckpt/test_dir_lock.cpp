// The lock on a directory one job writes alone (ckpt/dir_lock.hpp): a second holder is refused,
// naming the directory and the holder; a lock a dead job left is taken over with a warning, on
// this host when its process is gone and from another host when its lease ran out; a running
// holder refreshes it; a released lock leaves no file.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "../data/temp_dir.hpp"
#include "ckpt_test_support.hpp"
#include "ckpt/dir_lock.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// The pid of a process that has ended and been reaped.
pid_t ended_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a second job is refused naming the directory and the holder; release removes the lock", "[ckpt][lock]") {
  TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  fs::create_directories(dir);
  const std::string lock_path = dir + "/zerotrain.lock";
  const LockHolder me = this_process_holder();
  {
    DirLock first(dir, "training.checkpoint_dir");
    CHECK(first.path() == lock_path);
    const auto written = parse_lock_file(slurp(lock_path));
    REQUIRE(written);
    CHECK(written->pid == me.pid);
    CHECK(written->host == me.host);
    // Another open file description of the same file: as another process's flock would be.
    const std::string e = error_of([&] { DirLock second(dir, "training.checkpoint_dir", {.busy_wait_seconds = 0}); });
    INFO(e);
    CHECK(e == "training.checkpoint_dir: " + dir + " is in use by another job: " + describe_holder(*written) +
                   " (it is running, and holds " + lock_path +
                   "); two jobs writing one directory would overwrite each other's files: give this job another "
                   "directory, or end the other job");
    CHECK(contains(e, "pid " + std::to_string(me.pid) + " on host " + me.host + ", started "));
    CHECK(fs::exists(lock_path));  // the refused one removed nothing
  }
  CHECK_FALSE(fs::exists(lock_path));
  DirLock again(dir, "training.checkpoint_dir");  // free once released
  CHECK(fs::exists(lock_path));
}

TEST_CASE("a lock of this host: flock decides; without flock, whether its process runs", "[ckpt][lock]") {
  const LockHolder me = this_process_holder();
  LockHolder other = me;
  other.pid = getppid();  // a process that runs
  other.process_start = 0;
  const std::string text = lock_file_text(other);
  // On a file system without flock(2) the contents alone decide: its process runs.
  const LockVerdict stands = judge_lock(text, me, kLockLeaseSeconds, /*flock_free=*/false);
  CHECK(stands.stands == "it is running on this machine");
  CHECK(stands.stale.empty());
  // Where this process could take the flock, no process of this machine holds the lock: the
  // holder has ended, even if its pid still shows (a zombie not yet reaped).
  const LockVerdict free = judge_lock(text, me, kLockLeaseSeconds, /*flock_free=*/true);
  CHECK(free.stands.empty());
  CHECK(free.stale == "process " + std::to_string(other.pid) + " has ended and no longer holds it");
  // Without flock, a pid used by a process that started at another time is not the holder's.
  other.process_start = 12345;
  CHECK(judge_lock(lock_file_text(other), me, kLockLeaseSeconds, false).stale ==
        "process " + std::to_string(other.pid) + " ended; the pid now belongs to another process");
}

TEST_CASE("a flock about to be released is waited for: a job started again as its previous run ends",
          "[ckpt][lock]") {
  TempDir tmp;
  const std::string dir = tmp.path.string();
  auto ending = std::make_unique<DirLock>(dir, "training.checkpoint_dir");
  std::thread end_soon([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ending.reset();
  });
  const std::string e = error_of([&] { DirLock next(dir, "training.checkpoint_dir", {.busy_wait_seconds = 3}); });
  end_soon.join();
  CHECK(e == "");
}

TEST_CASE("a stale lock is taken over with a warning", "[ckpt][lock]") {
  TempDir tmp;
  const std::string dir = tmp.path.string();
  const std::string lock_path = dir + "/zerotrain.lock";
  LockHolder old = this_process_holder();
  CapturedLog log;

  SECTION("this host, the process gone") {
    old.pid = ended_pid();
    old.process_start = 0;
    put(lock_path, lock_file_text(old));
    DirLock lock(dir, "training.checkpoint_dir");
    INFO(log.text.str());
    CHECK(contains(log.text.str(), "training.checkpoint_dir: taking over the lock " + lock_path +
                                       " of a job that is gone (pid " + std::to_string(old.pid) + " on host " +
                                       old.host));
    CHECK(contains(log.text.str(), "process " + std::to_string(old.pid) + " no longer runs"));
    CHECK(parse_lock_file(slurp(lock_path))->pid == getpid());
  }
  SECTION("this host, the process ended but not yet reaped: no one holds the flock") {
    old.pid = getppid();
    put(lock_path, lock_file_text(old));
    DirLock lock(dir, "training.checkpoint_dir");
    CHECK(contains(log.text.str(), "process " + std::to_string(old.pid) + " has ended and no longer holds it"));
  }
  SECTION("another host, not refreshed for longer than the lease") {
    old.host = "node-elsewhere";
    old.boot_id = "another-boot";
    old.refreshed = old.started = int64_t(time(nullptr)) - int64_t(kLockLeaseSeconds) - 5;
    put(lock_path, lock_file_text(old));
    DirLock lock(dir, "training.checkpoint_dir");
    INFO(log.text.str());
    CHECK(
        contains(log.text.str(), "of a job that is gone (pid " + std::to_string(old.pid) + " on host node-elsewhere"));
    CHECK(contains(log.text.str(), "another host's lock, not refreshed for"));
  }
  SECTION("not a lock at all: taken over, its bytes shown escaped") {
    put(lock_path, std::string("\xff\x1b[2J\n", 6));
    DirLock lock(dir, "training.checkpoint_dir");
    CHECK(contains(log.text.str(), "the file is not a lock zerotrain wrote: it reads \"\\xff\\x1b[2J\\n\""));
  }
}

TEST_CASE("another host's lock within its lease is refused, saying when it would be stale", "[ckpt][lock]") {
  TempDir tmp;
  const std::string dir = tmp.path.string();
  LockHolder other = this_process_holder();
  other.host = "node-elsewhere";
  other.boot_id = "another-boot";
  other.refreshed = int64_t(time(nullptr)) - 20;
  put(dir + "/zerotrain.lock", lock_file_text(other));
  const std::string e = error_of([&] { DirLock lock(dir, "training.checkpoint_dir"); });
  INFO(e);
  CHECK(contains(e, "is in use by another job: pid " + std::to_string(other.pid) + " on host node-elsewhere"));
  CHECK(contains(e, "not refreshed for 300 s is taken over"));
}

TEST_CASE("a running holder refreshes its lock in place", "[ckpt][lock]") {
  TempDir tmp;
  const std::string dir = tmp.path.string();
  DirLock lock(dir, "training.checkpoint_dir", {.lease_seconds = 10, .refresh_seconds = 0.1});
  const LockHolder before = *parse_lock_file(slurp(lock.path()));
  const size_t size = slurp(lock.path()).size();
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  const std::string text = slurp(lock.path());
  const auto after = parse_lock_file(text);
  REQUIRE(after);
  CHECK(after->refreshed > before.refreshed);
  CHECK(after->started == before.started);
  CHECK(text.size() == size);
}

TEST_CASE("lock files: the text round-trips; other text is not a lock", "[ckpt][lock]") {
  LockHolder h{"node7", "b00t", 4242, 987654, 1700000000, 1700000123};
  const auto back = parse_lock_file(lock_file_text(h));
  REQUIRE(back);
  CHECK(back->host == "node7");
  CHECK(back->boot_id == "b00t");
  CHECK(back->pid == 4242);
  CHECK(back->process_start == 987654);
  CHECK(back->started == 1700000000);
  CHECK(back->refreshed == 1700000123);
  CHECK(describe_holder(h) == "pid 4242 on host node7, started 2023-11-14 22:13:20 UTC");
  CHECK_FALSE(parse_lock_file(""));
  CHECK_FALSE(parse_lock_file("zerotrain directory lock\nhost=a\n"));
  CHECK_FALSE(parse_lock_file("zerotrain directory lock\nhost=a\npid=x\nstarted=1\nrefreshed=1\n"));
  CHECK_FALSE(parse_lock_file("something else\nhost=a\npid=1\nstarted=1\nrefreshed=1\n"));
}
