#pragma once
// Stage 3's gathered parameters: when a group is all-gathered, how long it stays, and what is
// fetched ahead (DeepSpeed's PartitionedParameterCoordinator, small). The fetch order of one
// forward and backward — given by the model, or recorded during the first micro-batch — is the
// trace; a fetch gathers the groups that come next in it, up to stage3_prefetch_bucket_size
// elements ahead and stage3_max_live_parameters gathered at once; a released group stays gathered
// when the trace uses it again within stage3_max_reuse_distance elements. Groups smaller than
// stage3_param_persistence_threshold are gathered once per step and kept.
//
// When the shard lives in a file (offload_param nvme), this rank's piece of a group is read from it
// into its place in the group's gather buffer (through host staging on a GPU), and the all-gather
// runs in place; the pieces of the groups the trace gathers next are read ahead, up to
// buffer_count groups and max_in_cpu elements. A shard in host memory on a GPU is copied to its
// place the same way: the communicator only sees device memory. Every all-gather of a group is
// counted in the context's group_gathers.
#include <vector>

#include "zero/param_shard.hpp"
#include "zero/stage.hpp"

namespace zt {

class GatherCoordinator {
public:
  // shard: this rank's parameters (storage dtype), flat from partition.own().begin.
  GatherCoordinator(const StageContext& ctx, ParamShard& shard);
  // The most bytes its gathered groups take at once: stage3_max_live_parameters plus what one
  // prefetch may overshoot it by (stage3_prefetch_bucket_size), at most the whole buffer, each
  // element in the storage dtype as gathered and in fp32 at most as the model reads it.
  static size_t bytes_bound(const EngineOptions& options, const Partition& partition);
  ~GatherCoordinator();
  GatherCoordinator(const GatherCoordinator&) = delete;
  GatherCoordinator& operator=(const GatherCoordinator&) = delete;

  View fetch(int g);  // group g in the model's dtype, gathered (waiting if in flight): its own buffer
  void release(int g);
  void begin_micro_batch();  // the trace restarts
  void end_recording();      // the first micro-batch is over: its fetches are the trace
  // The shard changed (after the optimizer step): gathered copies are stale; persistent groups are
  // gathered again.
  void refresh();
  // Reads ahead from the shard's file are finished and dropped (before the optimizer writes it).
  void stop_reading_ahead();

private:
  enum class Phase { Free, Reading, Gathering, Ready };
  struct Gathered {
    Phase phase = Phase::Free;
    void* raw = nullptr;     // storage-dtype values being gathered (when the model's dtype differs)
    void* values = nullptr;  // what the model reads
    PendingRead read;        // this rank's piece coming from the file (Reading)
    void* staging = nullptr;  // host memory the piece comes through on a GPU
    bool read_ahead = false;  // started by read_ahead(), counted in reading_
    WorkPtr work;            // the all-gather in flight (Gathering)
    std::vector<size_t> counts;
    int refs = 0;
  };

  Range group_range(int g) const;
  void* gather_buffer(Gathered& e) const { return e.raw ? e.raw : e.values; }
  // Buffers for group g and, from a file, the read of this rank's piece into its place.
  Gathered& start(int g);
  Gathered& issue(int g);    // its all-gather is on the way (started if need be)
  void finish(Gathered& e);  // waits for the all-gather and converts to the model's dtype
  void free_group(int g);
  void advance_trace(int g);
  void prefetch();
  void read_ahead();
  bool reused_soon(int g) const;

  const StageContext& ctx_;
  ParamShard& shard_;
  const bool in_file_;
  const bool staged_;  // the piece goes to its place in the gather buffer before an in-place all-gather
  BufferPool host_;  // staging for pieces on their way to a GPU
  std::vector<Gathered> live_;  // by group
  size_t live_elements_ = 0;    // gathered or being gathered, persistent groups aside
  int reading_ = 0;             // groups whose piece is being read ahead
  size_t elements_reading_ = 0;
  std::vector<bool> persistent_;
  std::vector<int> trace_;
  bool recording_ = true;
  size_t pos_ = 0;
};

}  // namespace zt
