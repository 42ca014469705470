// A training step on the GPU makes the host wait for the device once, and with training.cuda_graph
// replays its micro-batches as graphs with the eager bits. The wait: between the step's first
// device work and its last there is no synchronising call of the CUDA runtime (stream, event and
// device synchronisations, blocking copies and memsets, copies to pageable memory, frees) and no
// allocation; after its last work the step reads what it reports (the losses, the gradient norm,
// the overflow flag) in one synchronising call. GPT-2 (toy) at stages 0-3 and llama-tiny at
// stages 0 and 3 in bf16, GPT-2 at stage 0 in fp32; two micro-batches a step, gradient clipping.
// Counted through the emulated runtime, which also counts the cuBLASLt objects made: none after
// the first step, and the graph launches. On a GPU, where nothing counts the calls, the test
// checks that the steps run and report finite losses and norms, and the graphs' bits. With a loss
// mask the replays give the eager bits too: a graph reads the counted targets of the micro-batch
// it replays, not those of the one it was captured from. A mixture of experts, likewise.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/local_communicator.hpp"
#include "core/rng.hpp"
#include "data/token_file_writer.hpp"
#include "kernels/backend.hpp"
#include "step_config.hpp"
#include "train/trainer.hpp"

#ifdef ZT_TEST_EMULATED
#include "emulated_device.hpp"
#endif

using namespace zt;
using zt::test::step_config;

namespace {

// What the runtime saw during one step: the calls that waited for the device or allocated before
// its last device work (from the step's start: nothing before its first kernel may wait either),
// and those after it.
struct StepCalls {
  std::vector<std::string> inside, after;
  uint64_t cublaslt_made = 0;
  int graph_launches = 0;
};

#ifdef ZT_TEST_EMULATED
template <typename F>
StepCalls traced(F&& step) {
  const uint64_t made = emu::cublaslt_creations();
  emu::start_trace();
  step();
  const std::vector<emu::TracedCall> calls = emu::stop_trace();
  const emu::Stalls stalls = emu::stalls_of(calls);
  StepCalls s{stalls.before_last_work, stalls.after_last_work, emu::cublaslt_creations() - made, 0};
  for (const emu::TracedCall& c : calls) s.graph_launches += c.what == "cudaGraphLaunch" ? 1 : 0;
  return s;
}
#else
template <typename F>
StepCalls traced(F&& step) {
  step();
  return {{}, {"not counted on a GPU"}, 0, -1};
}
#endif

struct Run {
  std::vector<double> losses, norms;
  std::vector<float> params;
};

Run run_steps(config::Config c, bool graphs, int steps) {
  c.training.cuda_graph = graphs;
  Backend& backend = select_backend(DeviceChoice::Cuda, 0, 1, c.training_dtype());
  auto comm = make_local_communicator(backend.device);
  Trainer trainer(c, *comm, backend);
  Run r;
  for (int step = 1; step <= steps; ++step) {
    TrainStepResult out;
    const StepCalls calls = traced([&] { out = trainer.train_step(step); });
    // The first step runs eagerly; the second captures and launches, the later ones launch.
    if (calls.graph_launches >= 0)
      CHECK(calls.graph_launches == (graphs && step > 1 ? int(c.gradient_accumulation_steps) : 0));
    if (step > 1) CHECK(calls.inside.empty());  // the first allocates
    r.losses.push_back(out.loss);
    r.norms.push_back(out.result.grad_norm);
  }
  r.params.resize(trainer.model().layout().total);
  trainer.engine().gather_master(r.params.data());
  return r;
}

// Random tokens of the toy model's vocabulary, each counting as a target with probability 1/2: the
// micro-batches count different numbers of targets.
std::string masked_token_file() {
  const auto dir = std::filesystem::path(ZT_BINARY_DIR) / "test-runs" / "gpu-step-sync-masked";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "masked.bin").string();
  std::vector<int32_t> tokens(4096);
  std::vector<uint8_t> counted(tokens.size());
  Rng rng(7);
  for (size_t i = 0; i < tokens.size(); i++) {
    tokens[i] = int32_t(rng.below(256));
    counted[i] = uint8_t(rng.below(2));
  }
  TokenFileWriter writer(path, 256);
  writer.append(tokens, counted);
  writer.finish();
  return path;
}

