// zerotrain: the command line. Parses arguments and hands them to lib/; no logic of its own.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <charconv>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <spdlog/spdlog.h>
#include <string>
#include <vector>

#include "ckpt/hf_export.hpp"
#include "comm/world.hpp"
#include "config/config.hpp"
#include "config/local_rank_argument.hpp"
#include "config/model_block.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/threads.hpp"
#include "inference/eval_command.hpp"
#include "inference/generate_command.hpp"
#include "plot/curves.hpp"
#include "model/gpt_layout.hpp"
#include "zero/deepspeed_estimate.hpp"
#include "zero/memory_estimate.hpp"
#include "comm/foreign_launcher.hpp"
#include "train/resolved_config_file.hpp"
#include "train/output_locks.hpp"
#include "train/output_paths.hpp"
#include "train/run.hpp"
#include "train/stop_signals.hpp"
#include "subcommand.hpp"

#ifndef ZT_VERSION
#define ZT_VERSION "unknown"
#endif

namespace {

constexpr int kExitUsage = 2;  // config and command-line errors, found before anything is allocated

const char* const kExamples = R"(Examples:
  zerotrain --config zero2                        train the toy model on the shipped corpus (ZeRO stage 2)
  scripts/launch.sh -n 4 -- zerotrain --config zero3 --steps 200
  zerotrain --config ds_config.json --model gpt2-124m --data train.bin --set zero_optimization.stage=3
  zerotrain --config zero2 --print-config --world-size 8
  zerotrain --config zero3_offload --dry-run
  zerotrain estimate --model gpt2-1.5b --world-size 8
  zerotrain export checkpoints -o hf_model --dtype bf16
  zerotrain tokenize --tokenizer Qwen3-0.6B/ chats.jsonl -o chats.bin --val 5%
  zerotrain generate --model checkpoints --prompt "And God said"
  zerotrain eval --model checkpoints --data data/tinytext/val.txt

Checkpoints: --set training.checkpoint_dir=DIR --set training.save_interval=N saves every N steps
and at the end; --set training.resume=auto continues from DIR's latest checkpoint when there is one
(at any world size and ZeRO stage).

Stopping: Ctrl-C (SIGINT), SIGTERM or SIGUSR1 stops training after the current step, saves a
checkpoint when training.checkpoint_dir is set, skips the final eval and training.save_final, and
exits with status 75 (EX_TEMPFAIL): interrupted; run the same command with training.resume auto to
continue. SIGINT or SIGTERM a second time ends it at once. Through scripts/launch.sh, Ctrl-C does
this for every rank.
During set-up (before the first step) a stop signal ends the process at once with exit status
128 + the signal's number (130 for SIGINT, 143 for SIGTERM, 138 for SIGUSR1).

Every config key with its default: docs/config.md; data formats: docs/data.md; the metrics file and
the run's summary: docs/metrics.md; launchers, hostfiles and SLURM: docs/launching.md.
)";

const char* const kEstimateExamples = R"(Examples:
  zerotrain estimate --model gpt2-1.5b --world-size 8
  zerotrain estimate --params 7b --world-size 64 --nodes 8 --largest-layer 131m
  zerotrain estimate --model configs/models/gpt2-124m.json --world-size 4 --dtype fp32

Below zerotrain's table, DeepSpeed's estimators for the same model (estimate_zero2/zero3_model_states_mem_needs,
as DeepSpeed computes them) and why the two differ.
)";

const char* const kExportExamples = R"(CHECKPOINT_DIR is training.checkpoint_dir (the checkpoint its `latest` file names) or one step
directory in it, saved at any ZeRO stage by any number of ranks. Writes OUT_DIR as transformers'
save_pretrained does for the model's family (gpt2, llama, mistral, qwen2, qwen3): config.json,
model.safetensors under Hugging Face names (or model-00001-of-0000N.safetensors and
model.safetensors.index.json above --max-shard-size), and the tokenizer files of the model
directory the run started from; the same files training.save_final writes for the same state, one
parameter group at a time. bf16 holds the master weights rounded to nearest even: exactly what a
bf16 run computed with.

Examples:
  zerotrain export checkpoints -o hf_model
  zerotrain export checkpoints/step_00001000 -o hf_model --dtype bf16 --max-shard-size 2GB
)";

// With no --config: DeepSpeed's defaults, batch sizes from the training block.
const char* const kDefaultConfig = R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"})";

struct TrainArgs {
  std::string config;
  std::string model, data, log_level = "info";
  int64_t steps = 0;
  std::vector<std::string> overrides;
  int world_size = 0;
  int64_t local_rank = 0;
  bool print_config = false, dry_run = false;
  CLI::Option *model_opt = nullptr, *data_opt = nullptr, *steps_opt = nullptr, *world_opt = nullptr,
              *local_rank_opt = nullptr;
};

