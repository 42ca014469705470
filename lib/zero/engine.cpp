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

// The groups of one domain, one after the other from offset 0, sharded over one communicator's
// ranks as a whole engine's are: its own partitions, stage and optimizer.
struct Engine::Domain {
  Domain(const EngineOptions& engine, ParamLayout groups, std::vector<size_t> origins, Communicator& comm,
         const Backend& backend, VectorOps& host, BufferPool& pool, StepClock& clock)
      : options(engine), layout(std::move(groups)), origins(std::move(origins)), comm(comm),
        partition(layout.total, comm.world_size(), comm.rank()), trainable(layout),
        train_partition(trainable.numel(), comm.world_size(), comm.rank()),
        ctx{options, layout, comm, partition, trainable, train_partition, backend, host, backend.model.dtype(),
            pool, clock, gathers} {}

  // init's values of this domain's flat elements, which lie at their groups' origins.
  ParamInit values(const ParamInit& init) const {
    return [this, &init](float* dst, size_t begin, size_t count) {
      const Range wanted{begin, begin + count};
      for (size_t i = 0; i < layout.groups.size(); ++i) {
        const ParamGroup& g = layout.groups[i];
        const Range r = wanted.intersect({g.offset, g.offset + g.size});
        if (!r.empty()) init(dst + (r.begin - begin), origins[i] + (r.begin - g.offset), r.size());
      }
    };
  }

  EngineOptions options;  // the engine's, with the fetch order of this domain's groups
  ParamLayout layout;
  std::vector<size_t> origins;  // where each group lies in the engine's layout
  Communicator& comm;
  Partition partition;
  TrainableSpace trainable;
  Partition train_partition;
  std::vector<int64_t> gathers;
  StageContext ctx;
  std::unique_ptr<Stage> stage;
  std::unique_ptr<ShardOptimizer> optimizer;
  std::unique_ptr<Fp32Parts> fp32;  // its parameters kept in fp32 (empty when none are)
  // The trained elements this domain's optimizer updates, in its trainable space.
  Range held() const { return stage->update_range().intersect({0, train_partition.numel()}); }
};

