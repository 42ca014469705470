#pragma once
// The ZeRO engine: the model's ParamHooks, the optimizer step, and the optimizer state that
// checkpoints save (StateAccess). Which stage runs is a strategy (stage.hpp); partitioning,
// bucketing, the shard optimizer and the loss scaler are shared. One step is: micro-batches of
// forward/backward through the hooks, then step().
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/param_hooks.hpp"
#include "core/state_access.hpp"
#include "core/step_clock.hpp"
#include "core/trainable_space.hpp"
#include "kernels/backend.hpp"
#include "zero/buffer_pool.hpp"
#include "zero/engine_options.hpp"
#include "zero/fp32_parts.hpp"
#include "zero/loss_scaler.hpp"
#include "zero/partition.hpp"
#include "zero/shard_optimizer.hpp"
#include "zero/stage.hpp"

namespace zt {

// What one optimizer update did.
struct UpdateResult {
  bool skipped = false;     // overflow: no update was applied
  double grad_norm = 0.0;   // global L2 norm of the (unscaled, unclipped) gradients
  float loss_scale = 1.0f;  // the scale this step's backward used
};

// What the engine allocates on each rank, known before it exists (--dry-run's plan): its model
// states (the ZeRO formula of its stage and offload) and a bound on its transient buffers.
struct EnginePlan {
  size_t padded = 0, shard = 0;  // elements of the flat buffer and of one rank's shard
  // Elements of the trainable space (all parameters when nothing is frozen), its padded size and
  // one rank's shard of it: what gradients and optimizer state are kept for.
  size_t trainable = 0, train_padded = 0, train_shard = 0;
  size_t params = 0, grads = 0, optimizer = 0, offload = 0;  // bytes
  size_t offload_files = 0;  // of offload, the bytes in files (nvme); the rest is in host memory
  std::string formula;       // device bytes per rank, e.g. "2Ψ + 14Ψ/N" (with T the trainable space when frozen)
  size_t buffers_bound = 0;  // buckets, gathered groups, group copies and gradients, offload staging
  size_t host_buffers = 0;   // of buffers_bound, the bytes in host memory (offload staging)
  // The step's working values, counted as activations: the norm partials and the norm, on the
  // device, and the norm's copy in pinned memory (step_values_host).
  size_t step_values = 0, step_values_host = 0;
};

// The size of an engine's second sharding domain: its elements, of which `trainable` train, over
// `world_size` ranks.
struct SecondDomainSize {
  size_t numel = 0, trainable = 0;
  int world_size = 1;
};

// The engine could not be set up on some rank (memory, an offload file). Thrown on every rank, with
// the reason on the lowest failing rank and an empty one elsewhere, before any collective ran.
struct EngineSetupFailed : Error {
  using Error::Error;
};

class Engine final : public ParamHooks, public StateAccess {
public:
  // init fills initial fp32 values of any flat range (model init, or loaded weights). The model
  // computes in backend.model.dtype(): fetch and grads hand out views in that dtype. host: the
  // host's vector operators (initial values, offloaded state). Collective; throws
  // EngineSetupFailed on every rank when its storage cannot be made on one.
  // The groups of domain 1 (ParamGroup::domain) are a second sharding domain over `group`, a
  // sub-communicator of `comm` whose ranks hold the same values of them: their parameters (stage
  // 3), gradients and optimizer state are sharded over it, their gradients reduced and their
  // parameters gathered among its ranks only. Its groups of ranks each hold their own; the
  // gradient norm and its clipping are over all of them.
  Engine(const EngineOptions& options, const ParamLayout& layout, Communicator& comm, const Backend& backend,
         VectorOps& host, const ParamInit& init, Communicator* group = nullptr);
  ~Engine() override;

  // The plan of an engine over `numel` parameters of which `trainable` are trained (the others
  // frozen) on `world_size` ranks. held_group_elements: the most elements of parameter groups the
  // model holds at once, each with a copy in the model's dtype and its gradients (fp32 at most).
  // second: the groups of domain 1, over the ranks of their communicator (none when numel is 0):
  // their model states and buffers are added, the formula's terms written with Ψ' and M.
  // fp32_bytes: the working copy of the parameters kept in fp32 (Fp32Parts::bytes).
  static EnginePlan plan(const EngineOptions& options, size_t numel, size_t trainable, int world_size,
                         size_t held_group_elements, SecondDomainSize second = {}, size_t fp32_bytes = 0);

  ConstView fetch(int g) override;
  void release(int g) override;
  View grads(int g) override;
  void grads_ready(int g) override;
  ConstView fetch_fp32(int g) override;
  View grads_fp32(int g) override;

