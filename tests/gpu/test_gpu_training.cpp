// The trainer on one GPU (world of one rank, no MPI): the toy model (GPT-2) and the llama family's
// tiny presets (llama-tiny: RMSNorm, RoPE, SwiGLU, grouped-query attention; qwen3-tiny: and the
// q/k norms; a Qwen2 of llama-tiny's shape: q/k/v biases, an untied head; Qwen3-MoE and Qwen2-MoE:
// the experts' routing, grouping and combination, the load-balancing loss, a gated shared expert)
// against the CPU path, ZeRO stages against each other, a run against its rerun, state offloaded
// to host memory or files against resident, and no allocation in a step after the first.
//
// What is exact and what is not: the GPU and the CPU differ in every summation order (cuBLASLt
// against oneDNN, flash attention against the explicit softmax), so GPU against CPU agrees within
// a tolerance (fp32: 2e-5 relative on every step's loss, kFp32LossTolerance below; bf16, where the
// GPU also keeps its activations in bf16 and the CPU in fp32: 1%). On the GPU itself every kernel is deterministic
// and a world of one rank sums nothing across ranks, so stages 0-3 give the same bits (as they do
// on the CPU at a fixed world size), a rerun gives the same bits, and the host AdamW of offloaded
// state gives the GPU AdamW's bits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "comm/local_communicator.hpp"
#include "config/config.hpp"
#include "config/model_block.hpp"
#include "core/ledger.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "model/gpt_layout.hpp"
#include "train/trainer.hpp"

#include "steady_allocations.hpp"
#include "step_config.hpp"
using namespace zt;

