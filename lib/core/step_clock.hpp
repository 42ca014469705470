#pragma once
// Where a training step's wall time goes (wall_clock_breakdown), measured by the code that spends
// it: the trainer times forward, backward and the optimizer step, the engine's pieces the time
// compute waits on communication and offload. The engine holds one clock, restarted every step.
#include <utility>

#include "core/clock.hpp"

namespace zt {

// In seconds.
struct StepBreakdown {
  double forward = 0, backward = 0, step = 0;
  double reduce_wait = 0, gather_wait = 0;  // compute thread blocked on communication
  double comm_busy = 0;                      // time collectives were in flight
  double offload_wait = 0, offload_io = 0;   // the offloaded optimizer step waiting; its file's I/O running
};

class StepClock {
public:
  using Part = double StepBreakdown::*;

  void restart() { times_ = {}; }
  void add(Part part, double seconds) { times_.*part += seconds; }
  // Runs f and adds its duration to `part`.
  template <typename F>
  void time(Part part, F&& f) {
    timed(times_.*part, std::forward<F>(f));
  }
  const StepBreakdown& times() const { return times_; }

private:
  StepBreakdown times_;
};

}  // namespace zt