  // The parameters filled again from `init`, and the master weights from them, as construction
  // left them (before any step; every rank calls it). A pass of forwards may run in between on other
  // values put in their place the same way, with no memory of their own.
  void reinitialize(const ParamInit& init);

  // Call before each micro-batch's forward.
  void begin_micro_batch();
  // What backward multiplies the loss gradient by (the fp16 loss scale, and any predivision).
  float backward_scale() const;
  // Finishes reductions, unscales, clips, applies AdamW to this rank's shard and publishes the
  // new parameters. lr and the betas come from the schedule. queue_step queues it all without the
  // host waiting for the device: the gradient norm, the clip factor and whether the update is
  // skipped (non-finite gradients) stay on the device, which AdamW reads them from, and a copy of
  // them heads for host memory. finish_step, once the device has run the step (after
  // Device::synchronize(compute())), reads that copy, updates the loss scale and counts the step.
  // step does both, waiting in between.
  UpdateResult step(double lr, double beta1, double beta2);
  void queue_step(double lr, double beta1, double beta2);
  UpdateResult finish_step();

  // Consolidated fp32 master weights of the trainable space (trainable().numel() elements: every
  // parameter when nothing is frozen), into host memory on every rank (collective).
  void gather_master(float* full);

  // Checkpoints: the optimizer state of the trained part of the range this rank updates, in the
  // trainable space.
  Range held() const override;
  void read_state(StateTensor t, Range r, float* host) const override;
  void write_state(StateTensor t, Range r, const float* host) override;
  // The same of domain d's trainable space (the layout's groups of domain d one after the other),
  // with a second sharding domain too.
  Range held(int domain) const;
  void read_state(int domain, StateTensor t, Range r, float* host) const;
  void write_state(int domain, StateTensor t, Range r, const float* host);
  // After every rank wrote the master of what it holds: the parameters take the master's values
  // (rounded to the training dtype) on every rank that uses them. Collective.
  void publish_written_state();
  struct Counters {
    int64_t optimizer_steps = 0;
    LossScaler::State scaler{};
  };
  Counters counters() const { return {steps_, scaler_.state()}; }
  void set_counters(const Counters& c);

  const EngineOptions& options() const { return options_; }
  // Of the groups of domain 0 (all of them without a second domain): their partition, their
  // trainable elements as one compact space and its partition: where gradients and optimizer state
  // live, what checkpoints hold. The flat buffer and partition() when nothing is frozen.
  const Partition& partition() const;
  const TrainableSpace& trainable() const;
  const Partition& train_partition() const;
  // The sharding domains (1, or 2 with groups of domain 1), and each one's trainable space and its
  // partition over the domain's communicator.
  int domains() const { return int(domains_.size()); }
  const TrainableSpace& trainable(int domain) const;
  const Partition& train_partition(int domain) const;
  DType dtype() const { return options_.dtype; }
  bool fp16() const { return options_.dtype == DType::F16; }  // dynamic loss scaling
  int64_t optimizer_steps() const { return steps_; }
  const LossScaler& loss_scaler() const { return scaler_; }
  // Where the step's time goes: the trainer restarts it each step and times forward, backward and
  // step() with it; the engine adds its waits on communication and offload.
  StepClock& clock() { return clock_; }
  // All-gathers of each group's parameters so far (stage 3; empty where parameters stay resident).
  std::vector<int64_t> group_gathers() const;

private:
  struct Domain;
  // Group g's domain and its index there.
  struct Place {
    Domain* domain = nullptr;
    int group = 0;
  };
  // plan() of one domain.
  static EnginePlan domain_plan(const EngineOptions& options, size_t numel, size_t trainable, int world_size,
                                size_t held_group_elements);
  // Every domain's gradient-norm partials into grad_sums_ (collective); how many there are.
  size_t norm_partials(float factor);
  // What reads or writes the trainable space of every group at once: one domain only, for now.
  void require_one_domain(const char* what) const;

  const EngineOptions options_;
  const ParamLayout& layout_;
  Communicator& comm_;
  const Backend& backend_;
  BufferPool pool_;
  StepClock clock_;
  std::vector<std::unique_ptr<Domain>> domains_;  // 0: over comm; 1, when the layout has it: over group
  std::vector<Place> places_;
  std::vector<int> group_firsts_;  // domain 1: the world rank of each of its groups' first rank
  LossScaler scaler_;
  std::vector<void*> open_grads_;  // the model's gradients per group in flight (from pool_)
  int64_t steps_ = 0;
  Buffer<double> grad_sums_;               // per shard of every domain, in device memory
  Buffer<double> group_sums_;              // domain 1: every rank's partials of its group
  Buffer<GradNorm> grad_norm_, grad_norm_host_;  // in device memory, and its copy in pinned memory
  float queued_scale_ = 1.0f;              // the loss scale of the queued step's backward
};

}  // namespace zt