namespace {

// Built as test_gpu_training_emulated, every CUDA thread runs on the CPU
// (tests/kernels_cuda/cuda_emulator.hpp): shorter sequences and runs keep it to seconds
// (ZT_TEST_FULL_LENGTH: the GPU's lengths, for bench/cuda/fp32_tolerance.sh).
#if defined(ZT_TEST_EMULATED) && !defined(ZT_TEST_FULL_LENGTH)
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif
int steps(int n) { return kEmulated ? (n + 2) / 3 : n; }

// fp32 GPU against CPU: both sum in fp32 with fused multiply-adds, in different orders (cuBLASLt's
// blocking and split-K against oneDNN's; the kernels' reductions), and Adam carries the rounding
// differences from step to step. Measured on the emulator at these lengths with the GEMM summed in
// several orders (bench/cuda/fp32_tolerance.sh, bench/RESULTS.md): at most 3.8e-6 relative over 20
// steps; the tolerance is five times that.
constexpr double kFp32LossTolerance = 2e-5;

struct Spec {
  int stage = 0;
  std::string dtype = "fp32";
  bool offload = false;  // optimizer state (and at stage 3 the parameters) in pinned host memory
  std::string offload_to = "cpu";  // or "nvme": in files under the system's temporary directory
  std::string model = "toy";       // a preset
  std::string model_type = "";     // instead of the preset's (qwen2: q, k and v biases)
  bool tied = true;                // false: an LM head of its own
  bool lora = false;               // LoRA adapters on every projection (dropout 0.1), the base frozen
  bool cuda_graph = false;         // training.cuda_graph
  bool fp32_routers = false;       // data_types.keep_in_fp32_modules "auto": the routers kept in fp32
};

// The llama family's presets: each of their operators on the GPU.
const std::vector<std::string> kLlamaFamily = {"llama-tiny", "qwen3-tiny"};

// Mixtures of experts, from the architectures of transformers-made directories (their weights not
// read): Qwen3-MoE with the load-balancing loss, Qwen2-MoE with its gated shared expert.
std::string moe_fixture(const std::string& name) { return std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/" + name; }
const std::vector<std::string> kMoeFamilies = {moe_fixture("qwen3_moe_aux_fp32"), moe_fixture("qwen2_moe_fp32")};

// A preset (toy by default) on the shipped corpus (step_config's buckets, which cut groups in odd
// places), one micro-batch of 4 a step, 20 steps.
config::Config run_config(const Spec& s) {
  config::Config c = test::step_config(s.model, s.stage, s.dtype);
  c.train_micro_batch_size_per_gpu = 4;
  c.gradient_accumulation_steps = 1;
  c.zero.stage3_max_reuse_distance = 1;
  if (s.offload) {
    c.zero.offload_optimizer.device = *kOffloadDeviceNames.find(s.offload_to);
    if (s.stage == 3) c.zero.offload_param.device = *kOffloadDeviceNames.find(s.offload_to);
    c.zero.offload_optimizer.nvme_path = c.zero.offload_param.nvme_path = std::filesystem::temp_directory_path();
    c.zero.sub_group_size = 5000;  // several sub-groups, several file records
  }
  c.optimizer.beta1 = 0.9;
  c.optimizer.beta2 = 0.95;
  c.optimizer.weight_decay = 0.1;
  c.model.shape.vocab_size = std::max(c.model.shape.vocab_size, 256);  // the shipped corpus is bytes
  if (!s.model_type.empty()) c.model.shape.model_type = *kModelTypeNames.find(s.model_type);
  if (c.model.shape.model_type == ModelType::Gemma2) {  // (1 + w) norms, GeGLU, soft-capping, a window
    GptShape& g = c.model.shape;
    g.sliding_window = 8;
    g.layer_types = {LayerAttention::Sliding, LayerAttention::Full};
    g.query_pre_attn_scalar = 8;
    g.attn_logit_softcapping = 1.5;
    g.final_logit_softcapping = 2.0;
  }
  if (!s.tied) c.model.shape.tied_head = false;
  if (s.lora) {
    c.lora.enabled = true;
    c.lora.r = 4;
    c.lora.alpha = 8;
    c.lora.dropout = 0.1;
    c.lora.target_modules = {"all-linear"};
  }
  c.training.cuda_graph = s.cuda_graph;
  if (s.fp32_routers) c.keep_in_fp32_modules = fp32_module_patterns(c.model.shape);
  c.data.seq_len = 64;
  c.training.eval_batches = 4;  // a few windows, not the whole file
  if (kEmulated) {
    c.train_micro_batch_size_per_gpu = c.train_batch_size = 2;
    c.data.seq_len = 32;
    c.training.eval_batches = 1;
  }
  c.training.steps = 20;
  return c;
}

Backend& backend_for(const std::string& device, const config::Config& c) {
  return select_backend(*kDeviceChoiceNames.find(device), 0, 1, c.training_dtype());
}

struct RunResult {
  std::vector<double> losses;
  std::vector<float> params;  // consolidated fp32 master weights after the run
};

RunResult train(const std::string& device, const Spec& spec, int steps) {
  const config::Config c = run_config(spec);
  Backend& backend = backend_for(device, c);
  auto comm = make_local_communicator(backend.device);
  Trainer trainer(c, *comm, backend);
  RunResult r;
  for (int s = 1; s <= steps; ++s) r.losses.push_back(trainer.train_step(s).loss);
  r.params.resize(trainer.model().layout().total);
  trainer.engine().gather_master(r.params.data());
  return r;
}

bool same_bits(const RunResult& a, const RunResult& b) {
  return a.losses == b.losses && a.params.size() == b.params.size() &&
         std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)) == 0;
}

// GPT-2 (toy) at stages 0 and 3, the llama family at stage 0, a Qwen2 (q/k/v biases) with an
// untied head, a Gemma 2 of llama-tiny's shape, and the mixtures of experts (one at stage 3, its
// parameters gathered per group).
std::vector<Spec> parity_runs(const std::string& dtype) {
  std::vector<Spec> runs{{0, dtype}, {3, dtype}};
  for (const std::string& model : kLlamaFamily) runs.push_back({0, dtype, false, "cpu", model});
  runs.push_back({0, dtype, false, "cpu", "llama-tiny", "qwen2", false});
  runs.push_back({0, dtype, false, "cpu", "llama-tiny", "gemma2"});
  runs.push_back({0, dtype, false, "cpu", kMoeFamilies[0]});
  runs.push_back({3, dtype, false, "cpu", kMoeFamilies[1]});
  return runs;
}

}  // namespace

