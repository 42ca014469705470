// Expert parallelism under mpirun (2 and 4 ranks): each group of autoep_size ranks splits the
// experts, the routed rows travel by all_to_all, and the results are those of the run that keeps
// every expert on every rank, within fp32 rounding: a sparse layer's output, input gradient and
// (summed over the ranks) weight gradients; and training's losses and gradient norms at stages 0
// and 3; a checkpoint resumes with another group size; the activations planned are the run's.
// The bytes the all-to-all moves are the formula's (comm/comm_volume.hpp), from a routing the
// test computes itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "comm/comm_volume.hpp"
#include "comm/control_channel.hpp"
#include "config/config.hpp"
#include "model/moe_block.hpp"
#include "mpi_world.hpp"
#include "random_floats.hpp"
#include "step_records.hpp"
#include "core/ledger.hpp"
#include "model/gpt_layout.hpp"
#include "train/engine_config.hpp"
#include "train/expert_group.hpp"
#include "train/memory_plan.hpp"
#include "train/trainer.hpp"
#include "train/whole_state.hpp"

using namespace zt;
using zt::test::random_floats;
using zt::test::world;

namespace {

// The group sizes a world of `world` ranks is tested with (1: no expert parallelism).
std::vector<int> group_sizes(int world) { return world == 4 ? std::vector<int>{2, 4} : std::vector<int>{world}; }

void check_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  float scale = 0, worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::abs(want[i]));
    worst = std::max(worst, std::abs(got[i] - want[i]));
  }
  INFO(what << ": largest difference " << worst << " of values up to " << scale);
  CHECK(scale > 0);
  CHECK(worst <= 1e-5f * scale);
}

struct LayerResult {
  std::vector<float> out, dx, drouter, dexperts;  // dexperts summed over the world
  uint64_t all_to_all_bytes = 0;
};

// One sparse layer of `shape`, forward and backward over this rank's N tokens, in groups of
// `group` ranks (1: every expert here).
LayerResult run_layer(const GptShape& shape, int N, int group, uint32_t seed) {
  const int C = shape.d_model, E = shape.moe.num_experts, I = shape.expert_width();
  Communicator& comm = world();
  const std::vector<float> x = random_floats(size_t(N) * size_t(C), seed + uint32_t(comm.rank()), 1.0f);
  const std::vector<float> dout = random_floats(size_t(N) * size_t(C), seed + 100 + uint32_t(comm.rank()), 1.0f);
  const std::vector<float> router = random_floats(size_t(E) * size_t(C), seed + 200, 0.5f);
  const std::vector<float> experts = random_floats(size_t(E) * 3 * size_t(I) * size_t(C), seed + 300, 0.1f);
  LayerResult r;
  r.out.resize(x.size());
  r.dx.resize(x.size());
  r.drouter.assign(router.size(), 0.0f);
  r.dexperts.assign(experts.size(), 0.0f);
  MoeBlock block(shape, 1, N, 1, cpu_backend());
  const std::unique_ptr<Communicator> ranks = split_expert_group(comm, group);
  if (group > 1) block.set_group(expert_group(*ranks));
  // The rank holds its own experts alone, side by side.
  const size_t per = 3 * size_t(I) * size_t(C), own = size_t(E / group), first = size_t(comm.rank() % group) * own;
  const std::vector<float> mine(experts.begin() + std::ptrdiff_t(first * per),
                                experts.begin() + std::ptrdiff_t((first + own) * per));
  std::vector<float> dmine(mine.size(), 0.0f);
  const CommStats before = ranks->stats();
  block.forward(0, 0, r.out.data(), x.data(), MoeWeights{router.data(), mine.data(), nullptr, nullptr}, N);
  block.backward(0, r.dx.data(), MoeGrads{r.drouter.data(), dmine.data(), nullptr, nullptr}, dout.data(), x.data(),
                 MoeWeights{router.data(), mine.data(), nullptr, nullptr}, N);
  r.all_to_all_bytes = (ranks->stats() - before).bytes(CommOp::AllToAll);
  std::copy(dmine.begin(), dmine.end(), r.dexperts.begin() + std::ptrdiff_t(first * per));
  comm.all_reduce(r.dexperts.data(), r.dexperts.data(), r.dexperts.size(), DType::F32, ReduceOp::Sum);
  return r;
}

