// Monitors (csv_monitor, tensorboard, wandb) and the communication logger.
#include <fmt/format.h>

#include "config/blocks.hpp"

namespace zt::config {

namespace {

MonitorConfig read_monitor(Block& top, const std::string& key) {
  Block b = top.child(key, UnknownKeys::Error);
  MonitorConfig m;
  m.enabled = b.boolean("enabled", m.enabled);
  m.output_path = b.text("output_path", m.output_path);
  m.job_name = b.text("job_name", m.job_name);
  b.finish();
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
                      "use csv_monitor or tensorboard)");
  return m;
}

CommsLoggerConfig read_comms_logger(Block& top) {
  Block b = top.child("comms_logger", UnknownKeys::Error);
  CommsLoggerConfig c;
  c.enabled = b.boolean("enabled", c.enabled);
  c.verbose = b.boolean("verbose", c.verbose);
  c.prof_all = b.boolean("prof_all", c.prof_all);
  b.unimplemented("debug", false);
  if (auto ops = b.raw("prof_ops")) {
    if (!ops->is_array()) b.fail("prof_ops", fmt::format("{} is not an array (expected a list of collective names)", show(*ops)));
    for (size_t i = 0; i < ops->size(); ++i) {
      if (!(*ops)[i].is_string())
        b.fail(fmt::format("prof_ops[{}]", i), fmt::format("{} is not a string (expected a collective name such as "
                                                            "\"all_reduce\")", show((*ops)[i])));
      c.prof_ops.push_back((*ops)[i].get<std::string>());
    }
  }
  b.finish();
  return c;
}

}  // namespace

void read_monitors(Block& top, Config& c) {
  c.csv_monitor = read_monitor(top, "csv_monitor");
  c.tensorboard = read_monitor(top, "tensorboard");
  c.wandb = read_wandb(top);
  c.comms_logger = read_comms_logger(top);
}

}  // namespace zt::config
