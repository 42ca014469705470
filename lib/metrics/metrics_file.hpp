#pragma once
// The metrics file (DESIGN.md contract): JSON Lines written by rank 0, floats with 9 significant
// digits so fp32 values round-trip and runs can be compared bit for bit.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/checked_file.hpp"
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
  double offload_wait = 0, offload_io = 0;   // the offloaded optimizer step waiting; its file's I/O running
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

// One rank's peaks in bytes: the ledger's per category (model states in device memory, what is
// offloaded to host memory or files, activations, transient buffers in use and kept for reuse),
// and the process's resident set as the operating system counts it.
struct RankPeakMemory {
  int rank = 0;
  uint64_t params = 0, grads = 0, optimizer = 0, offload = 0, activations = 0, buffers = 0, cached = 0;
  uint64_t files = 0;     // the part of offload held in files (NVMe), not in memory
  uint64_t resident = 0;  // VmHWM of /proc/self/status
  // (name, bytes) in the order of the summary record and table.
  std::array<std::pair<const char*, uint64_t>, 9> fields() const {
    return {{{"params", params}, {"grads", grads}, {"optimizer", optimizer}, {"offload", offload},
             {"files", files}, {"activations", activations}, {"buffers", buffers}, {"cached", cached},
             {"resident", resident}}};
  }
};

// The last record of a run (DESIGN.md, "Metrics: the end of a run").
struct SummaryRecord {
  int64_t steps = 0;  // optimizer steps taken (step records written)
  bool interrupted = false;  // stopped early by a stop signal
  int64_t tokens = 0;  // trained on, all ranks: the sum of the step records' tokens
  double wall_s = 0, tokens_per_s = 0, mfu = 0;
  double loss = NAN, val_loss = NAN;  // the last step's loss, the last evaluation's
  std::vector<RankPeakMemory> memory_peak;
  CommStats comm;  // rank 0's collectives over the training steps
  double comm_in_flight_s = 0;  // reduce-scatters and all-gathers running (what can overlap compute)
  double comm_waited_s = 0;     // compute blocked waiting for them
};

// Every line is written whole and flushed to the file at once. A line that cannot be written (a
// full disk) is reported to OutputFailure, and the file ends with the last whole line.
class MetricsWriter {
public:
  MetricsWriter() = default;  // writes nothing (ranks other than 0, or no metrics path)
  // Throws zt::Error naming training.metrics. append: a resumed run continues the file of the run it
  // resumes (a new setup line, then its steps).
  explicit MetricsWriter(const std::string& path, bool append = false);
  void setup(const SetupRecord& r);
  void step(const StepRecord& r);
  void eval(int64_t step, double val_loss);
  void summary(const SummaryRecord& r);

private:
  void write(const std::string& line);
  CheckedFile out_;
};

std::string format_float(double x);  // 9 significant digits; null for nan/inf (valid JSON)

}  // namespace zt