Engine::Engine(const EngineOptions& options, const ParamLayout& layout, Communicator& comm, const Backend& backend,
               VectorOps& host, const ParamInit& init, Communicator* group)
    : options_(options), layout_(layout), comm_(comm), backend_(backend), pool_(backend.device),
      places_(layout.groups.size()), open_grads_(layout.groups.size(), nullptr) {
  for (int d : {0, 1}) {
    ParamLayout sub;
    std::vector<size_t> origins;
    std::vector<int> local(layout.groups.size(), -1);
    for (size_t g = 0; g < layout.groups.size(); ++g) {
      const ParamGroup& from = layout.groups[g];
      if (from.domain != d) continue;
      local[g] = int(sub.groups.size());
      ParamGroup& to = sub.groups.emplace_back(from);
      to.offset = sub.total;
      for (TensorSpec& t : to.tensors) t.offset = t.offset - from.offset + to.offset;
      origins.push_back(from.offset);
      sub.total += from.size;
    }
    if (d == 1 && sub.groups.empty()) break;
    if (d == 1 && !group) fail("Engine: the layout has groups of domain 1 and no communicator of theirs");
    EngineOptions own = options;
    own.fetch_order.clear();
    for (int g : options.fetch_order)
      if (local[size_t(g)] >= 0) own.fetch_order.push_back(local[size_t(g)]);
    domains_.push_back(std::make_unique<Domain>(own, std::move(sub), std::move(origins), d ? *group : comm, backend,
                                                host, pool_, clock_));
    for (size_t g = 0; g < layout.groups.size(); ++g)
      if (local[g] >= 0) places_[g] = {domains_.back().get(), local[g]};
  }
  // Storage first, on every rank, then agreement, then the collectives of initialisation: a rank
  // that cannot allocate (memory, an offload file on a full disk) stops every rank at once.
  std::string error;
  try {
    if (domains_.size() > 1 && (options.offload_param.device == OffloadDevice::Nvme ||
                                options.offload_optimizer.device == OffloadDevice::Nvme))
      fail("Engine: offload to nvme with a second sharding domain is not supported");
    for (auto& d : domains_) {
      d->stage = make_stage(d->ctx);
      d->optimizer = ShardOptimizer::make(
          {d->trainable.layout(), d->stage->update_range(), d->options, backend, host, d->stage->params(), clock_});
      d->fp32 = std::make_unique<Fp32Parts>(d->ctx);
      if (d != domains_[0] && d->fp32->kept_grads())
        fail("Engine: parameters kept in fp32 in the second sharding domain are not supported");
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  const int first = comm.control().first_failure(!error.empty());
  if (first >= 0) throw EngineSetupFailed(first == comm.rank() ? error : "");
  reinitialize(init);
  if (fp16()) scaler_ = LossScaler(options.loss_scaler);
  Device& dev = backend.device;
  // A step's working values, as the model's loss is (not the bucketed transfers of Buffers).
  const size_t W = size_t(comm.world_size());
  if (domains_.size() > 1) {
    // Each group of the second domain has its partials on its first rank, where every rank reads them.
    const std::vector<int> ranks = comm.control().gather_all(group->rank());
    for (int r = 0; r < int(W); ++r)
      if (ranks[size_t(r)] == 0) group_firsts_.push_back(r);
    if (group_firsts_.size() * size_t(group->world_size()) != W)
      fail("Engine: the groups of domain 1 ({} ranks each) do not split the {} ranks evenly", group->world_size(), W);
    group_sums_ = Buffer<double>(dev, MemSpace::Device, MemCategory::Activations, W * size_t(group->world_size()));
  }
  grad_sums_ = Buffer<double>(dev, MemSpace::Device, MemCategory::Activations, W * domains_.size() + 1);
  grad_norm_ = Buffer<GradNorm>(dev, MemSpace::Device, MemCategory::Activations, 1);
  grad_norm_host_ = Buffer<GradNorm>(dev, MemSpace::Pinned, MemCategory::Activations, 1);
}

void Engine::reinitialize(const ParamInit& init) {  // the constructor's initialisation too
  if (steps_ > 0) fail("Engine::reinitialize after {} optimizer steps: only before the first", steps_);
  for (auto& d : domains_) {
    const ParamInit values = domains_.size() == 1 ? init : d->values(init);
    d->stage->init_params(values);
    d->optimizer->init_master();
    d->fp32->init(values, *d->optimizer, d->held());
  }
}

Engine::~Engine() = default;

const Partition& Engine::partition() const { return domains_[0]->partition; }
const TrainableSpace& Engine::trainable() const { return domains_[0]->trainable; }
const Partition& Engine::train_partition() const { return domains_[0]->train_partition; }

ConstView Engine::fetch(int g) {
  const Place& p = places_[size_t(g)];
  const FetchedGroup f = p.domain->stage->fetch(p.group);
  p.domain->fp32->overlay(p.group, f.copy);
  return f.view;
}

ConstView Engine::fetch_fp32(int g) {
  const Place& p = places_[size_t(g)];
  return p.domain->fp32->values(p.group);
}

View Engine::grads_fp32(int g) {
  const Place& p = places_[size_t(g)];
  return p.domain->fp32->grads(p.group);
}

void Engine::release(int g) {
  const Place& p = places_[size_t(g)];
  p.domain->stage->release(p.group);
}

void Engine::begin_micro_batch() {
  for (auto& d : domains_) d->stage->begin_micro_batch();
}

std::vector<int64_t> Engine::group_gathers() const {
  std::vector<int64_t> all;
  for (const Place& p : places_)
    if (!p.domain->gathers.empty()) all.push_back(p.domain->gathers[size_t(p.group)]);
  return all;
}

void Engine::require_one_domain(const char* what) const {
  if (domains_.size() > 1) fail("Engine::{}: not supported with a second sharding domain", what);
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
                        size_t held_group_elements, SecondDomainSize second, size_t fp32_bytes) {
  EnginePlan p = domain_plan(o, numel, trainable, world_size, held_group_elements);
  p.params += fp32_bytes;
  p.step_values += sizeof(double);  // the norm partial of the gradients kept in fp32
  if (second.numel == 0) return p;
  const EnginePlan q = domain_plan(o, second.numel, second.trainable, second.world_size, 0);
  p.params += q.params;
  p.grads += q.grads;
  p.optimizer += q.optimizer;
  p.offload += q.offload;
  p.buffers_bound += q.buffers_bound;
  p.host_buffers += q.host_buffers;
  // The second half of the norm partials, and every rank's partials of its group.
  p.step_values += (size_t(world_size) + size_t(world_size) * size_t(second.world_size)) * sizeof(double);
  std::string terms = q.formula;
  for (auto [from, to] : {std::pair<std::string, std::string>{"/N", "/M"}, {"Ψ", "Ψ'"}, {"T", "T'"}})
    for (size_t at = terms.find(from); at != std::string::npos; at = terms.find(from, at + to.size()))
      terms.replace(at, from.size(), to);
  p.formula += " + " + terms;
  return p;
}

EnginePlan Engine::domain_plan(const EngineOptions& o, size_t numel, size_t trainable, int world_size,
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
  const Place& p = places_[size_t(g)];
  View direct = p.domain->stage->grads_in_place(p.group);
  if (direct.data) return direct;
  void*& open = open_grads_[size_t(g)];
  const DType dt = p.domain->ctx.model_dtype;
  if (!open) open = pool_.acquire(layout_.groups[size_t(g)].size * dtype_size(dt), /*zeroed=*/true);
  return p.domain->ctx.view(open, dt);
}

void Engine::grads_ready(int g) {
  const Place& p = places_[size_t(g)];
  const View in_place = p.domain->stage->grads_in_place(p.group);
  if (in_place.data) return;  // the model accumulated them where they belong
  void*& open = open_grads_[size_t(g)];
  if (!open) fail("grads_ready({}) without gradients for group {}", g, layout_.groups[size_t(g)].name);
  const View grads = p.domain->ctx.view(open, p.domain->ctx.model_dtype);
  p.domain->fp32->take_grads(p.group, grads);
  p.domain->stage->grads_ready(p.group, grads);
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
  for (auto& d : domains_) {
    d->stage->reduce_gradients();
    d->fp32->reduce_grads();
  }
  const double pre = options_.prescale_gradients ? options_.gradient_predivide_factor : 1.0;
  // Every domain's gradients are summed over the ranks whose tokens reached them: the world's.
  const float factor = float(pre / (double(scaler_.scale()) * comm_.world_size() *
                                    double(options_.gradient_accumulation_steps)));
  const size_t partials = norm_partials(factor);
  // As DeepSpeed's bf16 optimizer without the overflow check, bf16 takes a step with inf/nan.
  const bool skip_nonfinite = !(options_.dtype == DType::BF16 && !options_.bf16_check_overflow);
  backend_.vector.grad_norm(grad_sums_.data(), int(partials), factor, options_.gradient_clipping, skip_nonfinite,
                            grad_norm_.data());
  const AdamWHyper hyper{float(lr),           float(beta1), float(beta2), float(options_.adam_eps),
                         float(options_.weight_decay), options_.bias_correction, options_.adam_w_mode};
  for (auto& d : domains_) {
    d->optimizer->update(d->stage->grads(), d->fp32->kept_grads(), grad_norm_.data(), hyper, steps_ + 1);
    d->stage->publish_params();  // unchanged parameters when the update was skipped
    d->fp32->refresh(*d->optimizer, d->held());
    d->stage->zero_grads();
    d->fp32->zero_grads();
  }
  Device& dev = backend_.device;
  dev.copy(grad_norm_host_.data(), grad_norm_.data(), sizeof(GradNorm), dev.compute());
}

// One partial per shard, summed in rank order: the same bits whichever stage runs. The second
// domain's follow the world's: each of its groups' partials, from the group's first rank, groups
// in world rank order.
size_t Engine::norm_partials(float factor) {
  domains_[0]->stage->norm_partials(factor, grad_sums_.data());
  const size_t W = size_t(comm_.world_size());
  if (domains_.size() == 1) {
    if (!domains_[0]->fp32->kept_grads()) return W;
    domains_[0]->fp32->norm_partial(factor, grad_sums_.data() + W);  // the same on every rank
    return W + 1;
  }
  Domain& d = *domains_[1];
  const size_t M = size_t(d.comm.world_size());
  Device& dev = backend_.device;
  double* own = group_sums_.data() + size_t(comm_.rank()) * M;
  d.stage->norm_partials(factor, own);
  comm_.all_gather(own, group_sums_.data(), 2 * M, DType::F32)->sync(dev.compute());  // doubles as fp32 pairs
  for (size_t k = 0; k < group_firsts_.size(); ++k)
    dev.copy(grad_sums_.data() + W + k * M, group_sums_.data() + size_t(group_firsts_[k]) * M, M * sizeof(double),
             dev.compute());
  return W + group_firsts_.size() * M;
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
  require_one_domain("gather_master");
  Device& dev = backend_.device;
  const Partition& part = train_partition();
  ShardOptimizer& optimizer = *domains_[0]->optimizer;
  const Range held = this->held();
  if (held.begin == 0 && held.end == part.numel()) {
    optimizer.read(StateTensor::Master, held, full);
    return;
  }
  // This rank's shard of the master through device memory (where the communicator works), then
  // everyone's.
  const Range own = part.own();
  std::vector<float> mine(own.size(), 0.0f);
  optimizer.read(StateTensor::Master, held, mine.data());
  Buffer<float> all(dev, MemSpace::Device, MemCategory::Buffers, part.padded(), Init::Uninitialised);
  float* own_slot = all.data() + own.begin;
  dev.copy(own_slot, mine.data(), own.size() * sizeof(float), dev.compute());
  comm_.all_gather(own_slot, all.data(), part.shard_size(), DType::F32)->wait();
  dev.copy(full, all.data(), part.numel() * sizeof(float), dev.compute());
  dev.synchronize(dev.compute());
}

Range Engine::held() const {
  require_one_domain("held");
  return held(0);
}

void Engine::read_state(StateTensor t, Range r, float* host) const {
  require_one_domain("read_state");
  read_state(0, t, r, host);
}

void Engine::write_state(StateTensor t, Range r, const float* host) {
  require_one_domain("write_state");
  write_state(0, t, r, host);
}

const TrainableSpace& Engine::trainable(int domain) const { return domains_.at(size_t(domain))->trainable; }
const Partition& Engine::train_partition(int domain) const { return domains_.at(size_t(domain))->train_partition; }
Range Engine::held(int domain) const { return domains_.at(size_t(domain))->held(); }

void Engine::read_state(int domain, StateTensor t, Range r, float* host) const {
  const Range held = this->held(domain);
  if (r.intersect(held).size() != r.size())
    fail("Engine::read_state: elements [{}, {}) are not held here ([{}, {}))", r.begin, r.end, held.begin, held.end);
  domains_[size_t(domain)]->optimizer->read(t, r, host);
}

void Engine::write_state(int domain, StateTensor t, Range r, const float* host) {
  const Range held = this->held(domain);
  if (r.intersect(held).size() != r.size())
    fail("Engine::write_state: elements [{}, {}) are not held here ([{}, {}))", r.begin, r.end, held.begin, held.end);
  domains_[size_t(domain)]->optimizer->write(t, r, host);
}

void Engine::publish_written_state() {
  for (auto& d : domains_) {
    d->optimizer->round_params();
    d->stage->publish_params();
    d->fp32->refresh(*d->optimizer, d->held());
  }
}

void Engine::set_counters(const Counters& c) {
  steps_ = c.optimizer_steps;
  scaler_.set_state(c.scaler);
}

}  // namespace zt
