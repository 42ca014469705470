#pragma once
// Stage 3's gathered parameters: when a group is all-gathered, how long it stays, and what is
// fetched ahead (DeepSpeed's PartitionedParameterCoordinator, small). The fetch order of one
// forward and backward — given by the model, or recorded during the first micro-batch — is the
// trace; a fetch gathers the groups that come next in it, up to stage3_prefetch_bucket_size
// elements ahead and stage3_max_live_parameters gathered at once; a released group stays gathered
// when the trace uses it again within stage3_max_reuse_distance elements. Groups smaller than
// stage3_param_persistence_threshold are gathered once per step and kept. When the shard lives in
// a file (offload_param nvme), this rank's pieces of the next groups are read ahead, up to
// buffer_count pieces and max_in_cpu elements.
#include <vector>

#include "zero/param_shard.hpp"
#include "zero/stage.hpp"

namespace zt {

class GatherCoordinator {
public:
  // shard: this rank's parameters (storage dtype), flat from partition.own().begin.
  GatherCoordinator(const StageContext& ctx, ParamShard& shard, StageTimers& timers);
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
  // Reads ahead from the shard's file end here (before the optimizer writes it).
  void stop_reading_ahead();

  // All-gathers issued per group since the start (for tests and logs).
  const std::vector<int64_t>& gathers() const { return gathers_; }

private:
  struct Gathered {
    void* piece = nullptr;   // this rank's piece, read from the shard's file (nvme)
    void* raw = nullptr;     // storage-dtype values being gathered (when the model's dtype differs)
    void* values = nullptr;  // what the model reads
    WorkPtr work;
    std::vector<size_t> counts;
    bool live = false, ready = false;
    int refs = 0;
  };

  // This rank's part of a group's values, read ahead from a file or not.
  struct ReadAhead {
    void* piece = nullptr;
    PendingRead read;
  };

  Range group_range(int g) const;
  Range own_part(int g) const;  // relative to the shard
  // Where this rank's piece of group g is, in device memory (read from the file if need be).
  const void* own_piece(int g, Gathered& e);
  void read_ahead();
  Gathered& issue(int g);  // starts the all-gather of g unless it is live
  void finish(Gathered& e);  // waits for the gather and converts to the model's dtype
  void free_group(int g);
  void advance_trace(int g);
  void prefetch();
  bool reused_soon(int g) const;

  const StageContext& ctx_;
  ParamShard& shard_;
  const bool in_file_;
  std::vector<ReadAhead> ahead_;  // by group
  int reads_in_flight_ = 0;
  size_t elements_read_ahead_ = 0;
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
