#pragma once
// Runs the zerotrain binary (through scripts/launch.sh for several ranks) and reads what it wrote.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace zt::test {

struct Metrics {
  nlohmann::json setup, summary;
  std::vector<nlohmann::json> steps, evals;
  nlohmann::json last;  // the file's last record
};

inline Metrics read_metrics(const std::string& path) {
  Metrics m;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "setup") m.setup = j;
    else if (j["event"] == "step") m.steps.push_back(j);
    else if (j["event"] == "eval") m.evals.push_back(j);
    else if (j["event"] == "summary") m.summary = j;
    m.last = j;
  }
  return m;
}

// Exit status of a shell command (its stdout and stderr go to log).
inline int run_command(const std::string& command, const std::string& log) {
  int status = std::system((command + " >" + log + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `command` with its output in `log` and checks that it exits with `status` (the log is shown
// when it does not). Returns the log.
inline std::string run_status(const std::string& command, const std::string& log, int status) {
  const int code = run_command(command, log);
  const std::string out = read_file(log);
  INFO(out);
  CHECK(code == status);
  return out;
}

// How many times `what` stands in `text`, overlapping ones included.
inline size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Runs `command` with its output in `log`; the run must succeed (the log is shown when it does
// not). Returns the log.
inline std::string run_ok(const std::string& command, const std::string& log) {
  const int code = run_command(command, log);
  const std::string out = read_file(log);
  INFO(out);
  REQUIRE(code == 0);
  return out;
}

inline std::string fresh_dir(const std::string& name) {
  auto dir = std::filesystem::path(ZT_BINARY_DIR) / "test-runs" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// An llm.c token file (header of 256 int32: magic 20240520, version 1, count; uint16 tokens) of
// `count` tokens below `vocab`: token i is (i * 7 + i / 13 + offset) % vocab.
inline void write_token_file(const std::string& path, int count, int vocab, int offset = 0) {
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = count;
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) tokens[size_t(i)] = uint16_t((i * 7 + i / 13 + offset) % vocab);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header.data()), std::streamsize(header.size() * 4));
  out.write(reinterpret_cast<const char*>(tokens.data()), std::streamsize(tokens.size() * 2));
}

inline std::string launch(int ranks) {
  return std::string(ZT_SOURCE_DIR) + "/scripts/launch.sh -n " + std::to_string(ranks) + " -- " + ZT_ZEROTRAIN;
}

// A command running in the background, in a process group of its own (as a terminal runs a
// foreground job), with its stdout and stderr going to a log file.
class Background {
public:
  Background(const std::string& command, const std::string& log) {
    const std::string script = "exec " + command + " >" + log + " 2>&1";
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      sigset_t none;  // the signals under test arrive as they would from a terminal
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int sig : {SIGINT, SIGTERM, SIGUSR1}) std::signal(sig, SIG_DFL);
      execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid_, pid_);  // on both sides: the group exists before the parent signals it
  }
  ~Background() {
    if (pid_ > 0) {  // a test that failed early: leave nothing behind
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const { kill(pid_, sig); }
  void signal_group(int sig) const { kill(-pid_, sig); }  // what Ctrl-C on a terminal does

  // The exit status as run_command reports it, or -1 when the command is still running after
  // `seconds` (it is then killed).
  int wait(double seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

private:
  pid_t pid_ = -1;
};

// Waits up to `seconds` for `text` to appear in the file at `path`.
inline bool wait_for_text(const std::string& path, const std::string& text, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (read_file(path).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Processes (other than this one) whose command line mentions `text`.
inline std::vector<std::string> processes_mentioning(const std::string& text) {
  std::vector<std::string> found;
  for (auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || name == std::to_string(getpid())) continue;
    std::string cmdline = read_file(entry.path().string() + "/cmdline");
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (cmdline.find(text) != std::string::npos) found.push_back(name + ": " + cmdline);
  }
  return found;
}

}  // namespace zt::test