// Tokens each expert gets from this rank's x (the test's own routing: top-k of x · routerᵀ).
std::vector<double> expert_counts(const GptShape& shape, int N, uint32_t seed) {
  const int C = shape.d_model, E = shape.moe.num_experts, K = shape.moe.top_k;
  const std::vector<float> x = random_floats(size_t(N) * size_t(C), seed + uint32_t(world().rank()), 1.0f);
  const std::vector<float> router = random_floats(size_t(E) * size_t(C), seed + 200, 0.5f);
  std::vector<double> counts(size_t(E), 0.0);
  for (int n = 0; n < N; ++n) {
    std::vector<std::pair<double, int>> logits;
    for (int e = 0; e < E; ++e) {
      double dot = 0;
      for (int c = 0; c < C; ++c) dot += double(x[size_t(n * C + c)]) * router[size_t(e * C + c)];
      logits.push_back({dot, e});
    }
    std::partial_sort(logits.begin(), logits.begin() + K, logits.end(), std::greater<>());
    for (int k = 0; k < K; ++k) counts[size_t(logits[size_t(k)].second)] += 1;
  }
  return counts;
}

}  // namespace

TEST_CASE("a sparse layer split over groups of ranks computes what every expert on every rank does, and moves "
          "the formula's bytes",
          "[trainer][moe][expert_parallel]") {
  Communicator& comm = world();
  const GptShape shape = gpt_preset("qwen3-moe-tiny")->resolved();
  const int E = shape.moe.num_experts, N = 24;
  const uint32_t seed = 7;
  const LayerResult whole = run_layer(shape, N, 1, seed);
  CHECK(whole.all_to_all_bytes == 0);
  // Every rank's counts per expert, for the rows that reach this rank's experts from the others.
  const std::vector<double> mine = expert_counts(shape, N, seed);
  std::vector<double> all(mine.size() * size_t(comm.world_size()));
  comm.control().all_gather(mine.data(), all.data(), mine.size() * sizeof(double));
  for (int group : group_sizes(comm.world_size())) {
    INFO("groups of " << group << " ranks");
    const LayerResult split = run_layer(shape, N, group, seed);
    check_close(split.out, whole.out, "output");
    check_close(split.dx, whole.dx, "input gradient");
    check_close(split.drouter, whole.drouter, "router gradient");
    check_close(split.dexperts, whole.dexperts, "experts' gradients, summed over the ranks");
    const int index = comm.rank() % group, first = comm.rank() - index, own = E / group;
    size_t rows_out = 0, rows_in = 0;
    for (int e = 0; e < E; ++e) {
      const bool here = e / own == index;
      if (!here) rows_out += size_t(mine[size_t(e)]);
      for (int q = first; q < first + group && here; ++q)
        if (q != comm.rank()) rows_in += size_t(all[size_t(q) * size_t(E) + size_t(e)]);
    }
    CHECK(rows_out + rows_in > 0);  // the premise: rows do travel
    CHECK(split.all_to_all_bytes ==
          expert_all_to_all_bytes(rows_out, rows_in, E, group, shape.d_model, DType::F32, false));
  }
}

namespace {

config::Config moe_config(int stage, int group, int world_size) {
  nlohmann::json raw = {
      {"train_micro_batch_size_per_gpu", 2},
      {"gradient_accumulation_steps", 1},
      {"zero_optimization", {{"stage", stage}}},
      {"model", {{"preset", "qwen3-moe-tiny"}, {"output_router_logits", true}}},
      {"data", {{"train", "synthetic:vocab=256"}, {"format", "synthetic"}, {"seq_len", 16}}},
      {"training", {{"steps", 3}, {"eval_interval", 0}, {"gradient_checkpointing", stage == 3}}},
      {"expert_parallel", {{"enabled", group > 1}, {"autoep_size", std::max(group, 1)}}}};
  config::ResolveOptions options;
  options.world_size = world_size;
  return config::resolve_config(raw, options, "expert_parallel.json");
}

struct Steps {
  std::vector<double> loss, grad_norm;
};

Steps train(int stage, int group) {
  Communicator& comm = world();
  Trainer trainer(moe_config(stage, group, comm.world_size()), comm);
  Steps s;
  for (int64_t step = 1; step <= 3; ++step) {
    const TrainStepResult r = trainer.train_step(step);
    s.loss.push_back(r.loss);
    s.grad_norm.push_back(r.result.grad_norm);
  }
  return s;
}

void check_steps(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("step " << k + 1 << ": " << what << " " << got[k] << ", without expert parallelism " << want[k]);
    CHECK(std::abs(got[k] - want[k]) <= 1e-5 * std::abs(want[k]));
  }
}

}  // namespace