struct EstimateArgs {
  std::string model, params, largest_layer, dtype = "bf16";
  int world_size = 0, nodes = 1;
};

struct ExportArgs {
  std::string checkpoint_dir, out_dir, dtype = "fp32", max_shard_size = "5GB";
};

struct PlotArgs {
  std::vector<std::string> metrics;
  std::string out;
};

zt::LogOptions log_options(int rank, const std::string& level, const std::string& dir = "") {
  zt::LogOptions o;
  o.rank = rank;
  o.level = level;
  o.log_dir = dir;
  return o;
}

// A positive integer option. CLI::PositiveNumber would report "Value 0 not in range 2.22507e-308 to
// 1.79769e+308"; this says what the option takes: "--steps: must be a positive integer, got 0".
template <typename Int>
CLI::Validator positive_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        Int n = 0;
        const char* end = text.data() + text.size();
        auto [stop, ec] = std::from_chars(text.data(), end, n);
        if (ec == std::errc() && stop == end && n > 0) return "";
        if (ec == std::errc::result_out_of_range && !text.empty() && text[0] != '-')
          return fmt::format("must be a positive integer up to {}, got {}", std::numeric_limits<Int>::max(), text);
        return "must be a positive integer, got " + text;
      },
      "POSITIVE");
}

// One "error: " line per line of the message (a config's errors come all at once, one per line).
int usage_error(const std::string& message) {
  for (size_t start = 0; start <= message.size();) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    std::fprintf(stderr, "error: %.*s\n", int(end - start), message.data() + start);
    start = end + 1;
  }
  return kExitUsage;
}

// --local_rank decides nothing (ranks come from the launcher); it is checked and noted.
void check_local_rank(const TrainArgs& a) {
  if (*a.local_rank_opt) spdlog::info("{}", zt::config::check_local_rank_argument(a.local_rank));
}

zt::config::Config resolve(const TrainArgs& a, int world_size) {
  zt::config::ResolveOptions o;
  o.world_size = world_size;
  o.overrides = a.overrides;
  if (*a.model_opt) o.model = a.model;
  if (*a.data_opt) o.data = a.data;
  if (*a.steps_opt) o.steps = a.steps;
  if (a.config.empty()) return zt::config::resolve_config(nlohmann::json::parse(kDefaultConfig), o, "default config");
  return zt::config::load_config(a.config, o);
}