TEST_CASE("the trainer runs on the GPU when asked", "[gpu][train][smoke]") {
  const config::Config c = run_config({0, "bf16"});
  Backend& backend = backend_for("cuda", c);
  REQUIRE(backend.device.kind() == DeviceKind::Cuda);
  auto comm = make_local_communicator(backend.device);
  Trainer trainer(c, *comm, backend);
  CHECK(trainer.model().dtype() == DType::BF16);
  // The model's parameters and activations live in device memory.
  const auto s = MemoryLedger::instance().stats();
  CHECK(s.cur(MemSpace::Device, MemCategory::Params) >= trainer.model().layout().total * 2);
  CHECK(s.cur(MemSpace::Device, MemCategory::Activations) > 0);
  const double first = trainer.train_step(1).loss;
  double last = first;
  for (int step = 2; step <= steps(30); ++step) last = trainer.train_step(step).loss;
  CHECK(std::isfinite(first));
  CHECK(last < first - 1.0);
}


TEST_CASE("fp32: 20 steps on the GPU follow the CPU within 2e-5, for every model family", "[gpu][train][parity]") {
  for (const Spec& spec : parity_runs("fp32")) {
    INFO(spec.model << " " << spec.model_type << (spec.tied ? "" : " untied") << " stage " << spec.stage);
    const RunResult cpu = train("cpu", spec, steps(20));
    const RunResult gpu = train("cuda", spec, steps(20));
    double worst = 0;
    for (size_t i = 0; i < cpu.losses.size(); ++i) {
      INFO("step " << i + 1 << ": cpu " << cpu.losses[i] << " gpu " << gpu.losses[i]);
      const double relative = std::abs(gpu.losses[i] - cpu.losses[i]) / std::abs(cpu.losses[i]);
      worst = std::max(worst, relative);
      CHECK(relative <= kFp32LossTolerance);
    }
    std::printf("fp32 %s %s stage %d: largest relative loss difference GPU - CPU over %zu steps: %.3g\n",
                spec.model.c_str(), spec.model_type.c_str(), spec.stage, cpu.losses.size(), worst);
    // Parameters are not compared element by element: gradients that vanish in exact arithmetic
    // (the attention key biases) are rounding noise on both, and Adam turns noise into steps of
    // either sign. The loss does not depend on them.
  }
}

TEST_CASE("bf16: 20 steps on the GPU follow the CPU within 1%, for every model family", "[gpu][train][parity]") {
  for (const Spec& spec : parity_runs("bf16")) {
    INFO(spec.model << " " << spec.model_type << (spec.tied ? "" : " untied") << " stage " << spec.stage);
    const RunResult cpu = train("cpu", spec, steps(20));
    const RunResult gpu = train("cuda", spec, steps(20));
    for (size_t i = 0; i < cpu.losses.size(); ++i) {
      INFO("step " << i + 1 << ": cpu " << cpu.losses[i] << " gpu " << gpu.losses[i]);
      CHECK(std::abs(gpu.losses[i] - cpu.losses[i]) <= 0.01 * std::abs(cpu.losses[i]));
    }
  }
}

TEST_CASE("stages 0-3 give the same bits on the GPU, as on the CPU, for every model family", "[gpu][train][stages]") {
  for (const std::string& model : {std::string("toy"), kLlamaFamily[0], kLlamaFamily[1]})
    for (std::string dtype : {"fp32", "bf16"}) {
      const RunResult reference = train("cuda", {0, dtype, false, "cpu", model}, steps(5));
      for (int stage = 1; stage <= 3; ++stage) {
        INFO(model << " " << dtype << " stage " << stage << " against stage 0");
        CHECK(same_bits(train("cuda", {stage, dtype, false, "cpu", model}, steps(5)), reference));
      }
    }
}

