#include "metrics/step_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace zt {

namespace {

void log_breakdown(const StepBreakdown& t, double step_seconds) {
  double exposed = t.reduce_wait + t.gather_wait;
  double overlapped = t.comm_busy > 0 ? std::max(0.0, 1.0 - exposed / t.comm_busy) : 0.0;
  spdlog::info(
      "      time (ms): forward {:.1f} | backward {:.1f} | step {:.1f} | waiting on reduce {:.1f}, on gather {:.1f} "
      "| collectives in flight {:.1f} ({:.0f}% hidden behind compute) | other {:.1f}",
      1e3 * t.forward, 1e3 * t.backward, 1e3 * t.step, 1e3 * t.reduce_wait, 1e3 * t.gather_wait, 1e3 * t.comm_busy,
      100 * overlapped, 1e3 * (step_seconds - t.forward - t.backward - t.step));
  if (t.offload_io > 0 || t.offload_wait > 0)
    spdlog::info("      offload (ms): file I/O running {:.1f} | optimizer step waiting on it and transfers {:.1f}",
                 1e3 * t.offload_io, 1e3 * t.offload_wait);
}

}  // namespace

StepLog::StepLog(int64_t total_steps, double quiet_seconds)
    : total_(total_steps), quiet_seconds_(quiet_seconds), last_line_(Clock::now()) {}

bool StepLog::quiet_too_long() const {
  return quiet_seconds_ > 0 && std::chrono::duration<double>(Clock::now() - last_line_).count() >= quiet_seconds_;
}

void StepLog::step(const StepRecord& r) {
  if (!r.logged && !quiet_too_long()) return;
  last_line_ = Clock::now();
  std::string norm = r.grad_norm ? fmt::format(" | grad norm {:.3f}", *r.grad_norm) : "";
  if (r.aux_loss) norm += fmt::format(" | aux loss {:.4f}", *r.aux_loss);
  if (r.expert_load) norm += fmt::format(" | expert load {:.2f}", *r.expert_load);
  spdlog::info("step {:>5}/{} | loss {:.4f} | lr {:.3e}{}{} | {:.1f} ms | {:.0f} tok/s | MFU {:.1f}%",
               r.step, total_, r.loss, r.lr, norm,
               r.skipped ? fmt::format(" | skipped (loss scale {})", r.loss_scale) : "", r.step_ms,
               r.tokens_per_s, 100.0 * r.mfu);
  if (r.preference) {
    const PreferenceMetrics& m = *r.preference;
    spdlog::info("           rewards chosen {:.4f} rejected {:.4f} accuracies {:.3f} margins {:.4f} | logps chosen "
                 "{:.2f} rejected {:.2f}{}",
                 m.rewards_chosen, m.rewards_rejected, m.rewards_accuracies, m.rewards_margins, m.logps_chosen,
                 m.logps_rejected, odds_ratio_text(m));
  }
  if (r.breakdown) log_breakdown(r.time, r.step_ms / 1e3);
}

void StepLog::eval(const EvalRecord& r) {
  last_line_ = Clock::now();
  const std::string preference =
      r.preference ? fmt::format(" | rewards accuracies {:.3f} margins {:.4f} chosen {:.4f} rejected {:.4f}",
                                 r.preference->rewards_accuracies, r.preference->rewards_margins,
                                 r.preference->rewards_chosen, r.preference->rewards_rejected)
                   : "";
  spdlog::info("eval  step {:>5} | val loss {:.4f}{}{}", r.step, r.val_loss,
               r.aux_loss ? fmt::format(" | aux loss {:.4f}", *r.aux_loss) : "", preference);
}

void StepLog::sample(const SampleRecord& r) {
  spdlog::info("sample step {:>5} | {} tokens: {}", r.step, r.tokens, r.text);
}

}  // namespace zt
