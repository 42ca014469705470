#pragma once
// Writing checkpoints while training goes on. At a save every rank copies its shard of the
// optimizer state into a staging buffer in host memory (all the training step waits for) and
// writes its shard file on a thread of its own. The ranks agree at a later step boundary that
// every file is on disk; rank 0 then completes the checkpoint: meta.json with each file's CRC32C
// is written, the step directory renamed into place, `latest` replaced, old checkpoints removed
// (keep_last). A failed write is an error on every rank, reported once by the rank it happened
// on; the previous checkpoint and `latest` stay as they were.
#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "ckpt/checkpoint_format.hpp"
#include "ckpt/shard_file.hpp"
#include "comm/control_channel.hpp"
#include "core/buffer.hpp"
#include "core/state_access.hpp"

namespace zt {

// A checkpoint could not be written; the rank that failed logged why. Every rank throws it.
struct CheckpointFailed : std::exception {
  const char* what() const noexcept override { return "checkpoint failed"; }
};

// Creates the checkpoint root if needed, checks that it is writable, and removes what saves that
// never completed left behind. Rank 0, before the first save.
void prepare_checkpoint_root(const std::string& root);

class CheckpointWriter {
public:
  // shard: the flat elements this rank writes (its partition's trained range: the files are
  // spread over the ranks at every stage). The staging buffer is allocated here, in `device`'s
  // pinned host memory, so a save never allocates.
  CheckpointWriter(std::string root, int64_t keep_last, ControlChannel& control, Device& device, Range shard);
  // Bytes of that staging buffer: the master, m and v of the shard in fp32.
  static size_t staging_bytes(Range shard) { return 3 * shard.size() * sizeof(float); }
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Starts the checkpoint of meta.step: waits for the save in flight first (collective), copies
  // this rank's shard out of `state`, and writes it in the background. meta: everything but the
  // shard list; rank 0's is written.
  void save(CheckpointMeta meta, const StateAccess& state);
  // At a step boundary; collective while a save is in flight (every rank knows the same): when
  // every rank has written its file, the checkpoint is completed; otherwise returns at once.
  void poll() { advance(false); }
  // Waits for the save in flight, if any, and completes it (collective).
  void finish() { advance(true); }

  // The best checkpoint's step: keep_last never removes it.
  void keep_best(int64_t step) { best_step_ = step; }
  bool in_flight() const { return job_ != nullptr; }
  int64_t last_complete_step() const { return last_complete_; }  // -1 before the first

private:
  struct Job;
  struct ShardStatus;
  void advance(bool wait);
  void complete(const Job& job, const std::vector<ShardStatus>& all);  // rank 0
  void write_in_background(Job& job);
  void replace_step_dir(const std::string& dir);  // rank 0

  std::string root_;
  int64_t keep_last_;
  ControlChannel& control_;
  Range shard_;
  Buffer<float> staging_;  // master, m, v of shard_, one after the other
  std::unique_ptr<Job> job_;
  int64_t last_complete_ = -1;
  std::optional<int64_t> best_step_;
};

}  // namespace zt
