#include "plot/run_curves.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace zt::plot {

namespace {

using nlohmann::json;

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string parse_detail(const std::string& what) {
  auto end = what.find("] ");
  return end == std::string::npos ? what : what.substr(end + 2);
}

class RecordReader {
public:
  RecordReader(const std::string& path, size_t line, const json& record) : path_(path), line_(line), r_(record) {}

  // A number, or NaN where the record has null (a value that was not finite).
  double number(const char* key) const {
    auto it = r_.find(key);
    if (it == r_.end()) fail("{}:{}: {} record without \"{}\"", path_, line_, event(), key);
    if (it->is_null()) return NAN;
    if (!it->is_number()) fail("{}:{}: \"{}\" is {}, expected a number", path_, line_, key, it->dump());
    return it->get<double>();
  }
  std::string event() const { return r_.at("event").get<std::string>(); }
  bool has(const char* key) const { return r_.contains(key); }

private:
  const std::string& path_;
  size_t line_;
  const json& r_;
};

}  // namespace

RunCurves read_run_curves(const std::string& path) {
  if (std::filesystem::is_directory(path)) fail("{}: is a directory, expected a metrics file (JSON Lines)", path);
  std::ifstream in(path);
  if (!in) fail("{}: cannot open: {}", path, std::strerror(errno));
  RunCurves c;
  c.path = path;
  c.label = std::filesystem::path(path).stem().string();
  std::string text;
  for (size_t line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json record;
    try {
      record = json::parse(text);
    } catch (const json::parse_error& e) {
      fail("{}:{}: not a JSON record ({})", path, line, parse_detail(e.what()));
    }
    if (!record.is_object() || !record.contains("event") || !record["event"].is_string())
      fail("{}:{}: expected a metrics record {{\"event\": ...}}, got {}", path, line, text.substr(0, 80));
    RecordReader r(path, line, record);
    const std::string event = r.event();
    if (event == "step") {
      const double step = r.number("step");
      c.loss.push_back({step, r.number("loss")});
      c.lr.push_back({step, r.number("lr")});
      if (r.has("grad_norm")) c.grad_norm.push_back({step, r.number("grad_norm")});
      c.tokens_per_s.push_back({step, r.number("tokens_per_s")});
      if (r.has("rewards/accuracies")) {
        c.accuracies.push_back({step, r.number("rewards/accuracies")});
        c.margins.push_back({step, r.number("rewards/margins")});
      }
      if (r.has("log_odds_ratio")) {
        c.nll.push_back({step, r.number("nll_loss")});
        c.log_odds.push_back({step, r.number("log_odds_ratio")});
      }
    } else if (event == "eval") {
      const double step = r.number("step");
      c.val_loss.push_back({step, r.number("val_loss")});
      if (r.has("rewards/accuracies")) {
        c.val_accuracies.push_back({step, r.number("rewards/accuracies")});
        c.val_margins.push_back({step, r.number("rewards/margins")});
      }
      if (r.has("log_odds_ratio")) {
        c.val_nll.push_back({step, r.number("nll_loss")});
        c.val_log_odds.push_back({step, r.number("log_odds_ratio")});
      }
    }
  }
  if (in.bad()) fail("{}: read error: {}", path, std::strerror(errno));
  if (c.loss.empty()) fail("{}: no step records (expected a metrics file written by training.metrics)", path);
  return c;
}

}  // namespace zt::plot
