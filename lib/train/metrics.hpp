#pragma once
// The metrics file (DESIGN.md contract): JSON Lines written by rank 0, floats with 9 significant
// digits so fp32 values round-trip and runs can be compared bit for bit.
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/ledger.hpp"

namespace zt {

struct RankMemory {
  int rank = 0;
  uint64_t params = 0, grads = 0, optimizer = 0, buffers = 0, offload = 0;
};

struct SetupRecord {
  int world_size = 1;
  int stage = 0;
  std::string dtype;
  uint64_t num_params = 0, padded_params = 0;
  std::vector<RankMemory> memory;
};

// Where a step's wall time went, as seen by rank 0 (wall_clock_breakdown).
struct StepBreakdown {
  double forward = 0, backward = 0, step = 0;
  double reduce_wait = 0, gather_wait = 0;  // compute thread blocked on communication
  double comm_busy = 0;                      // time collectives were in flight
};

struct StepRecord {
  int64_t step = 0;
  double loss = 0, lr = 0, grad_norm = 0, loss_scale = 1;
  bool skipped = false;
  int64_t tokens = 0;
  double step_ms = 0, tokens_per_s = 0, mfu = 0;
  CommStats comm;  // bytes rank 0 sent in this step
  std::optional<StepBreakdown> time;  // written as "time_ms" when wall_clock_breakdown is on
};

class MetricsWriter {
public:
  MetricsWriter() = default;  // writes nothing (ranks other than 0, or no metrics path)
  // append: a resumed run continues the file of the run it resumes (a new setup line, then its steps).
  explicit MetricsWriter(const std::string& path, bool append = false);
  void setup(const SetupRecord& r);
  void step(const StepRecord& r);
  void eval(int64_t step, double val_loss);

private:
  void write(const std::string& line);
  std::ofstream out_;
};

std::string format_float(double x);  // 9 significant digits; null for nan/inf (valid JSON)

}  // namespace zt
