#include "zero/memory_estimate.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "core/quoted_bytes.hpp"

namespace zt {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// a·Ψ + b·Ψ/N as text (with expert parallelism + a·Ψ' + b·Ψ'/M); the terms that are zero are left out.
std::string psi_formula(int whole, int sharded, bool experts = false) {
  std::string s;
  auto add = [&](const char* psi, const char* n) {
    if (whole) s += fmt::format("{}{}{}", s.empty() ? "" : " + ", whole, psi);
    if (sharded) s += fmt::format("{}{}{}/{}", s.empty() ? "" : " + ", sharded, psi, n);
  };
  add("Ψ", "N");
  if (experts) add("Ψ'", "M");
  return s.empty() ? "0" : s;
}

bool splits_experts(const MemoryEstimateOptions& o) { return o.autoep_size > 1; }

}  // namespace

const char* offload_name(Offload o) {
  switch (o) {
    case Offload::None: return "none";
    case Offload::Optimizer: return "optimizer";
    case Offload::OptimizerAndParams: return "optimizer+params";
  }
  return "?";
}

BytesPerParam bytes_per_param(const std::string& dtype) {
  if (dtype == "bf16" || dtype == "fp16") return {2, 2, 12};
  if (dtype == "fp32") return {4, 4, 8};
  fail("dtype {}: expected bf16, fp16 or fp32", dtype);
}

std::vector<MemoryEstimateRow> estimate_model_state_memory(const MemoryEstimateOptions& o) {
  if (o.num_params == 0) fail("memory estimate: the number of parameters must be > 0");
  if (o.world_size < 1) fail("memory estimate: world size {} (expected >= 1)", o.world_size);
  if (o.nodes < 1 || o.world_size % o.nodes != 0)
    fail("memory estimate: {} nodes do not divide world size {} (expected ranks spread evenly over nodes)", o.nodes,
         o.world_size);
  const bool experts = splits_experts(o);
  if (experts && (o.world_size % o.autoep_size != 0 || o.expert_params == 0 || o.expert_params > o.num_params))
    fail("memory estimate: expert parallelism over groups of {} ranks needs a world size it divides ({}) and a "
         "model with experts",
         o.autoep_size, o.world_size);
  const BytesPerParam b = bytes_per_param(o.dtype);
  // The rest over N ranks; with expert parallelism each rank's experts over the M holding the same.
  const double psi = double(o.num_params - (experts ? o.expert_params : 0)), n = double(o.world_size);
  const double psi_e = experts ? double(o.expert_params) / o.autoep_size : 0;
  const double m = double(o.world_size / std::max(1, o.autoep_size));
  const double ranks_per_node = double(o.world_size / o.nodes);

  auto row = [&](int stage, Offload offload) {
    // Which kinds of state this stage partitions over the N ranks.
    const bool shard_optimizer = stage >= 1, shard_grads = stage >= 2, shard_params = stage >= 3;
    const bool host_optimizer = offload != Offload::None;
    const bool host_params = offload == Offload::OptimizerAndParams;
    int device_whole = 0, device_sharded = 0, host_whole = 0, host_sharded = 0;
    auto place = [&](int bytes, bool sharded, bool on_host) {
      int& slot = on_host ? (sharded ? host_sharded : host_whole) : (sharded ? device_sharded : device_whole);
      slot += bytes;
      return on_host ? 0.0 : bytes * (psi / (sharded ? n : 1.0) + psi_e / (sharded ? m : 1.0));
    };
    MemoryEstimateRow r;
    r.stage = stage;
    r.offload = offload;
    r.params = place(b.params, shard_params, host_params);
    r.grads = place(b.grads, shard_grads, false);
    r.optimizer = place(b.optimizer, shard_optimizer, host_optimizer);
    r.offloaded = host_whole * (psi + psi_e) + host_sharded * (psi / n + psi_e / m);
    r.host_per_node = r.offloaded * ranks_per_node;
    r.formula = psi_formula(device_whole, device_sharded, experts);
    if (offload != Offload::None) r.host_formula = psi_formula(host_whole, host_sharded, experts);
    return r;
  };

  std::vector<MemoryEstimateRow> rows;
  for (int stage = 0; stage <= 3; ++stage) rows.push_back(row(stage, Offload::None));
  for (int stage = 1; stage <= 3; ++stage) rows.push_back(row(stage, Offload::Optimizer));
  rows.push_back(row(3, Offload::OptimizerAndParams));
  return rows;
}

