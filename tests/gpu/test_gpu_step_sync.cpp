// A training step on the GPU makes the host wait for the device once, and with training.cuda_graph
// replays its micro-batches as graphs with the eager bits. The wait: between the step's first
// device work and its last there is no synchronising call of the CUDA runtime (stream, event and
// device synchronisations, blocking copies and memsets, copies to pageable memory, frees) and no
// allocation; after its last work the step reads what it reports (the losses, the gradient norm,
// the overflow flag) in one synchronising call. GPT-2 (toy) at stages 0-3 and llama-tiny at
// stages 0 and 3 in bf16, GPT-2 at stage 0 in fp32; two micro-batches a step, gradient clipping.
// Counted through the emulated runtime, which also counts the cuBLASLt objects made: none after
// the first step, and the graph launches. On a GPU, where nothing counts the calls, the test
// checks that the steps run and report finite losses and norms, and the graphs' bits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "comm/local_communicator.hpp"
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
        Backend& backend = select_backend("cuda", 0, 1, dtype_from_name(c.dtype()));
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
  struct Run {
    std::vector<double> losses, norms;
    std::vector<float> params;
  };
  auto run = [](config::Config c, bool graphs) {
    c.training.cuda_graph = graphs;
    Backend& backend = select_backend("cuda", 0, 1, dtype_from_name(c.dtype()));
    auto comm = make_local_communicator(backend.device);
    Trainer trainer(c, *comm, backend);
    Run r;
    for (int step = 1; step <= 3; ++step) {
      TrainStepResult out;
      const StepCalls calls = traced([&] { out = trainer.train_step(step); });
      // The first step runs eagerly; the second captures and launches, the later ones launch.
      if (calls.graph_launches >= 0) CHECK(calls.graph_launches == (graphs && step > 1 ? 2 : 0));
      if (step > 1) CHECK(calls.inside.empty());  // the first allocates
      r.losses.push_back(out.loss);
      r.norms.push_back(out.result.grad_norm);
    }
    r.params.resize(trainer.model().layout().total);
    trainer.engine().gather_master(r.params.data());
    return r;
  };
  for (const std::string model : {"toy", "llama-tiny"})
    for (const std::string dtype : {"bf16", "fp32"})
      for (int stage : {0, 1}) {
        if (dtype == "fp32" && (model != "toy" || stage != 0)) continue;
        INFO(model << " " << dtype << " stage " << stage);
        const config::Config c = step_config(model, stage, dtype);
        const Run eager = run(c, false), replayed = run(c, true);
        CHECK(eager.losses[1] != eager.losses[2]);
        CHECK(replayed.losses == eager.losses);
        CHECK(replayed.norms == eager.norms);
        CHECK(replayed.params == eager.params);
      }
}