int print_config(const TrainArgs& a, int argc, char** argv) {
  zt::World world(argc, argv);  // started by mpirun or srun: the world size comes from MPI
  if (world.rank() != 0) return 0;
  try {
    zt::init_logging(log_options(0, a.log_level));
    check_local_rank(a);
    auto config = resolve(a, *a.world_opt ? a.world_size : world.size());
    std::printf("%s\n", zt::config::to_json(config).dump(2).c_str());
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  return 0;
}

int train(const TrainArgs& a, int argc, char** argv) {
  if (auto problem = zt::foreign_launcher_problem()) return usage_error(*problem);
  zt::World world(argc, argv);
  // From here on, Ctrl-C, SIGTERM and SIGUSR1 stop training after the current step (during set-up
  // they end the process at once, status 128 + signal). Installed before any compute thread starts:
  // those never take the signals (train/stop_signals.hpp).
  zt::StopSignals::install();
  const int rank = world.rank();

  // Every rank resolves the same config; the ranks agree on failure so none is left waiting.
  zt::config::Config config;
  std::optional<zt::OutputLocks> locks;  // checkpoint_dir and nvme_path, held until the run ends
  std::string error;
  try {
    zt::init_logging(log_options(rank, a.log_level));
    if (rank != 0) spdlog::set_level(spdlog::level::err);  // config warnings once, from rank 0
    check_local_rank(a);
    const int planned = *a.world_opt ? a.world_size : world.size();  // --world-size: --dry-run plans for N ranks
    config = resolve(a, planned);
    zt::check_output_paths(config, planned);  // before anything is opened for writing
    if (!a.dry_run) zt::prepare_outputs(config, rank, world.size());
    if (!a.dry_run && rank == 0) locks.emplace(config, world.size());
    zt::init_logging(log_options(rank, a.log_level, config.training.log_dir));
  } catch (const std::exception& e) {
    error = e.what();
  }
  const int first_failure = world.first_failure(!error.empty());
  if (first_failure >= 0) {
    if (rank == first_failure) usage_error(error);
    return kExitUsage;
  }
  if (rank == 0 && world.uses_mpi() && !world.mpi_thread_multiple())
    spdlog::warn("MPI does not provide MPI_THREAD_MULTIPLE; communication overlap may serialize");
  if (rank == 0) zt::log_resolved_config(config);

  try {
    return zt::run_training(world, config, {a.dry_run});
  } catch (const std::exception& e) {
    // The other ranks may be inside a collective: end them all now.
    zt::abort_job(1, fmt::format("rank {}: {}", rank, e.what()));
  }
}

int estimate(const EstimateArgs& a) {
  zt::MemoryEstimateOptions o;
  o.nodes = a.nodes;
  o.dtype = a.dtype;
  std::string what;
  if (a.model.empty() == a.params.empty()) return usage_error("estimate: give exactly one of --model and --params");
  try {
    std::string world;
    if (a.world_size > 0) {
      o.world_size = a.world_size;
    } else {  // stated, so that a table for one rank is never taken for a table of the job's
      const zt::LauncherWorldSize launcher = zt::launcher_world_size();
      o.world_size = launcher.ranks;
      world = launcher.variable.empty()
                  ? "world size 1: no launcher's world size in the environment (--world-size N for N ranks)\n"
                  : fmt::format("world size {} from {} (--world-size N for another)\n", launcher.ranks,
                                launcher.variable);
    }
    zt::DeepSpeedEstimateInputs ds;
    std::string largest_source = "unknown: give --largest-layer; counted as 0";
    if (!a.model.empty()) {
      auto model = zt::config::resolve_model_argument(a.model);
      const zt::GptShape shape = zt::config::shape_of(model);
      o.num_params = shape.num_params();
      what = fmt::format("model {}: {}\n", model.preset, zt::describe(shape));
      std::vector<std::pair<std::string, uint64_t>> tensors;
      for (const auto& t : zt::hf_tensors(shape)) {
        uint64_t n = 1;
        for (size_t d : t.shape) n *= d;
        tensors.emplace_back(t.name, n);
      }
      ds.largest_layer_params = zt::largest_module_params(tensors);
      largest_source = "the model's largest module";
    } else {
      o.num_params = zt::parse_param_count(a.params, "estimate --params");
    }
    if (!a.largest_layer.empty()) {
      ds.largest_layer_params = zt::parse_param_count(a.largest_layer, "estimate --largest-layer");
      largest_source = "--largest-layer";
    }
    auto rows = zt::estimate_model_state_memory(o);
    ds.total_params = o.num_params;
    ds.nodes = o.nodes;
    ds.gpus_per_node = o.world_size / o.nodes;
    std::printf("%s%s%s%s", world.c_str(), what.c_str(), zt::format_memory_estimate(o, rows).c_str(),
                zt::format_deepspeed_estimates(ds, zt::deepspeed_estimates(ds), largest_source).c_str());
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  return 0;
}

int plot(const PlotArgs& a) {
  try {
    zt::plot::plot_metrics_files(a.metrics, a.out);
  } catch (const std::exception& e) {
    return usage_error("plot: " + std::string(e.what()));
  }
  std::printf("wrote %s (%zu run%s)\n", a.out.c_str(), a.metrics.size(), a.metrics.size() == 1 ? "" : "s");
  return 0;
}

// One process, no MPI: reads the shard files and writes the consolidated weights.
int export_checkpoint(const ExportArgs& a) {
  try {
    zt::init_logging(log_options(0, "info"));
    zt::HfOutput output;
    output.dtype = zt::dtype_from_name(a.dtype);
    output.max_shard_bytes = zt::parse_byte_size(a.max_shard_size, "--max-shard-size");
    zt::export_checkpoint(a.checkpoint_dir, a.out_dir, output);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: export: %s\n", e.what());
    return 1;
  }
  spdlog::info("exported {} to {} ({})", a.checkpoint_dir, a.out_dir, a.dtype);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  zt::exec_with_passive_openmp_wait(argv);  // idle OpenMP threads sleep: core/threads.hpp
  CLI::App app{"zerotrain: GPT-2 training with ZeRO stages 0-3 (DeepSpeed configs) on CPUs, one process alone or "
               "many over MPI"};
  app.footer(kExamples);
  app.set_version_flag("--version", std::string("zerotrain ") + ZT_VERSION);
  app.require_subcommand(0, 1);

  TrainArgs t;
  app.add_option("--config,--deepspeed,--deepspeed_config", t.config,
                 "DeepSpeed JSON config: a file, or a preset in configs/ (zero0, zero1, zero2, zero2_offload, zero3, "
                 "zero3_offload); --deepspeed (the Hugging Face Trainer's spelling) and --deepspeed_config are the "
                 "same option");
  t.model_opt = app.add_option("--model", t.model,
                               "model: a preset (toy, gpt2-tiny, gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1.5b, "
                               "llama-tiny, qwen3-tiny, llama-3.2-1b, qwen3-0.6b, qwen2.5-0.5b) or a JSON file such "
                               "as configs/models/toy.json");
  t.data_opt = app.add_option("--data", t.data, "training data file (data.train)");
  t.steps_opt = app.add_option("--steps", t.steps, "optimizer steps (training.steps; default 100)")
                    ->check(positive_integer<int64_t>());
  app.add_option("--set", t.overrides,
                 "override one key, KEY=VALUE (VALUE is JSON when it parses, else a string); repeatable")
      ->allow_extra_args(false);
  app.add_flag("--print-config", t.print_config, "print the resolved config as JSON on stdout and exit");
  app.add_flag("--dry-run", t.dry_run, "resolve, build the model and engine plan, print the memory plan, exit");
  t.world_opt = app.add_option("--world-size", t.world_size,
                               "with --print-config or --dry-run: resolve and plan as if N ranks ran")
                    ->check(positive_integer<int>());
  t.local_rank_opt = app.add_option("--local_rank,--local-rank", t.local_rank,
                                    "what torch.distributed.launch and the deepspeed launcher pass: accepted and "
                                    "checked against the launcher's local rank (ranks come from the launcher)");
  app.add_option("--log-level", t.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();

  EstimateArgs e;
  auto est = app.add_subcommand("estimate", "per-rank model-state memory of ZeRO stages 0-3, with and without offload");
  est->footer(kEstimateExamples);
  auto est_model = est->add_option("--model", e.model, "model preset or JSON file");
  est->add_option("--params", e.params, "number of parameters: 124439808, 1.5e9, 350m, 7b")->excludes(est_model);
  est->add_option("--largest-layer", e.largest_layer,
                  "parameters of the largest layer, for DeepSpeed's stage-3 figures (from --model when given)");
  est->add_option("--world-size", e.world_size,
                  "number of ranks N (all nodes); default: the launcher's (OMPI_COMM_WORLD_SIZE, PMI_SIZE, "
                  "SLURM_NTASKS, WORLD_SIZE), else 1")
      ->check(positive_integer<int>());
  est->add_option("--nodes", e.nodes, "number of nodes M (host memory is reported per node)")
      ->check(positive_integer<int>())
      ->capture_default_str();
  est->add_option("--dtype", e.dtype, "bf16 or fp16 (2+2+12 bytes per parameter) or fp32 (4+4+8)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}))
      ->capture_default_str();

  ExportArgs x;
  auto exp = app.add_subcommand("export", "consolidate a checkpoint into a Hugging Face model directory OUT_DIR "
                                          "(config.json, safetensors, tokenizer files)");
  exp->footer(kExportExamples);
  exp->add_option("CHECKPOINT_DIR", x.checkpoint_dir, "training.checkpoint_dir (its latest) or one step directory")
      ->required();
  exp->add_option("-o,--output", x.out_dir, "output directory (OUT_DIR)")->required();
  exp->add_option("--dtype", x.dtype, "fp32 (the master weights), bf16 or fp16 (rounded to nearest even)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  exp->add_option("--max-shard-size", x.max_shard_size,
                  "largest safetensors file before the weights are split into shards with an index (5GB, "
                  "500MB, 2GiB, or bytes), as transformers' max_shard_size")
      ->check([](const std::string& text) {
        try {
          zt::parse_byte_size(text, "--max-shard-size");
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
        return std::string();
      })
      ->capture_default_str();

  PlotArgs p;
  auto plt = app.add_subcommand("plot", "draw the training curves of metrics files (training.metrics) as one SVG");
  plt->footer("Example:\n  zerotrain plot zero1.jsonl zero3.jsonl -o curves.svg\n\nLoss (train and val), "
              "learning rate, gradient norm and tokens/s against the step; several runs overlaid.\n");
  plt->add_option("METRICS", p.metrics, "metrics files, one run each")->required();
  plt->add_option("-o,--output", p.out, "the SVG file to write")->required();

  zt::cli::Subcommand tokenize = zt::cli::tokenize_subcommand(app);
  zt::GenerateCommand generate(app);
  zt::EvalCommand evaluate(app);

  try {
    app.parse(argc, argv);
    if (*t.world_opt && !t.print_config && !t.dry_run)
      throw CLI::ValidationError("--world-size", "only with --print-config or --dry-run (a run's world size is "
                                                  "the number of ranks launched)");
  } catch (const CLI::ParseError& err) {
    if (err.get_exit_code() == 0) return app.exit(err);  // --help, --version
    return usage_error(std::string(err.what()) + " (run with --help for usage)");
  }

  if (est->parsed()) return estimate(e);
  if (exp->parsed()) return export_checkpoint(x);
  if (plt->parsed()) return plot(p);
  if (tokenize.command->parsed()) return tokenize.run(argc, argv);
  if (generate.parsed()) return generate.run();
  if (evaluate.parsed()) return evaluate.run(argc, argv);
  if (t.print_config) return print_config(t, argc, argv);
  return train(t, argc, argv);
}
