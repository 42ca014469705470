// `zerotrain estimate`: per-rank model-state memory of ZeRO stages 0-3, beside DeepSpeed's estimators.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli_options.hpp"
#include "comm/foreign_launcher.hpp"
#include "config/model_block.hpp"
#include "model/gpt_layout.hpp"
#include "subcommand.hpp"
#include "zero/deepspeed_estimate.hpp"
#include "zero/memory_estimate.hpp"

namespace zt::cli {

namespace {

const char* const kEstimateExamples = R"(Examples:
  zerotrain estimate --model gpt2-1.5b --world-size 8
  zerotrain estimate --params 7b --world-size 64 --nodes 8 --largest-layer 131m
  zerotrain estimate --model configs/models/gpt2-124m.json --world-size 4 --dtype fp32
  zerotrain estimate --model Qwen3-0.6B/ --world-size 8
  zerotrain estimate --model qwen3-30b-a3b --world-size 16 --autoep-size 8

--model takes a preset, a model file or a Hugging Face model directory of any family zerotrain
trains (GPT-2, the llama family, Gemma, the mixtures of experts: every expert counted). Below
zerotrain's table, DeepSpeed's estimators for the same model (estimate_zero2/zero3_model_states_mem_needs,
as DeepSpeed computes them) and why the two differ.
)";

struct EstimateArgs {
  std::string model, params, largest_layer, dtype = "bf16";
  int world_size = 0, nodes = 1, autoep_size = 1;
};

// The world size asked for, else the launcher's; stated, so that a table for one rank is never
// taken for a table of the job's.
std::string world_size_of(const EstimateArgs& a, MemoryEstimateOptions& o) {
  if (a.world_size > 0) {
    o.world_size = a.world_size;
    return "";
  }
  const LauncherWorldSize launcher = launcher_world_size();
  o.world_size = launcher.ranks;
  return launcher.variable.empty()
             ? "world size 1: no launcher's world size in the environment (--world-size N for N ranks)\n"
             : fmt::format("world size {} from {} (--world-size N for another)\n", launcher.ranks, launcher.variable);
}

// The model's parameters and its largest module (DeepSpeed's stage-3 figures need it).
std::string model_of(const EstimateArgs& a, MemoryEstimateOptions& o, DeepSpeedEstimateInputs& ds) {
  const config::ModelConfig model = config::resolve_model_argument(a.model);
  o.num_params = model.shape.num_params();
  std::vector<std::pair<std::string, uint64_t>> tensors;
  for (const auto& t : hf_tensors(model.shape)) {
    uint64_t n = 1;
    for (size_t d : t.shape) n *= d;
    tensors.emplace_back(t.name, n);
  }
  ds.largest_layer_params = largest_module_params(tensors);
  if (a.autoep_size > 1) {  // expert parallelism: the experts split over groups of autoep_size ranks
    if (!model.shape.moe.enabled() || model.shape.moe.num_experts % a.autoep_size != 0)
      fail("estimate --autoep-size {}: the model ({}) has no experts to split into {} equal shares", a.autoep_size,
           model.preset, a.autoep_size);
    o.autoep_size = a.autoep_size;
    for (const auto& [name, n] : tensors) o.expert_params += name.find(".experts.") != std::string::npos ? n : 0;
  }
  const std::string active = model.shape.moe.enabled()
                                 ? fmt::format(", {} parameters ({} active per token)", model.shape.num_params(),
                                               model.shape.active_params())
                                 : "";
  return fmt::format("model {}: {}{}\n", model.preset, describe(model.shape), active);
}

int estimate(const EstimateArgs& a) {
  MemoryEstimateOptions o;
  o.nodes = a.nodes;
  o.dtype = a.dtype;
  if (a.model.empty() == a.params.empty()) return usage_error("estimate: give exactly one of --model and --params");
  try {
    const std::string world = world_size_of(a, o);
    DeepSpeedEstimateInputs ds;
    std::string what, largest_source = "unknown: give --largest-layer; counted as 0";
    if (!a.model.empty()) {
      what = model_of(a, o, ds);
      largest_source = "the model's largest module";
    } else {
      if (a.autoep_size > 1) fail("estimate --autoep-size: only with --model (a model with experts)");
      o.num_params = parse_param_count(a.params, "estimate --params");
    }
    if (!a.largest_layer.empty()) {
      ds.largest_layer_params = parse_param_count(a.largest_layer, "estimate --largest-layer");
      largest_source = "--largest-layer";
    }
    auto rows = estimate_model_state_memory(o);
    ds.total_params = o.num_params;
    ds.nodes = o.nodes;
    ds.gpus_per_node = o.world_size / o.nodes;
    std::printf("%s%s%s%s", world.c_str(), what.c_str(), format_memory_estimate(o, rows).c_str(),
                format_deepspeed_estimates(ds, deepspeed_estimates(ds), largest_source).c_str());
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  return 0;
}

}  // namespace

Subcommand estimate_subcommand(CLI::App& app) {
  auto [est, a] = add_command<EstimateArgs>(
      app, "estimate", "per-rank model-state memory of ZeRO stages 0-3, with and without offload", kEstimateExamples);
  auto model = est->add_option("--model", a->model, "model preset, JSON file or Hugging Face model directory");
  est->add_option("--params", a->params, "number of parameters: 124439808, 1.5e9, 350m, 7b")->excludes(model);
  est->add_option("--largest-layer", a->largest_layer,
                  "parameters of the largest layer, for DeepSpeed's stage-3 figures (from --model when given)");
  est->add_option("--world-size", a->world_size,
                  "number of ranks N (all nodes); default: the launcher's (OMPI_COMM_WORLD_SIZE, PMI_SIZE, "
                  "SLURM_NTASKS, WORLD_SIZE), else 1")
      ->check(positive_int());
  est->add_option("--nodes", a->nodes, "number of nodes M (host memory is reported per node)")
      ->check(positive_int())
      ->capture_default_str();
  est->add_option("--autoep-size", a->autoep_size,
                  "expert parallelism (expert_parallel.autoep_size): the experts of --model split over groups of "
                  "this many ranks, each rank's sharded over the ranks holding the same")
      ->check(positive_int())
      ->capture_default_str();
  est->add_option("--dtype", a->dtype, "bf16 or fp16 (2+2+12 bytes per parameter) or fp32 (4+4+8)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}))
      ->capture_default_str();
  return {est, [a = a](int, char**) { return estimate(*a); }};
}

}  // namespace zt::cli
