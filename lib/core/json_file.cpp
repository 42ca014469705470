#include "core/json_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "core/file_type.hpp"
#include "core/printable.hpp"

namespace zt {

namespace {

// "SOURCE: PATH: WHAT", as the config's diagnostics word errors.
[[noreturn]] void fail_at(const std::string& source, const std::string& path, const std::string& what) {
  std::string m;
  if (!source.empty()) m += source + ": ";
  if (!path.empty()) m += path + ": ";
  throw Error(printable(m + what));
}

// Where the parser is: one frame per open object or array, enough to name the path of a key.
class DuplicateKeyGuard {
public:
  explicit DuplicateKeyGuard(const std::string& source) : source_(source) {}

  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (frames_.size() >= size_t(kMaxJsonDepth))
          fail_at(source_, "", fmt::format("objects and arrays nested deeper than {} levels (expected a "
                                                    "DeepSpeed config, which needs a handful)",
                                                    kMaxJsonDepth));
        frames_.push_back({event == E::object_start, {}, {}, 0});
        break;
      case E::key: {
        Frame& f = frames_.back();
        std::string key = parsed.get<std::string>();
        if (!f.keys.insert(key).second) fail_at(source_, join_path(path(), key), "duplicate key");
        f.key = key;
        break;
      }
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        element_done();
        break;
      case E::value: element_done(); break;
    }
    return true;
  }

  // Path of the value being read (the last key or array element opened).
  std::string value_path() const {
    if (frames_.empty()) return "";
    const Frame& f = frames_.back();
    return f.object ? join_path(path(), f.key) : path() + "[" + std::to_string(f.index) + "]";
  }

private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;  // object: the key being read
    size_t index;     // array: the element being read
  };

  // Path of the container at the top of the stack.
  std::string path() const {
    std::string p;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      p = f.object ? join_path(p, f.key) : p + "[" + std::to_string(f.index) + "]";
    }
    return p;
  }

  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }

  std::string source_;
  std::vector<Frame> frames_;
};

}  // namespace

nlohmann::json parse_json(const std::string& text, const std::string& source) {
  DuplicateKeyGuard guard(source);
  try {
    return nlohmann::json::parse(text, std::ref(guard), /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    // what() starts with "[json.exception.parse_error.101] "; keep the part a person needs.
    std::string what = e.what();
    if (auto pos = what.find("] "); what.rfind("[json.exception", 0) == 0 && pos != std::string::npos)
      what = what.substr(pos + 2);
    fail_at(source, "", "invalid JSON: " + what);
  } catch (const nlohmann::json::out_of_range&) {
    // A number literal too large for a double (1e400): the parser says which text, not where.
    fail_at(source, guard.value_path(), "number out of range (beyond the largest double, about 1.8e308)");
  }
}

std::string read_text_file(const std::string& path) {
  std::string why;
  int error = 0;
  const int fd = open_regular_file(path, why, error);  // never blocks on a FIFO
  if (fd < 0) fail("{}: cannot open the file for reading: {}", path, why);
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail("{}: cannot read the file: {}", path, std::strerror(err));
    }
    if (n == 0) break;
    text.append(buffer, size_t(n));
  }
  ::close(fd);
  return text;
}

nlohmann::json read_json_file(const std::string& path) { return parse_json(read_text_file(path), path); }

std::string show(const nlohmann::json& value) {
  std::string s;
  // 5e8 arrives as a float; print integral floats the way users write integers.
  if (value.is_number_float() && std::isfinite(value.get<double>()) &&
      std::floor(value.get<double>()) == value.get<double>() && std::fabs(value.get<double>()) < 1e18)
    s = std::to_string(static_cast<long long>(value.get<double>()));
  else
    s = value.dump();
  constexpr size_t limit = 80;
  if (s.size() > limit) s = s.substr(0, limit - 3) + "...";
  return s;
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

}  // namespace zt