TEST_CASE("training with expert parallelism gives the losses and gradient norms of training without it",
          "[trainer][moe][expert_parallel]") {
  for (int stage : {0, 1, 2, 3}) {
    const Steps whole = train(stage, 1);
    for (int group : group_sizes(world().world_size())) {
      INFO("stage " << stage << ", groups of " << group);
      const Steps split = train(stage, group);
      check_steps(split.loss, whole.loss, "loss");
      check_steps(split.grad_norm, whole.grad_norm, "gradient norm");
    }
  }
}

// Each rank holds its own experts alone, sharded over the ranks holding the same ones: its
// parameters, gradients and optimizer state are the plan's to the byte, where the experts' part is
// theirs over M = W/N ranks (the formula's Ψ' terms), counted here from the shape.
TEST_CASE("with expert parallelism a rank keeps the model states of its own experts alone, sharded over the ranks "
          "holding the same experts",
          "[trainer][moe][expert_parallel]") {
  Communicator& comm = world();
  const int W = comm.world_size();
  const GptShape shape = gpt_preset("qwen3-moe-tiny")->resolved();
  const size_t expert = 3 * size_t(shape.expert_width()) * size_t(shape.d_model);
  size_t sparse = 0;
  for (int l = 0; l < shape.n_layer; ++l) sparse += shape.sparse(l) ? 1 : 0;
  const size_t experts = sparse * size_t(shape.moe.num_experts) * expert;
  auto states = [](const auto& p) { return p.params + p.grads + p.optimizer; };
  for (int stage : {0, 1, 2, 3}) {
    const config::Config whole_config = moe_config(stage, 1, W);
    const EngineOptions options = engine_options(whole_config);
    // Without the experts, over the world: what every rank keeps of the rest in either run.
    const size_t psi = make_gpt_layout(shape).total;
    const EnginePlan rest = Engine::plan(options, psi - experts, psi - experts, W, 0);
    for (int group : group_sizes(W)) {
      INFO("stage " << stage << ", groups of " << group);
      const config::Config c = moe_config(stage, group, W);
      auto& ledger = MemoryLedger::instance();
      const MemStats before = ledger.stats();
      size_t measured = 0, own = 0;
      {
        Trainer trainer(c, comm);
        trainer.train_step(1);
        const MemStats after = ledger.stats();
        auto delta = [&](MemCategory k) { return after.cur(k) - before.cur(k); };
        const MemoryPlan plan = plan_memory(c, W);
        CHECK(delta(MemCategory::Params) == plan.params);
        CHECK(delta(MemCategory::Grads) == plan.grads);
        CHECK(delta(MemCategory::Optimizer) == plan.optimizer);
        CHECK_THAT(plan.formula, Catch::Contains(stage == 0 ? "16Ψ'" : "Ψ'/M"));
        measured = delta(MemCategory::Params) + delta(MemCategory::Grads) + delta(MemCategory::Optimizer);
        own = trainer.model().layout().total;
      }
      // The experts' part: E/N of them, fp32 (4 bytes each of parameters and gradients, 8 of Adam's
      // m and v), padded for M ranks, the parts ZeRO shards at this stage over M.
      const size_t M = size_t(W / group), mine = experts / size_t(group);
      CHECK(own == psi - experts + mine);
      const size_t padded = (mine + 64 * M - 1) / (64 * M) * (64 * M);
      const size_t held = 4 * padded / (stage == 3 ? M : 1) + 4 * padded / (stage >= 2 ? M : 1) +
                          8 * padded / (stage >= 1 ? M : 1);
      CHECK(measured == states(rest) + held);
      // Less than without expert parallelism, but at stage 3, where ZeRO shards the experts over all
      // W = N·M ranks either way.
      if (stage < 3)
        CHECK(measured < states(plan_memory(whole_config, W)));
      else
        CHECK(measured <= states(plan_memory(whole_config, W)));
    }
  }
}

