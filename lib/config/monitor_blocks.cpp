// Monitors (csv_monitor, tensorboard, wandb) and the communication logger.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "config/blocks.hpp"
#include "config/edit_distance.hpp"

namespace zt::config {

namespace {

MonitorConfig read_monitor(Block& top, const std::string& key) {
  Block b = top.child(key, UnknownKeys::Error);
  MonitorConfig m;
  m.enabled = b.boolean("enabled", m.enabled);
  m.output_path = b.file_path("output_path", m.output_path);
  m.job_name = b.text("job_name", m.job_name);
  b.finish();
  // The files go to <output_path>/<job_name>: a job_name must not lead anywhere else.
  const std::string& j = m.job_name;
  if (j.empty() || j == "." || j == ".." || j.find('/') != std::string::npos || j.find('\0') != std::string::npos)
    b.fail("job_name", fmt::format("{} is not a directory name (expected one path component: not empty, not \".\" "
                                   "or \"..\", no '/')",
                                   show(j)));
  return m;
}

MonitorConfig read_wandb(Block& top) {
  Block b = top.child("wandb", UnknownKeys::Error);
  MonitorConfig m;
  m.enabled = b.boolean("enabled", m.enabled);
  // Accepted so that wandb blocks load; nothing is sent anywhere.
  b.text("group", "");
  b.text("team", "");
  b.text("project", "");
  b.finish();
  if (m.enabled)
    b.warn("enabled", "true has no effect (zerotrain runs offline and does not log to Weights & Biases; "
                      "use csv_monitor, tensorboard or training.metrics)");
  return m;
}

// DeepSpeed's comms logger names an op by the deepspeed.comm function that issued it; each maps to
// the collective kind zerotrain counts (CommOp in comm/communicator.hpp).
const std::map<std::string, std::string>& collective_of() {
  static const std::map<std::string, std::string> names = {
      {"all_reduce", "all_reduce"},
      {"all_reduce_coalesced", "all_reduce"},
      {"inference_all_reduce", "all_reduce"},
      {"reduce_scatter", "reduce_scatter"},
      {"reduce_scatter_tensor", "reduce_scatter"},
      {"all_gather", "all_gather"},
      {"all_gather_into_tensor", "all_gather"},
      {"broadcast", "broadcast"},
      {"barrier", "barrier"},
      {"monitored_barrier", "barrier"},
      {"all_to_all", "all_to_all"},
      {"all_to_all_single", "all_to_all"},
  };
  return names;
}

// Ops DeepSpeed can profile that zerotrain never issues: a DeepSpeed config naming them must still
// load, but there is nothing to report.
bool never_issued(const std::string& name) {
  static const std::vector<std::string> names = {"send", "recv", "isend", "irecv",
                                                 "gather", "scatter", "reduce", "all_gather_object",
                                                 "broadcast_object_list"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The collective kind `name` profiles ("" for an op zerotrain never issues, with a warning);
// anything else is an error naming prof_ops[i].
std::string prof_op(const Block& b, size_t i, const std::string& name) {
  const std::string key = fmt::format("prof_ops[{}]", i);
  auto it = collective_of().find(name);
  if (it != collective_of().end()) return it->second;
  if (never_issued(name)) {
    b.warn(key, fmt::format("\"{}\" has no effect (zerotrain never issues that op)", name));
    return "";
  }
  std::vector<std::string> known;
  for (const auto& [ds_name, kind] : collective_of()) known.push_back(ds_name);
  auto guess = closest_match(name, known);
  b.fail(key, fmt::format("\"{}\" is not a collective{} (expected all_reduce, reduce_scatter, all_gather, broadcast, "
                          "barrier or all_to_all, or a DeepSpeed name such as reduce_scatter_tensor or "
                          "all_gather_into_tensor)",
                          name, guess ? fmt::format("; did you mean {}?", *guess) : ""));
}

CommsLoggerConfig read_comms_logger(Block& top) {
  Block b = top.child("comms_logger", UnknownKeys::Error);
  CommsLoggerConfig c;
  c.enabled = b.boolean("enabled", c.enabled);
  c.verbose = b.boolean("verbose", c.verbose);
  c.prof_all = b.boolean("prof_all", c.prof_all);
  b.unimplemented("debug", false);
  if (auto ops = b.raw("prof_ops")) {
    if (!ops->is_array())
      b.fail("prof_ops", fmt::format("{} is not an array (expected a list of collective names)", show(*ops)));
    for (size_t i = 0; i < ops->size(); ++i) {
      if (!(*ops)[i].is_string())
        b.fail(fmt::format("prof_ops[{}]", i), fmt::format("{} is not a string (expected a collective name such as "
                                                            "\"all_reduce\")", show((*ops)[i])));
      // Kept as zerotrain's kind names, once each, so the summary can match them directly.
      std::string kind = prof_op(b, i, (*ops)[i].get<std::string>());
      if (!kind.empty() && std::find(c.prof_ops.begin(), c.prof_ops.end(), kind) == c.prof_ops.end())
        c.prof_ops.push_back(kind);
    }
  }
  b.finish();
  return c;
}

}  // namespace

void read_monitors(Block& top, Config& c) {
  c.csv_monitor = read_monitor(top, "csv_monitor");  // written by metrics/csv_monitor
  c.tensorboard = read_monitor(top, "tensorboard");  // written by metrics/tensorboard_monitor
  c.wandb = read_wandb(top);
  c.comms_logger = read_comms_logger(top);
}

}  // namespace zt::config
