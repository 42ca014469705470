#include "zero/engine.hpp"

#include <cmath>
#include <cstring>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "optim/grad_clip.hpp"

namespace zt {

namespace {
MemCategory optimizer_category(const config::Config& c) {
  return c.zero.offload_optimizer.device == "none" ? MemCategory::Optimizer : MemCategory::Offload;
}
}  // namespace

Engine::Engine(const config::Config& config, const ParamLayout& layout, Communicator& comm, const ParamInit& init)
    : config_(config), layout_(layout), comm_(comm),
      partition_(layout.total, comm.world_size(), comm.rank()),
      dtype_(dtype_from_name(config.dtype())),
      comm_dtype_(dtype_from_name(config.communication_data_type.empty() ? config.dtype()
                                                                         : config.communication_data_type)),
      ctx_{config, layout, comm, partition_, dtype_, comm_dtype_} {
  stage_ = make_stage(ctx_);
  stage_->init_params(init);
  optimizer_ = std::make_unique<ShardOptimizer>(layout, stage_->update_range(), dtype_, optimizer_category(config));
  optimizer_->init_master(stage_->params());
  if (config.fp16.enabled) scaler_ = LossScaler(config.fp16);
}

float* Engine::grads(int g) {
  if (float* direct = stage_->grads_in_place(g)) return direct;
  auto& buf = group_grads_[g];
  if (buf.empty()) buf = Buffer<float>(MemCategory::Buffers, layout_.groups[size_t(g)].size);
  return buf.data();
}

void Engine::grads_ready(int g) {
  if (stage_->grads_in_place(g)) return;  // the model accumulated them where they belong
  auto it = group_grads_.find(g);
  if (it == group_grads_.end()) fail("grads_ready({}) without gradients for group {}", g, layout_.groups[size_t(g)].name);
  stage_->grads_ready(g, it->second.data());
  group_grads_.erase(it);
}

float Engine::backward_scale() const {
  float pre = config_.prescale_gradients ? float(config_.gradient_predivide_factor) : 1.0f;
  return scaler_.scale() / pre;
}

double Engine::global_grad_sum_of_squares(float factor) {
  // One partial per shard, summed in rank order: the same bits whichever stage runs.
  const int n = partition_.world_size();
  std::vector<double> partial(size_t(n), 0.0);
  if (stage_->holds_all_gradients()) {
    for (int r = 0; r < n; ++r)
      partial[size_t(r)] = grad_sum_of_squares(dtype_, stage_->grads_of_shard(r), partition_.trained(r).size(), factor);
  } else {
    double own = grad_sum_of_squares(dtype_, stage_->grads(), partition_.trained(partition_.rank()).size(), factor);
    // A double travels as two fp32 words: all_gather moves bytes and never adds them.
    comm_.all_gather(&own, partial.data(), 2, DType::F32)->wait();
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

StepResult Engine::step(double lr, double beta1, double beta2) {
  StepResult result;
  result.loss_scale = scaler_.scale();
  stage_->reduce_gradients();

  const double pre = config_.prescale_gradients ? config_.gradient_predivide_factor : 1.0;
  const float factor = float(pre / (double(scaler_.scale()) * partition_.world_size() *
                                    double(config_.gradient_accumulation_steps)));
  double sum_sq = global_grad_sum_of_squares(factor);
  result.grad_norm = std::sqrt(sum_sq);
  bool overflow = !std::isfinite(sum_sq);
  if (overflow && config_.bf16.enabled && !config_.bf16.check_grad_overflow) {
    // As DeepSpeed's bf16 optimizer without the check: the step is taken, inf/nan and all.
    spdlog::warn("step {}: gradient has inf/nan; taking the step (bf16.check_grad_overflow is false)", steps_ + 1);
    overflow = false;
  }
  if (config_.fp16.enabled) scaler_.update(overflow);
  if (overflow) {
    result.skipped = true;
    if (!config_.fp16.enabled)
      spdlog::warn("step {}: gradient has inf/nan; skipping the step", steps_ + 1);
    stage_->zero_grads();
    return result;
  }

  double clip = 1.0;
  if (config_.gradient_clipping > 0) clip = clip_coefficient(result.grad_norm, config_.gradient_clipping);
  auto& o = config_.optimizer;
  AdamWHyper hyper{float(lr), float(beta1), float(beta2), float(o.eps), float(o.weight_decay),
                   o.bias_correction, o.adam_w_mode};
  optimizer_->update(stage_->params(), stage_->grads(), float(factor * clip), hyper, ++steps_);
  stage_->publish_params();
  stage_->zero_grads();
  return result;
}

void Engine::gather_master(float* full) {
  const float* master = optimizer_->master(stage_->params());
  Range range = stage_->update_range();
  if (range.begin == 0 && range.end == partition_.padded()) {
    std::memcpy(full, master, partition_.numel() * sizeof(float));
    return;
  }
  Buffer<float> all(MemCategory::Buffers, partition_.padded());
  comm_.all_gather(master, all.data(), partition_.shard_size(), DType::F32)->wait();
  std::memcpy(full, all.data(), partition_.numel() * sizeof(float));
}

}  // namespace zt
