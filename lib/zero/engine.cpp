#include "zero/engine.hpp"

#include <fmt/format.h>

#include <cmath>
#include <spdlog/spdlog.h>

#include "comm/control_channel.hpp"
#include "core/error.hpp"
#include "zero/gather_coordinator.hpp"
#include "zero/grad_bucketer.hpp"
#include "zero/memory_estimate.hpp"

namespace zt {

Engine::Engine(const EngineOptions& options, const ParamLayout& layout, Communicator& comm, const Backend& backend,
               VectorOps& host, const ParamInit& init)
    : options_(options), layout_(layout), comm_(comm), backend_(backend),
      partition_(layout.total, comm.world_size(), comm.rank()),
      trainable_(layout),
      train_partition_(trainable_.numel(), comm.world_size(), comm.rank()),
      pool_(backend.device),
      ctx_{options_, layout, comm, partition_, trainable_, train_partition_, backend, host, backend.model.dtype(),
           pool_, clock_, group_gathers_},
      open_grads_(layout.groups.size(), nullptr) {
  // Storage first, on every rank, then agreement, then the collectives of initialisation: a rank
  // that cannot allocate (memory, an offload file on a full disk) stops every rank at once.
  std::string error;
  try {
    stage_ = make_stage(ctx_);
    optimizer_ = ShardOptimizer::make(
        {trainable_.layout(), stage_->update_range(), options_, backend, host, stage_->params(), clock_});
  } catch (const std::exception& e) {
    error = e.what();
  }
  const int first = comm.control().first_failure(!error.empty());
  if (first >= 0) throw EngineSetupFailed(first == comm.rank() ? error : "");
  stage_->init_params(init);
  optimizer_->init_master();
  if (fp16()) scaler_ = LossScaler(options.loss_scaler);
  Device& dev = backend.device;
  // A step's working values, as the model's loss is (not the bucketed transfers of Buffers).
  grad_sums_ = Buffer<double>(dev, MemSpace::Device, MemCategory::Activations, size_t(comm.world_size()));
  grad_norm_ = Buffer<GradNorm>(dev, MemSpace::Device, MemCategory::Activations, 1);
  grad_norm_host_ = Buffer<GradNorm>(dev, MemSpace::Pinned, MemCategory::Activations, 1);
}

void Engine::reinitialize(const ParamInit& init) {
  if (steps_ > 0) fail("Engine::reinitialize after {} optimizer steps: only before the first", steps_);
  stage_->init_params(init);
  optimizer_->init_master();
}

namespace {

// a·Ψ + b·Ψ/N + c·T + e·T/N as text, the terms that are zero left out.
std::string state_formula(size_t psi_whole, size_t psi_sharded, size_t t_whole, size_t t_sharded) {
  std::string s;
  auto term = [&](size_t k, const char* what) {
    if (k) s += fmt::format("{}{}{}", s.empty() ? "" : " + ", k, what);
  };
  term(psi_whole, "Ψ");
  term(psi_sharded, "Ψ/N");
  term(t_whole, "T");
  term(t_sharded, "T/N");
  return s.empty() ? "0" : s;
}

}  // namespace

EnginePlan Engine::plan(const EngineOptions& o, size_t numel, size_t trainable, int world_size,
                        size_t held_group_elements) {
  const Partition part(numel, world_size, 0), train(trainable, world_size, 0);
  const bool frozen = trainable != numel;
  EnginePlan p;
  p.padded = part.padded();
  p.shard = part.shard_size();
  p.trainable = trainable;
  p.train_padded = train.padded();
  p.train_shard = train.shard_size();
  p.step_values_host = sizeof(GradNorm);
  p.step_values = size_t(world_size) * sizeof(double) + sizeof(GradNorm) + p.step_values_host;
  // Model states: the estimator's rows for this stage, the parameters over the padded flat buffer,
  // gradients and optimizer state over the padded trainable space (the same when nothing is
  // frozen). What offload moves out of the device is the parameters' or the optimizer's column.
  const bool host_params = o.offload_param.device != OffloadDevice::None;
  const bool host_optimizer = host_params || o.offload_optimizer.device != OffloadDevice::None;
  MemoryEstimateRow flat_row, train_row;
  for (const auto& row : estimate_model_state_memory({p.padded, world_size, 1, std::string(dtype_name(o.dtype))}))
    if (row.stage == o.stage && row.offload == Offload::None) flat_row = row;
  for (const auto& row :
       estimate_model_state_memory({p.train_padded, world_size, 1, std::string(dtype_name(o.dtype))})) {
    if (row.stage != o.stage) continue;
    if (row.offload == Offload::None) train_row = row;
    const Offload offload = host_params ? Offload::OptimizerAndParams
                            : host_optimizer ? Offload::Optimizer
                                             : Offload::None;
    if (row.offload == offload) p.formula = row.formula;
  }
  const size_t params_state = size_t(flat_row.params), optimizer_state = size_t(train_row.optimizer);
  // With frozen parameters the optimizer updates a compact copy of its trainable range
  // (zero/trainable_params.hpp): the whole trainable space at stage 0, a shard otherwise.
  const size_t d = dtype_size(o.dtype);
  const size_t compact = frozen ? d * (o.stage == 0 ? p.train_padded : p.train_shard) : 0;
  p.params = (host_params ? 0 : params_state) + compact;
  p.grads = size_t(train_row.grads);
  p.optimizer = host_optimizer ? 0 : optimizer_state;
  p.offload = (host_params ? params_state : 0) + (host_optimizer ? optimizer_state : 0);
  if (frozen) {
    const BytesPerParam b = bytes_per_param(std::string(dtype_name(o.dtype)));
    const size_t k = host_optimizer ? 0 : size_t(b.optimizer), g = size_t(b.grads), pd = host_params ? 0 : d;
    p.formula = state_formula(o.stage < 3 ? pd : 0, o.stage < 3 ? 0 : pd,
                              (o.stage == 0 ? d + k : 0) + (o.stage < 2 ? g : 0),
                              (o.stage == 0 ? 0 : d + k) + (o.stage < 2 ? 0 : g));
  }
  // In files (nvme), offloaded state takes its file's bytes (aligned for direct I/O) in place of
  // memory, and the optimizer's file keeps buffer_count sub-groups in host memory besides.
  const FileStateBytes state_file = ShardOptimizer::file_state_bytes(o, p.train_shard);
  if (state_file.file) {
    p.offload += state_file.file + state_file.host - optimizer_state;
    p.offload_files += state_file.file;
  }
  if (o.stage == 3 && o.offload_param.device == OffloadDevice::Nvme) {
    const size_t file = FileParamShard::file_bytes(o.dtype, p.shard);
    p.offload += file - params_state;
    p.offload_files += file;
  }
  // Transient: the bucket slots, the groups the model holds (from the pool), gathered groups, staging.
  p.host_buffers = ShardOptimizer::staging_bytes(o, p.train_shard);
  p.buffers_bound = GradBucketer::bytes(o, train) + held_group_elements * sizeof(float) * 2 + p.host_buffers;
  if (o.stage == 3) p.buffers_bound += GatherCoordinator::bytes_bound(o, part);
  // Stage 3 gathers the updated trainable parameters into one buffer before keeping its own.
  if (o.stage == 3 && frozen) p.buffers_bound += trainable * d;
  return p;
}

View Engine::grads(int g) {
  if (!layout_.group_trainable(size_t(g)))
    fail("grads({}): every tensor of group {} is frozen: it has no gradients", g, layout_.groups[size_t(g)].name);
  View direct = stage_->grads_in_place(g);
  if (direct.data) return direct;
  void*& open = open_grads_[size_t(g)];
  const DType dt = ctx_.model_dtype;
  if (!open) open = pool_.acquire(layout_.groups[size_t(g)].size * dtype_size(dt), /*zeroed=*/true);
  return ctx_.view(open, dt);
}

void Engine::grads_ready(int g) {
  if (stage_->grads_in_place(g).data) return;  // the model accumulated them where they belong
  void*& open = open_grads_[size_t(g)];
  if (!open) fail("grads_ready({}) without gradients for group {}", g, layout_.groups[size_t(g)].name);
  stage_->grads_ready(g, ctx_.view(open, ctx_.model_dtype));
  pool_.release(open);
  open = nullptr;
}

float Engine::backward_scale() const {
  const float pre = options_.prescale_gradients ? float(options_.gradient_predivide_factor) : 1.0f;
  return scaler_.scale() / pre;
}

UpdateResult Engine::step(double lr, double beta1, double beta2) {
  queue_step(lr, beta1, beta2);
  backend_.device.synchronize(backend_.device.compute());
  return finish_step();
}

void Engine::queue_step(double lr, double beta1, double beta2) {
  queued_scale_ = scaler_.scale();
  stage_->reduce_gradients();
  const double pre = options_.prescale_gradients ? options_.gradient_predivide_factor : 1.0;
  const float factor = float(pre / (double(scaler_.scale()) * partition_.world_size() *
                                    double(options_.gradient_accumulation_steps)));
  // One partial per shard, summed in rank order: the same bits whichever stage runs.
  stage_->norm_partials(factor, grad_sums_.data());
  // As DeepSpeed's bf16 optimizer without the overflow check, bf16 takes a step with inf/nan.
  const bool skip_nonfinite = !(options_.dtype == DType::BF16 && !options_.bf16_check_overflow);
  backend_.vector.grad_norm(grad_sums_.data(), partition_.world_size(), factor, options_.gradient_clipping,
                            skip_nonfinite, grad_norm_.data());
  const AdamWHyper hyper{float(lr),           float(beta1), float(beta2), float(options_.adam_eps),
                         float(options_.weight_decay), options_.bias_correction, options_.adam_w_mode};
  optimizer_->update(stage_->grads(), grad_norm_.data(), hyper, steps_ + 1);
  stage_->publish_params();  // unchanged parameters when the update was skipped
  stage_->zero_grads();
  Device& dev = backend_.device;
  dev.copy(grad_norm_host_.data(), grad_norm_.data(), sizeof(GradNorm), dev.compute());
}

UpdateResult Engine::finish_step() {
  const GradNorm& norm = grad_norm_host_[0];
  UpdateResult result;
  result.loss_scale = queued_scale_;
  result.grad_norm = norm.norm;
  const bool overflow = !std::isfinite(norm.sum_of_squares);
  if (overflow && !norm.skip)
    spdlog::warn("step {}: gradient has inf/nan; taking the step (bf16.check_grad_overflow is false)", steps_ + 1);
  if (fp16()) scaler_.update(norm.skip != 0);
  if (norm.skip) {
    result.skipped = true;
    if (!fp16()) spdlog::warn("step {}: gradient has inf/nan; skipping the step", steps_ + 1);
    return result;
  }
  ++steps_;
  return result;
}

void Engine::gather_master(float* full) {
  Device& dev = backend_.device;
  const Partition& part = train_partition_;
  const Range held = this->held();
  if (held.begin == 0 && held.end == part.numel()) {
    optimizer_->read(StateTensor::Master, held, full);
    return;
  }
  // This rank's shard of the master through device memory (where the communicator works), then
  // everyone's.
  const Range own = part.own();
  std::vector<float> mine(own.size(), 0.0f);
  optimizer_->read(StateTensor::Master, held, mine.data());
  Buffer<float> all(dev, MemSpace::Device, MemCategory::Buffers, part.padded(), Init::Uninitialised);
  float* own_slot = all.data() + own.begin;
  dev.copy(own_slot, mine.data(), own.size() * sizeof(float), dev.compute());
  comm_.all_gather(own_slot, all.data(), part.shard_size(), DType::F32)->wait();
  dev.copy(full, all.data(), part.numel() * sizeof(float), dev.compute());
  dev.synchronize(dev.compute());
}

Range Engine::held() const { return stage_->update_range().intersect({0, train_partition_.numel()}); }

void Engine::read_state(StateTensor t, Range r, float* host) const {
  const Range held = this->held();
  if (r.intersect(held).size() != r.size())
    fail("Engine::read_state: elements [{}, {}) are not held here ([{}, {}))", r.begin, r.end, held.begin, held.end);
  optimizer_->read(t, r, host);
}

void Engine::write_state(StateTensor t, Range r, const float* host) {
  const Range held = this->held();
  if (r.intersect(held).size() != r.size())
    fail("Engine::write_state: elements [{}, {}) are not held here ([{}, {}))", r.begin, r.end, held.begin, held.end);
  optimizer_->write(t, r, host);
}

void Engine::publish_written_state() {
  optimizer_->round_params();
  stage_->publish_params();
}

void Engine::set_counters(const Counters& c) {
  steps_ = c.optimizer_steps;
  scaler_.set_state(c.scaler);
}

}  // namespace zt
