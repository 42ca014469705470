// Checked writes: a failed write names the file and the reason and leaves whole records; a file
// written atomically is all there or not at all, and a failure removes its temporary file.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "../data/temp_dir.hpp"
#include "core/checked_file.hpp"
#include "core/error.hpp"
#include "core/printable.hpp"
#include "core/quoted_bytes.hpp"

using namespace zt;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `body` in a child process whose files may grow to `limit` bytes, a write past it failing
// with EFBIG as on a full disk; returns the message of the zt::Error it threw ("" if none).
std::string with_file_size_limit(rlim_t limit, const std::string& dir, const std::function<void()>& body) {
  const std::string message_file = dir + "/message";
  const pid_t pid = fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit r{limit, limit};
    setrlimit(RLIMIT_FSIZE, &r);
    std::string message;
    try {
      body();
    } catch (const Error& e) {
      message = e.what();
    }
    r = {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &r);  // may fail (raising a hard limit); the message is short
    std::ofstream(message_file) << message;
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  return read(message_file);
}

}  // namespace

TEST_CASE("a record that does not fit is an error naming the file, and the file keeps whole records") {
  TempDir dir;
  const std::string path = dir.file("m.jsonl");
  const std::string record = "{\"step\":12345678,\"loss\":1.23456789}\n";  // 37 bytes
  const std::string message = with_file_size_limit(100, dir.path.string(), [&] {
    CheckedFile f(path, CheckedFile::Mode::Truncate, "training.metrics");
    for (int i = 0; i < 10; ++i) f.write(record);
  });
  CHECK(message == "training.metrics: cannot write '" + path + "': File too large");
  CHECK(read(path) == record + record);  // the third record got 26 of its 37 bytes: cut back
}

TEST_CASE("appending keeps what was there, and a write to /dev/full fails with its reason") {
  TempDir dir;
  const std::string path = dir.write("a.csv", "step,loss\n");
  {
    CheckedFile f(path, CheckedFile::Mode::Append, "csv_monitor");
    CHECK(f.size() == 10);
    f.write("4,5.5\n");
  }
  CHECK(read(path) == "step,loss\n4,5.5\n");

  CheckedFile full("/dev/full", CheckedFile::Mode::Truncate, "training.metrics");
  try {
    full.write("x\n");
    FAIL("a write to /dev/full succeeded");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "training.metrics: cannot write '/dev/full': No space left on device");
  }
}

TEST_CASE("a directory or a FIFO is not opened for writing") {
  TempDir dir;
  CHECK_THROWS_WITH(CheckedFile(dir.path.string(), CheckedFile::Mode::Truncate, "training.metrics"),
                    "training.metrics: '" + dir.path.string() +
                        "' is a directory (expected a file to write, or a character device such as /dev/null)");
  const std::string fifo = dir.file("fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(CheckedFile(fifo, CheckedFile::Mode::Append, "csv_monitor"),
                    Catch::Contains("' is a FIFO (expected a file to write"));
}

TEST_CASE("a file written atomically replaces the old one whole, or leaves it as it was") {
  TempDir dir;
  const std::string path = dir.write("model.safetensors", "old weights");
  write_file_atomically(path, "training.save_final", [](CheckedFile& f) { f.write("new weights"); });
  CHECK(read(path) == "new weights");

  const std::string big(4096, 'w');
  const std::string message = with_file_size_limit(1000, dir.path.string(), [&] {
    write_file_atomically(path, "training.save_final", [&](CheckedFile& f) { f.write(big); });
  });
  CHECK(message == "training.save_final: cannot write '" + path + ".tmp': File too large (nothing written to '" + path +
                       "'; the partial file was removed)");
  CHECK(read(path) == "new weights");
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_CASE("user text in messages has its control characters escaped") {
  CHECK(printable("plain text, ünïcode") == "plain text, ünïcode");
  CHECK(printable("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(printable(std::string("\x1b[31mred\x7f\0", 10)) == "\\x1b[31mred\\x7f\\x00");
  try {
    fail("{}: unknown key", "x\n[rank 0] info: forged");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "x\\n[rank 0] info: forged: unknown key");
  }
  // Bytes that are not UTF-8 (a lone continuation byte, a cut sequence, overlong, a surrogate).
  CHECK(printable("a\xff b\x80 c\xc3 d\xc0\xaf e\xed\xa0\x80 \xe2\x82\xac") ==
        "a\\xff b\\x80 c\\xc3 d\\xc0\\xaf e\\xed\\xa0\\x80 \xe2\x82\xac");
}

TEST_CASE("bytes from a file are quoted in printable ASCII, cut short") {
  CHECK(quoted_bytes("step_00000012\n") == "\"step_00000012\\n\"");
  CHECK(quoted_bytes("say \"hi\" \\ \xc3\xa9\x1b") == "\"say \\\"hi\\\" \\\\ \\xc3\\xa9\\x1b\"");
  CHECK(quoted_bytes(std::string(100, 'x'), 4) == "\"xxxx\"... (100 bytes)");
  const std::string message =
      "[json.exception.parse_error.101] parse error at line 1, column 3: syntax error while parsing value - "
      "invalid literal; last read: 'tr\xff'";
  CHECK(json_error_near(message, "[tr\xff]", 3) ==
        "parse error at line 1, column 3: syntax error while parsing value - invalid literal; near \"[tr\\xff]\"");
}