std::string joined(const std::vector<std::string>& calls) {
  std::string s;
  for (const std::string& c : calls) s += c + "; ";
  return s;
}

}  // namespace

TEST_CASE("a GPU training step waits for the device once, after its last kernel", "[gpu][train][sync][smoke]") {
  for (const std::string model : {"toy", "llama-tiny"})
    for (const std::string dtype : {"fp32", "bf16"})
      for (int stage = 0; stage <= 3; ++stage) {
        // GPT-2 in bf16 at every stage; the llama family's operators at the two ends; fp32 once.
        if (model != "toy" && (dtype == "fp32" || (stage != 0 && stage != 3))) continue;
        if (dtype == "fp32" && stage != 0) continue;
        INFO(model << " " << dtype << " stage " << stage);
        const config::Config c = step_config(model, stage, dtype);
        Backend& backend = select_backend(DeviceChoice::Cuda, 0, 1, c.training_dtype());
        auto comm = make_local_communicator(backend.device);
        Trainer trainer(c, *comm, backend);
        trainer.train_step(1);  // sizes the operators' scratch and makes the cuBLASLt objects
        TrainStepResult out;
        const StepCalls calls = traced([&] { out = trainer.train_step(2); });
        CHECK(std::isfinite(out.loss));
        CHECK(std::isfinite(out.result.grad_norm));
        INFO("inside the step: " << joined(calls.inside));
        CHECK(calls.inside.empty());
        INFO("after its last kernel: " << joined(calls.after));
        CHECK(calls.after.size() == 1);
        CHECK(calls.cublaslt_made == 0);
      }
}

TEST_CASE("micro-batches replayed as CUDA graphs give the eager bits", "[gpu][train][graph]") {
  for (const std::string model : {"toy", "llama-tiny"})
    for (const std::string dtype : {"bf16", "fp32"})
      for (int stage : {0, 1}) {
        if (dtype == "fp32" && (model != "toy" || stage != 0)) continue;
        INFO(model << " " << dtype << " stage " << stage);
        const config::Config c = step_config(model, stage, dtype);
        const Run eager = run_steps(c, false, 3), replayed = run_steps(c, true, 3);
        CHECK(eager.losses[1] != eager.losses[2]);
        CHECK(replayed.losses == eager.losses);
        CHECK(replayed.norms == eager.norms);
        CHECK(replayed.params == eager.params);
      }
}

// A mixture of experts (Qwen3-MoE's architecture with the load-balancing loss, from a transformers-made
// directory): the routing, the grouping by expert and the experts' grouped GEMMs stay on the device,
// so its steps wait once, allocate nothing after the first, and replay as graphs with the eager
// bits, the aux loss's gradient and the step's aux loss among them.
TEST_CASE("a model with experts waits once a step and replays its micro-batches as CUDA graphs with the eager bits",
          "[gpu][train][graph][moe]") {
  const std::string moe = std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/qwen3_moe_aux_fp32";
  for (const std::string dtype : {"bf16", "fp32"}) {
    INFO("qwen3_moe " << dtype);
    const config::Config c = step_config(moe, 0, dtype);
    REQUIRE(c.model.shape.moe.enabled());
    const Run eager = run_steps(c, false, 3), replayed = run_steps(c, true, 3);
    CHECK(eager.losses[1] != eager.losses[2]);
    CHECK(replayed.losses == eager.losses);
    CHECK(replayed.norms == eager.norms);
    CHECK(replayed.params == eager.params);
  }
}

// One micro-batch a step on one rank: its loss weight is always 1, so one graph replays every
// step while the number of targets that count changes.
TEST_CASE("with a loss mask, micro-batches replayed as CUDA graphs give the eager bits", "[gpu][train][graph][mask]") {
  const std::string data = masked_token_file();
  for (const std::string dtype : {"fp32", "bf16"}) {
    INFO(dtype);
    config::Config c = step_config("toy", 0, dtype);
    c.gradient_accumulation_steps = 1;
    c.train_batch_size = c.train_micro_batch_size_per_gpu;
    c.gradient_clipping = 0.0;  // the norm shows a wrong scale as it is
    c.data.train = {data};
    c.data.format = "llmc";
    const Run eager = run_steps(c, false, 5), replayed = run_steps(c, true, 5);
    CHECK(replayed.losses == eager.losses);
    CHECK(replayed.norms == eager.norms);
    CHECK(replayed.params == eager.params);
  }
}