std::string format_memory_estimate(const MemoryEstimateOptions& o, const std::vector<MemoryEstimateRow>& rows) {
  const BytesPerParam b = bytes_per_param(o.dtype);
  const std::string params =
      splits_experts(o)
          ? fmt::format("Ψ = {} parameters besides the experts, Ψ' = {} of the experts on each rank ({} of them "
                        "over groups of {} ranks), M = {} ranks holding the same experts, ",
                        o.num_params - o.expert_params, o.expert_params / uint64_t(o.autoep_size), o.expert_params,
                        o.autoep_size, o.world_size / o.autoep_size)
          : fmt::format("Ψ = {} parameters, ", o.num_params);
  std::string out = fmt::format(
      "Model-state memory per rank: {}N = {} ranks on {} node{}, {} ({} + {} + {} bytes per "
      "parameter: params + grads + optimizer)\n",
      params, o.world_size, o.nodes, o.nodes == 1 ? "" : "s",
      o.dtype == "fp32" ? "fp32 training" : o.dtype + " mixed precision", b.params, b.grads, b.optimizer);
  out += fmt::format("{:<6}{:<18}{:>10}{:>10}{:>11}{:>11}{:>12}  {}\n", "stage", "offload", "params", "grads",
                     "optimizer", "total/GPU", "host/node", "formula (per rank; offloaded per rank)");
  out += fmt::format("{:<6}{:<18}{:>10}{:>10}{:>11}{:>11}{:>12}\n", "", "", "GiB", "GiB", "GiB", "GiB", "GiB");
  for (const auto& r : rows) {
    std::string formula = r.formula;
    if (!r.host_formula.empty()) formula += " (host " + r.host_formula + ")";
    out += fmt::format("{:<6}{:<18}{:>10.2f}{:>10.2f}{:>11.2f}{:>11.2f}{:>12.2f}  {}\n", r.stage,
                       offload_name(r.offload), r.params / kGiB, r.grads / kGiB, r.optimizer / kGiB,
                       r.device_total() / kGiB, r.host_per_node / kGiB, formula);
  }
  return out;
}

uint64_t parse_param_count(const std::string& text, const std::string& label) {
  const std::string expected = fmt::format(
      "{} {}: expected a positive whole number of parameters such as 124439808, 1.5e9, 350m or 7b", label,
      quoted_bytes(text));
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) fail("{}", expected);
  double scale = 1;
  std::string number = text;
  switch (std::tolower(static_cast<unsigned char>(text.back()))) {
    case 'k': scale = 1e3; break;
    case 'm': scale = 1e6; break;
    case 'b':
    case 'g': scale = 1e9; break;
    case 't': scale = 1e12; break;
  }
  if (scale != 1) number.pop_back();
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size()) fail("{}", expected);
  const double count = std::round(value * scale);
  // 1.5m is 1500000; 2.5 parameters, or 1e-3k, are not a count.
  if (!(count >= 1) || std::fabs(count - value * scale) > 1e-6 * count)
    fail("{} (it is {} parameters)", expected, value * scale);
  if (count > 1e18) fail("{} (at most 1e18)", expected);
  return uint64_t(count);
}

LauncherWorldSize launcher_world_size() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE"}) {
    const char* value = std::getenv(variable);
    if (!value) continue;
    int ranks = 0;
    auto [end, ec] = std::from_chars(value, value + std::strlen(value), ranks);
    if (ec != std::errc() || *end != '\0' || ranks < 1)
      fail("{}={}: not a world size (expected a positive integer); give --world-size", variable,
           quoted_bytes(value));
    return {ranks, variable};
  }
  return {};
}

}  // namespace zt
