#include "train/metrics.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "core/error.hpp"

namespace zt {

std::string format_float(double x) {
  if (!std::isfinite(x)) return "null";
  return fmt::format("{:.9g}", x);
}

MetricsWriter::MetricsWriter(const std::string& path, bool append) {
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  out_.open(path, std::ios::out | (append ? std::ios::app : std::ios::trunc));
  if (!out_) fail("training.metrics: cannot open '{}' for writing", path);
}

void MetricsWriter::write(const std::string& line) {
  if (!out_.is_open()) return;
  out_ << line << '\n';
  out_.flush();  // a crash must not lose the steps already taken
}

void MetricsWriter::setup(const SetupRecord& r) {
  std::string mem;
  for (auto& m : r.memory)
    mem += fmt::format("{}{{\"rank\":{},\"params\":{},\"grads\":{},\"optimizer\":{},\"buffers\":{},\"offload\":{}}}",
                       mem.empty() ? "" : ",", m.rank, m.params, m.grads, m.optimizer, m.buffers, m.offload);
  write(fmt::format("{{\"event\":\"setup\",\"world_size\":{},\"stage\":{},\"dtype\":\"{}\",\"num_params\":{},"
                    "\"padded_params\":{},\"memory\":[{}]}}",
                    r.world_size, r.stage, r.dtype, r.num_params, r.padded_params, mem));
}

void MetricsWriter::step(const StepRecord& r) {
  std::string time;
  if (r.time) {
    const StepBreakdown& t = *r.time;
    time = fmt::format(",\"time_ms\":{{\"forward\":{},\"backward\":{},\"step\":{},\"reduce_wait\":{},"
                       "\"gather_wait\":{},\"comm_busy\":{}}}",
                       format_float(1e3 * t.forward), format_float(1e3 * t.backward), format_float(1e3 * t.step),
                       format_float(1e3 * t.reduce_wait), format_float(1e3 * t.gather_wait),
                       format_float(1e3 * t.comm_busy));
  }
  write(fmt::format(
      "{{\"event\":\"step\",\"step\":{},\"loss\":{},\"lr\":{},\"grad_norm\":{},\"loss_scale\":{},"
      "\"skipped\":{},\"tokens\":{},\"step_ms\":{},\"tokens_per_s\":{},\"mfu\":{},"
      "\"comm\":{{\"all_reduce\":{},\"reduce_scatter\":{},\"all_gather\":{},\"broadcast\":{}}}{}}}",
      r.step, format_float(r.loss), format_float(r.lr), format_float(r.grad_norm), format_float(r.loss_scale),
      r.skipped ? "true" : "false", r.tokens, format_float(r.step_ms), format_float(r.tokens_per_s),
      format_float(r.mfu), r.comm.bytes(CommOp::AllReduce), r.comm.bytes(CommOp::ReduceScatter),
      r.comm.bytes(CommOp::AllGather), r.comm.bytes(CommOp::Broadcast), time));
}

void MetricsWriter::eval(int64_t step, double val_loss) {
  write(fmt::format("{{\"event\":\"eval\",\"step\":{},\"val_loss\":{}}}", step, format_float(val_loss)));
}

}  // namespace zt