TEST_CASE("a model with experts replays its micro-batches as CUDA graphs: the eager bits, no allocation after step 1",
          "[gpu][train][moe]") {
  // The routing stays on the device (the experts' grouped GEMMs read their rows' offsets there).
  Spec spec{0, "bf16", false, "cpu", kMoeFamilies[0]};
  const RunResult eager = train("cuda", spec, 3);
  spec.cuda_graph = true;
  CHECK(same_bits(train("cuda", spec, 3), eager));
  const config::Config c = run_config(spec);
  REQUIRE(c.training.cuda_graph);
  Backend& backend = backend_for("cuda", c);
  auto comm = make_local_communicator(backend.device);
  Trainer trainer(c, *comm, backend);
  CHECK(test::allocations_after_first_step(trainer) == 0);
}

TEST_CASE("bf16 with the routers kept in fp32: the GPU follows the CPU within 1% and reads the fp32 master",
          "[gpu][train][moe][fp32]") {
  // The router's product in fp32 over the cast bf16 input, its gradient in fp32, on the GPU as on
  // the CPU (which computes everything in fp32).
  Spec spec{0, "bf16", false, "cpu", kMoeFamilies[0]};
  spec.fp32_routers = true;
  const RunResult cpu = train("cpu", spec, steps(20));
  std::vector<double> stage0;
  for (int stage : {0, 3}) {
    INFO("stage " << stage);
    spec.stage = stage;
    const config::Config c = run_config(spec);
    Backend& backend = backend_for("cuda", c);
    auto comm = make_local_communicator(backend.device);
    Trainer trainer(c, *comm, backend);
    std::vector<double> losses{trainer.train_step(1).loss};
    const uint64_t after_first = MemoryLedger::instance().stats().allocations;
    for (int s = 2; s <= steps(20); ++s) losses.push_back(trainer.train_step(s).loss);
    CHECK(MemoryLedger::instance().stats().allocations == after_first);  // the fp32 scratch is planned
    for (size_t i = 0; i < cpu.losses.size(); ++i) {
      INFO("step " << i + 1 << ": cpu " << cpu.losses[i] << " gpu " << losses[i]);
      CHECK(std::abs(losses[i] - cpu.losses[i]) <= 0.01 * std::abs(cpu.losses[i]));
    }
    if (stage == 0) stage0 = losses;
    CHECK(losses == stage0);  // every stage reads the same values
    // What the model reads of each kept router is the fp32 master, bit for bit, not its bf16 rounding.
    const ParamLayout& layout = trainer.model().layout();
    std::vector<float> master(layout.total);
    trainer.engine().gather_master(master.data());
    size_t kept = 0, off_bf16 = 0, mismatched = 0;
    for (size_t g = 0; g < layout.groups.size(); ++g) {
      const ConstView read = trainer.engine().fetch_fp32(int(g));
      size_t at = 0;
      for (const TensorSpec& t : layout.groups[g].tensors) {
        if (!t.keep_fp32) continue;
        REQUIRE(read.data);
        std::vector<float> values(t.numel());
        backend.device.copy(values.data(), static_cast<const float*>(read.data) + at, values.size() * sizeof(float),
                            backend.device.compute());
        backend.device.synchronize(backend.device.compute());
        at += t.numel();
        for (size_t i = 0; i < values.size(); ++i) {
          const float want = master[t.offset + i];
          float rounded = want;
          cpu_backend().vector.round_to(DType::BF16, &rounded, 1);
          mismatched += std::memcmp(&values[i], &want, sizeof(float)) != 0;
          off_bf16 += want != rounded;
          ++kept;
        }
      }
    }
    CHECK(kept == layout.fp32_numel());
    CHECK(kept > 0);
    CHECK(mismatched == 0);
    CHECK(off_bf16 > kept / 2);
  }
  // Without the key the routers compute in bf16: other losses.
  spec.fp32_routers = false;
  spec.stage = 0;
  CHECK(train("cuda", spec, steps(20)).losses != stage0);
}

TEST_CASE("on the GPU only routers are read in fp32: another kept parameter is refused by name",
          "[gpu][train][moe][fp32]") {
  config::Config c = run_config({0, "bf16", false, "cpu", kMoeFamilies[0]});
  c.keep_in_fp32_modules = {"model.norm"};
  Backend& backend = backend_for("cuda", c);
  auto comm = make_local_communicator(backend.device);
  REQUIRE_THROWS_WITH(Gpt(c.model.shape, 2, 16, false, backend, config::trained_parts(c)),
                      Catch::Contains("model.norm.weight is kept in fp32") && Catch::Contains("only the routers"));
  CHECK_THROWS(Trainer(c, *comm, backend));  // which says so and stops
}