// The whole layout's state gathered from the ranks' pieces of both domains, in one reduce-scatter
// or in many: the same values, those of the run without expert parallelism within fp32 rounding
// (each rank's piece of the whole space, as a checkpoint writes it).
TEST_CASE("the whole model's state is gathered from the ranks holding its pieces, in chunks of any size",
          "[trainer][moe][expert_parallel]") {
  Communicator& comm = world();
  const int W = comm.world_size();
  auto master = [&](int group, size_t chunk) {
    Trainer trainer(moe_config(1, group, W), comm);
    trainer.train_step(1);
    WholeState state(trainer.engine(), trainer.model(), comm, chunk);
    state.gather();
    std::vector<float> values[3];
    for (size_t k = 0; k < 3; ++k) {
      values[k].resize(state.held().size());
      state.read_state(kStateTensors[k], state.held(), values[k].data());
    }
    return std::vector<std::vector<float>>(std::begin(values), std::end(values));
  };
  const auto whole = master(1, size_t(4) << 20);
  const auto split = master(W, size_t(4) << 20), chunks = master(W, 1000);
  for (size_t k = 0; k < 3; ++k) {
    INFO("state tensor " << k);
    CHECK(chunks[k] == split[k]);
    // Adam's first step is lr times the gradient's sign: where a gradient is near zero, rounding may
    // turn it; the whole stays within rounding.
    REQUIRE(split[k].size() == whole[k].size());
    double norm = 0, diff = 0;
    for (size_t i = 0; i < whole[k].size(); ++i) {
      norm += double(whole[k][i]) * whole[k][i];
      diff += double(split[k][i] - whole[k][i]) * (split[k][i] - whole[k][i]);
    }
    CHECK(norm > 0);
    CHECK(std::sqrt(diff) <= 1e-4 * std::sqrt(norm));
  }
}

TEST_CASE("a checkpoint written with expert parallelism resumes with another group size, or none",
          "[trainer][moe][expert_parallel]") {
  Communicator& comm = world();
  const int G = comm.world_size();
  const std::string dir = zt::test::shared_dir("expert_parallel", "resume");
  auto run = [&](int group, const std::string& name, const std::string& resume) {
    config::Config c = moe_config(3, group, G);
    c.training.checkpoint_dir = dir + "/" + name;
    c.training.save_interval = 2;
    c.training.metrics = dir + "/" + name + ".jsonl";
    if (!resume.empty()) c.training.resume = {config::ResumeFrom::Path, resume};
    REQUIRE(Trainer(c, comm).run() == 0);
    comm.control().barrier();
    std::vector<double> losses;
    for (const nlohmann::json& r : zt::test::step_records(c.training.metrics)) losses.push_back(r.at("loss"));
    return losses;
  };
  const std::vector<double> straight = run(G, "split", "");
  // The rows of the group's other ranks a rank keeps are in the memory plan, to the byte.
  const size_t planned = plan_memory(moe_config(3, G, G), G).activations;
  for (const nlohmann::json& peak : zt::test::records(dir + "/split.jsonl", "summary").at(0).at("memory_peak"))
    CHECK(peak.at("activations").get<size_t>() == planned);
  CHECK(planned > plan_memory(moe_config(3, 1, G), G).activations);
  const std::vector<double> resumed = run(1, "whole", dir + "/split/step_00000002");
  REQUIRE(straight.size() == 3);
  REQUIRE(resumed.size() == 1);  // step 3
  CHECK(std::abs(resumed[0] - straight[2]) <= 1e-5 * std::abs(straight[2]));
}
