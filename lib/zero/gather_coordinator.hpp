#pragma once
// Stage 3's gathered parameters: when a group is all-gathered, how long it stays, and what is
// fetched ahead (DeepSpeed's PartitionedParameterCoordinator, small). The fetch order of one
// forward and backward — given by the model, or recorded during the first micro-batch — is the
// trace; a fetch gathers the groups that come next in it, up to stage3_prefetch_bucket_size
// elements ahead and stage3_max_live_parameters gathered at once; a released group stays gathered
// when the trace uses it again within stage3_max_reuse_distance elements. Groups smaller than
// stage3_param_persistence_threshold are gathered once per step and kept.
#include <vector>

#include "zero/stage.hpp"

namespace zt {

class GatherCoordinator {
public:
  // shard: this rank's parameters (storage dtype, device memory), flat from partition.own().begin.
  GatherCoordinator(const StageContext& ctx, const uint8_t* shard, StageTimers& timers);
  ~GatherCoordinator();
  GatherCoordinator(const GatherCoordinator&) = delete;
  GatherCoordinator& operator=(const GatherCoordinator&) = delete;

  ConstView fetch(int g);  // group g in the model's dtype, gathered (waiting if in flight)
  void release(int g);
  void begin_micro_batch();  // the trace restarts
  void end_recording();      // the first micro-batch is over: its fetches are the trace
  // The shard changed (after the optimizer step): gathered copies are stale; persistent groups are
  // gathered again.
  void refresh();

  // All-gathers issued per group since the start (for tests and logs).
  const std::vector<int64_t>& gathers() const { return gathers_; }

private:
  struct Gathered {
    void* raw = nullptr;     // storage-dtype values being gathered (when the model's dtype differs)
    void* values = nullptr;  // what the model reads
    WorkPtr work;
    std::vector<size_t> counts;
    bool live = false, ready = false;
    int refs = 0;
  };

  Range group_range(int g) const;
  const void* own_piece(Range range) const;
  Gathered& issue(int g);  // starts the all-gather of g unless it is live
  void finish(Gathered& e);  // waits for the gather and converts to the model's dtype
  void free_group(int g);
  void advance_trace(int g);
  void prefetch();
  bool reused_soon(int g) const;

  const StageContext& ctx_;
  const uint8_t* shard_;
  StageTimers& timers_;
  std::vector<Gathered> live_;  // by group
  size_t live_elements_ = 0;
  std::vector<bool> persistent_;
  std::vector<int> trace_;
  bool recording_ = true;
  size_t pos_ = 0;
  std::vector<int64_t> gathers_;
};

}  // namespace zt
