#include "ckpt/checkpoint_writer.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <spdlog/spdlog.h>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/synced_file.hpp"
#include "core/error.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void prepare_checkpoint_root(const std::string& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) fail("training.checkpoint_dir: cannot create {}: {}", root, ec.message());
  if (!fs::is_directory(root)) fail("training.checkpoint_dir: {} is not a directory", root);
  if (::access(root.c_str(), W_OK | X_OK) != 0) fail("training.checkpoint_dir: {} is not writable", root);
  remove_incomplete_saves(root);
}

// One save in flight. The thread writes `written`, `error` and `seconds`, then sets `done`.
struct CheckpointWriter::Job {
  CheckpointMeta meta;
  ShardIdentity shard;  // what this rank's file header records
  std::string tmp_dir;
  double copy_seconds = 0;
  std::thread thread;
  std::atomic<bool> done{false};
  ShardWritten written;
  std::string error;
  double seconds = 0;
};

// What each rank tells the others about its file (plain bytes through the control channel).
struct CheckpointWriter::ShardStatus {
  uint64_t begin = 0, end = 0, bytes = 0;
  double seconds = 0;
  uint32_t crc32c = 0;
  int32_t done = 0, ok = 0;
};

CheckpointWriter::CheckpointWriter(std::string root, int64_t keep_last, ControlChannel& control, Device& device,
                                   Range shard)
    : root_(std::move(root)), keep_last_(keep_last), control_(control), shard_(shard),
      staging_(device, MemSpace::Pinned, MemCategory::Buffers, staging_bytes(shard) / sizeof(float),
               Init::Uninitialised) {
  // Touched now, at set-up: the first save's copy would otherwise fault in every page in the step.
  if (!staging_.empty()) std::memset(staging_.data(), 0, staging_.bytes());
}

CheckpointWriter::~CheckpointWriter() {
  if (job_ && job_->thread.joinable()) job_->thread.join();
}

void CheckpointWriter::save(CheckpointMeta meta, const StateAccess& state) {
  finish();
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = shard_.size();
  for (size_t k = 0; k < 3 && n > 0; ++k) state.read_state(kStateTensors[k], shard_, staging_.data() + k * n);
  job_ = std::make_unique<Job>();
  job_->meta = std::move(meta);
  job_->shard = {shard_, job_->meta.step, layout_crc32c(job_->meta.layout)};
  job_->tmp_dir = (fs::path(root_) / (step_dir_name(job_->meta.step) + std::string(kTmpSuffix))).string();
  job_->copy_seconds = seconds_since(t0);
  job_->thread = std::thread([this, job = job_.get()] { write_in_background(*job); });
}

void CheckpointWriter::write_in_background(Job& job) {
  // Training threads come first: the file only has to be done by a later step boundary.
  setpriority(PRIO_PROCESS, id_t(gettid()), 10);
  const auto t0 = std::chrono::steady_clock::now();
  const int rank = control_.rank(), world = control_.world_size();
  const std::string path = (fs::path(job.tmp_dir) / shard_file_name(rank, world)).string();
  try {
    std::error_code ec;
    fs::create_directories(job.tmp_dir, ec);
    if (ec) fail("{}: cannot create: {}", job.tmp_dir, ec.message());
    const size_t n = shard_.size();
    const float* state[3] = {staging_.data(), staging_.data() + n, staging_.data() + 2 * n};
    job.written = write_shard_file(path, job.shard, state);
  } catch (const std::exception& e) {
    job.error = e.what();
  }
  job.seconds = seconds_since(t0);
  job.done.store(true, std::memory_order_release);
}

void CheckpointWriter::advance(bool wait) {
  if (!job_) return;
  if (wait && job_->thread.joinable()) job_->thread.join();
  ShardStatus mine;
  mine.done = job_->done.load(std::memory_order_acquire);
  if (mine.done) {
    mine = {shard_.begin, shard_.end, job_->written.bytes, job_->seconds, job_->written.crc32c, 1,
            job_->error.empty() ? 1 : 0};
  }
  const std::vector<ShardStatus> all = control_.gather_all(mine);
  for (auto& s : all)
    if (!s.done) return;  // a later step boundary
  if (job_->thread.joinable()) job_->thread.join();
  const std::unique_ptr<Job> job = std::move(job_);
  const int64_t step = job->meta.step;
  const std::string latest = (fs::path(root_) / kLatestFile).string();

  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].ok) {  // the lowest failing rank speaks for all
      if (int(r) == control_.rank())
        spdlog::error("checkpoint of step {} failed: {} ({} is unchanged)", step, job->error, latest);
      throw CheckpointFailed();
    }
  std::string error;
  if (control_.rank() == 0) {
    try {
      complete(*job, all);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (control_.first_failure(!error.empty()) >= 0) {
    if (control_.rank() == 0) spdlog::error("checkpoint of step {} failed: {} ({} is unchanged)", step, error, latest);
    throw CheckpointFailed();
  }
  last_complete_ = step;
}

// A checkpoint of this step from an earlier run: one that stopped before `latest` named it, or one
// this run went back from (resumed from an older step). Until the new one takes its place,
// `latest` names the newest other complete checkpoint, so that it never names a missing one.
void CheckpointWriter::replace_step_dir(const std::string& dir) {
  const auto latest = latest_checkpoint(root_);
  if (latest && fs::equivalent(*latest, dir)) {
    std::string other;
    for (auto& c : list_checkpoints(root_))
      if (!fs::equivalent(c.path, dir)) other = fs::path(c.path).filename().string();
    if (!other.empty()) publish_latest(root_, other);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) fail("{}: cannot replace the checkpoint of the same step an earlier run wrote: {}", dir, ec.message());
}

void CheckpointWriter::complete(const Job& job, const std::vector<ShardStatus>& all) {
  CheckpointMeta meta = job.meta;
  uint64_t bytes = 0;
  double seconds = 0;
  for (size_t r = 0; r < all.size(); ++r) {
    const ShardStatus& s = all[r];
    meta.shards.push_back({int(r), shard_file_name(int(r), int(all.size())), {s.begin, s.end}, s.bytes, s.crc32c});
    bytes += s.bytes;
    seconds = std::max(seconds, s.seconds);
  }
  write_file_durably((fs::path(job.tmp_dir) / kMetaFile).string(), meta_file_text(meta));

  const std::string name = step_dir_name(meta.step);
  const std::string final_dir = (fs::path(root_) / name).string();
  if (fs::exists(final_dir)) replace_step_dir(final_dir);
  rename_durably(job.tmp_dir, final_dir);
  publish_latest(root_, name);
  std::vector<std::string> removed;
  try {
    removed = prune_checkpoints(root_, keep_last_, best_step_);
  } catch (const std::exception& e) {  // the new checkpoint is complete and named: training goes on
    spdlog::warn("{}", e.what());
  }
  spdlog::info(
      "checkpoint {}: {} shard file{}, {:.1f} MB written in the background in {:.2f} s ({:.2f} GB/s); the "
      "step waited {:.3f} s for the copy to host memory{}",
      final_dir, all.size(), all.size() == 1 ? "" : "s", double(bytes) / 1e6, seconds,
      seconds > 0 ? double(bytes) / 1e9 / seconds : 0.0, job.copy_seconds,
      removed.empty() ? "" : fmt::format("; removed {} older (training.keep_last {})", removed.size(), keep_last_));
  for (const std::string& old : removed)
    spdlog::info("checkpoint {} deleted: training.keep_last {} keeps the newest{}", old, keep_last_,
                 best_step_ ? fmt::format(" and the best ({})", step_dir_name(*best_step_)) : "");
}

}  // namespace zt