TEST_CASE("the same GPU run twice gives the same bits", "[gpu][train][determinism]") {
  for (Spec spec : {Spec{3, "bf16"}, Spec{2, "fp32"}}) {
    INFO(spec.dtype << " stage " << spec.stage);
    const RunResult a = train("cuda", spec, steps(10));
    const RunResult b = train("cuda", spec, steps(10));
    CHECK(same_bits(a, b));
  }
}

TEST_CASE("optimizer state offloaded to host memory or files on the GPU gives the resident run's bits",
          "[gpu][train][offload]") {
  // The host's AdamW (the CPU table) and the GPU's compute the same operations in the same order.
  for (int stage : {2, 3}) {
    INFO("bf16 stage " << stage);
    const RunResult resident = train("cuda", {stage, "bf16"}, steps(5));
    for (const std::string to : {"cpu", "nvme"}) {
      INFO("offloaded to " << to);
      CHECK(same_bits(train("cuda", {stage, "bf16", true, to}, steps(5)), resident));
    }
  }
}

TEST_CASE("LoRA on the GPU: the CPU's losses, the same bits at stages 0 and 3, no allocation after the first step",
          "[gpu][train][lora]") {
  for (const std::string& model : {std::string("toy"), kLlamaFamily[1]})
    for (std::string dtype : {"fp32", "bf16"}) {
      Spec spec{0, dtype, false, "cpu", model};
      spec.lora = true;
      INFO(model << " " << dtype);
      const RunResult cpu = train("cpu", spec, steps(8));
      const RunResult gpu = train("cuda", spec, steps(8));
      const double tolerance = dtype == "fp32" ? kFp32LossTolerance : 0.01;
      for (size_t i = 0; i < cpu.losses.size(); ++i) {
        INFO("step " << i + 1 << ": cpu " << cpu.losses[i] << " gpu " << gpu.losses[i]);
        CHECK(std::abs(gpu.losses[i] - cpu.losses[i]) <= tolerance * std::abs(cpu.losses[i]));
      }
      CHECK(gpu.losses.back() < gpu.losses.front());  // the adapters train
      spec.stage = 3;
      CHECK(same_bits(train("cuda", spec, steps(8)), gpu));
      const config::Config c = run_config(spec);
      Backend& backend = backend_for("cuda", c);
      auto comm = make_local_communicator(backend.device);
      Trainer trainer(c, *comm, backend);
      trainer.train_step(1);
      const uint64_t after_first = MemoryLedger::instance().stats().allocations;
      for (int64_t s = 2; s <= 3; ++s) trainer.train_step(s);
      CHECK(MemoryLedger::instance().stats().allocations == after_first);
    }
}

TEST_CASE("no step after the first allocates on the GPU", "[gpu][train][memory]") {
  std::vector<Spec> runs;  // GPT-2 at every stage, the llama family and a mixture of experts at stage 3
  for (std::string dtype : {"fp32", "bf16"}) {
    for (int stage = 0; stage <= 3; ++stage) runs.push_back({stage, dtype});
    for (const std::string& model : kLlamaFamily) runs.push_back({3, dtype, false, "cpu", model});
    runs.push_back({3, dtype, false, "cpu", kMoeFamilies[1]});
  }
  for (const Spec& spec : runs) {
    config::Config c = run_config(spec);
    c.data.val = c.data.train;  // evaluation between steps uses the same buffers
    c.training.eval_interval = 1;
    Backend& backend = backend_for("cuda", c);
    auto comm = make_local_communicator(backend.device);
    Trainer trainer(c, *comm, backend);
    const uint64_t allocations = test::allocations_after_first_step(trainer);
    INFO(spec.model << " " << spec.dtype << " stage " << spec.stage);
    CHECK(allocations == 0);
  }
}
