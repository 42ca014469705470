#include "metrics/metrics_file.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "metrics/output_failure.hpp"

namespace zt {

std::string format_float(double x) {
  if (!std::isfinite(x)) return "null";
  return fmt::format("{:.9g}", x);
}

namespace {

// ,"rewards/chosen":...: the preference metrics' fields of a record, or nothing.
std::string preference_fields(const std::optional<PreferenceMetrics>& m, const char* prefix = "") {
  std::string out;
  if (m)
    for (const auto& [name, value] : m->fields()) out += fmt::format(",\"{}{}\":{}", prefix, name, format_float(value));
  return out;
}

// The summary's preference metrics: the last step's, and the last evaluation's as eval_*, TRL's
// names; each field followed by a comma.
std::string summary_preference(const SummaryRecord& r) {
  std::string out = preference_fields(r.preference) + preference_fields(r.val_preference, "eval_");
  if (out.empty()) return out;
  return out.substr(1) + ",";
}

}  // namespace

MetricsWriter::MetricsWriter(const std::string& path, bool append)
    : out_(path, append ? CheckedFile::Mode::Append : CheckedFile::Mode::Truncate, "training.metrics") {}

void MetricsWriter::write(const std::string& line) {
  if (!out_.is_open()) return;
  try {
    out_.write(line + '\n');  // one write() per line: a crash keeps the steps already taken
  } catch (const Error& e) {
    OutputFailure::report(e.what());
    out_ = CheckedFile();  // nothing more: a later line after a gap would be worse than none
  }
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
  if (r.breakdown) {
    const StepBreakdown& t = r.time;
    time = fmt::format(",\"time_ms\":{{\"forward\":{},\"backward\":{},\"step\":{},\"reduce_wait\":{},"
                       "\"gather_wait\":{},\"comm_busy\":{},\"offload_wait\":{},\"offload_io\":{}}}",
                       format_float(1e3 * t.forward), format_float(1e3 * t.backward), format_float(1e3 * t.step),
                       format_float(1e3 * t.reduce_wait), format_float(1e3 * t.gather_wait),
                       format_float(1e3 * t.comm_busy), format_float(1e3 * t.offload_wait),
                       format_float(1e3 * t.offload_io));
  }
  const std::string preference = preference_fields(r.preference);
  write(fmt::format(
      "{{\"event\":\"step\",\"step\":{},\"loss\":{}{},\"lr\":{}{}{}{},\"loss_scale\":{},"
      "\"skipped\":{},\"tokens\":{},\"padding\":{},\"step_ms\":{},\"tokens_per_s\":{},\"mfu\":{},"
      "\"comm\":{{\"all_reduce\":{},\"reduce_scatter\":{},\"all_gather\":{},\"broadcast\":{}{}}}{}}}",
      r.step, format_float(r.loss), preference, format_float(r.lr),
      r.grad_norm ? ",\"grad_norm\":" + format_float(*r.grad_norm) : std::string(),
      r.aux_loss ? ",\"aux_loss\":" + format_float(*r.aux_loss) : std::string(),
      r.expert_load ? ",\"expert_load\":" + format_float(*r.expert_load) : std::string(), format_float(r.loss_scale),
      r.skipped ? "true" : "false", r.tokens,
      format_float(r.row_tokens > 0 ? 1.0 - double(r.tokens) / double(r.row_tokens) : 0.0), format_float(r.step_ms),
      format_float(r.tokens_per_s),
      format_float(r.mfu), r.comm.bytes(CommOp::AllReduce), r.comm.bytes(CommOp::ReduceScatter),
      r.comm.bytes(CommOp::AllGather), r.comm.bytes(CommOp::Broadcast),
      r.comm.calls[size_t(CommOp::AllToAll)] > 0 ? fmt::format(",\"all_to_all\":{}", r.comm.bytes(CommOp::AllToAll))
                                                 : std::string(),
      time));
}

void MetricsWriter::eval(const EvalRecord& r) {
  write(fmt::format("{{\"event\":\"eval\",\"step\":{},\"val_loss\":{}{}{}}}", r.step, format_float(r.val_loss),
                    r.aux_loss ? ",\"aux_loss\":" + format_float(*r.aux_loss) : std::string(),
                    preference_fields(r.preference)));
}

void MetricsWriter::summary(const SummaryRecord& r) {
  std::string memory;
  for (const auto& m : r.memory_peak) {
    memory += fmt::format("{}{{\"rank\":{}", memory.empty() ? "" : ",", m.rank);
    for (const auto& [name, bytes] : m.fields()) memory += fmt::format(",\"{}\":{}", name, bytes);
    memory += "}";
  }
  std::string comm;
  for (size_t i = 0; i < size_t(CommOp::Count); ++i) {
    if (r.comm.calls[i] == 0) continue;
    comm += fmt::format("{}\"{}\":{{\"calls\":{},\"bytes\":{},\"seconds\":{}}}", comm.empty() ? "" : ",",
                        comm_op_name(CommOp(i)), r.comm.calls[i], r.comm.bytes_sent[i],
                        format_float(r.comm.seconds[i]));
  }
  write(
      fmt::format("{{\"event\":\"summary\",\"steps\":{},\"interrupted\":{},\"tokens\":{},\"wall_s\":{},"
                  "\"tokens_per_s\":{},\"mfu\":{},\"packing_efficiency\":{},\"padding\":{},\"loss\":{},"
                  "\"val_loss\":{}{}{},"
                  "{}\"memory_peak\":[{}],\"comm\":{{{}}},"
                  "\"comm_overlap\":{{\"in_flight_s\":{},\"waited_s\":{}}}}}",
                  r.steps, r.interrupted ? "true" : "false", r.tokens, format_float(r.wall_s),
                  format_float(r.tokens_per_s), format_float(r.mfu), format_float(r.packing_efficiency()),
                  format_float(1.0 - r.packing_efficiency()), format_float(r.loss), format_float(r.val_loss),
                  r.aux_loss ? ",\"aux_loss\":" + format_float(*r.aux_loss) : std::string(),
                  r.expert_load ? ",\"expert_load\":" + format_float(*r.expert_load) : std::string(),
                  summary_preference(r), memory,
                  comm, format_float(r.comm_in_flight_s), format_float(r.comm_waited_s)));
}

}  // namespace zt
