// `zerotrain [options]`: train (the default action), or print the resolved config, or plan a run.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "cli_options.hpp"
#include "comm/foreign_launcher.hpp"
#include "comm/world.hpp"
#include "config/config.hpp"
#include "model/gpt_shape.hpp"
#include "config/local_rank_argument.hpp"
#include "core/directories.hpp"
#include "core/error.hpp"
#include "metrics/tensorboard_monitor.hpp"
#include "subcommand.hpp"
#include "trainer_options.hpp"
#include "train/output_locks.hpp"
#include "train/output_paths.hpp"
#include "train/previous_run.hpp"
#include "train/resolved_config_file.hpp"
#include "train/resume_schedule.hpp"
#include "train/run.hpp"
#include "train/stop_signals.hpp"

namespace zt::cli {

namespace {

const char* const kExamples = R"(Examples:
  zerotrain --config zero2                        train the toy model on the shipped corpus (ZeRO stage 2)
  scripts/launch.sh -n 4 -- zerotrain --config zero3 --steps 200
  zerotrain --config ds_config.json --model gpt2-124m --data train.bin --set zero_optimization.stage=3
  zerotrain --deepspeed ds_z3.json --model_name_or_path Qwen3-0.6B/ --data chats.bin --learning_rate 2e-5 \
      --num_train_epochs 3 --per_device_train_batch_size 4 --bf16 --output_dir out
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

The Hugging Face Trainer's arguments (--learning_rate, --num_train_epochs, --per_device_train_batch_size,
--output_dir, --bf16, --report_to tensorboard, --load_best_model_at_end, ...) and TRL's and LLaMA-Factory's
LoRA flags (--use_peft, --lora_r, --lora_rank, --lora_target, --packing, --max_length, --cutoff_len, ...) set
the config keys they stand for, as --set does; others the Trainer takes that change nothing here (--do_train,
--run_name, ...) are accepted with a warning saying why.

Every config key with its default: docs/config.md; data formats: docs/data.md; the metrics file and
the run's summary: docs/metrics.md; launchers, hostfiles and SLURM: docs/launching.md.
)";

// With no --config: DeepSpeed's defaults, batch sizes from the training block.
const char* const kDefaultConfig =
    R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"})";

struct TrainArgs {
  std::string config;
  std::string model, data, log_level = "info";
  int64_t steps = 0;
  std::vector<std::string> overrides;
  int world_size = 0;
  int64_t local_rank = 0;
  bool print_config = false, dry_run = false, overwrite = false;
  CLI::Option *model_opt = nullptr, *data_opt = nullptr, *steps_opt = nullptr, *world_opt = nullptr,
              *local_rank_opt = nullptr;
  std::unique_ptr<TrainerOptions> trainer;
};

void add_train_options(CLI::App& app, TrainArgs& t) {
  app.add_option("--config,--deepspeed,--deepspeed_config", t.config,
                 "DeepSpeed JSON config: a file, or a preset in configs/ (zero0, zero1, zero2, zero2_offload, zero3, "
                 "zero3_offload); --deepspeed (the Hugging Face Trainer's spelling) and --deepspeed_config are the "
                 "same option");
  std::string presets;
  for (const GptPreset& p : gpt_presets()) presets += (presets.empty() ? "" : ", ") + std::string(p.name);
  t.model_opt = app.add_option("--model", t.model,
                               "model: a preset (" + presets +
                                   "), a JSON file such as configs/models/toy.json, or a Hugging Face model "
                                   "directory (GPT-2, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3, Qwen3-MoE, "
                                   "Qwen2-MoE, Mixtral, OLMoE) whose config.json gives the architecture");
  t.data_opt = app.add_option("--data", t.data, "training data file (data.train)");
  t.steps_opt =
      app.add_option("--steps", t.steps, "optimizer steps (training.steps; default 100)")->check(positive_int64());
  app.add_option("--set", t.overrides,
                 "override one key, KEY=VALUE (VALUE is JSON when it parses, else a string); repeatable")
      ->allow_extra_args(false);
  app.add_flag("--overwrite", t.overwrite,
               "start afresh over an earlier run where this one writes, removing its checkpoints, and write outputs "
               "where inputs lie (training.overwrite): an output directory may hold inputs, and save_final may "
               "replace the model directory it started from (written beside it, then swapped in)");
  app.add_flag("--print-config,--print_config", t.print_config, "print the resolved config as JSON on stdout and exit");
  app.add_flag("--dry-run,--dry_run", t.dry_run,
               "resolve, build the model and engine plan, print the memory plan, exit");
  t.world_opt = app.add_option("--world-size,--world_size", t.world_size,
                               "with --print-config or --dry-run: resolve and plan as if N ranks ran")
                    ->check(positive_int());
  t.local_rank_opt = app.add_option("--local_rank,--local-rank", t.local_rank,
                                    "what torch.distributed.launch and the deepspeed launcher pass: accepted and "
                                    "checked against the launcher's local rank (ranks come from the launcher)");
  app.add_option("--log-level,--log_level", t.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  t.trainer = std::make_unique<TrainerOptions>(app, t.steps_opt, t.model_opt);
}

// --local_rank decides nothing (ranks come from the launcher); it is checked and noted.
void check_local_rank(const TrainArgs& a) {
  if (*a.local_rank_opt) spdlog::info("{}", config::check_local_rank_argument(a.local_rank));
}

// Where TensorBoard's events go, as the Trainer's --report_to tensorboard and --logging_dir ask.
void note_tensorboard(const config::Config& c, const std::vector<config::TrainerArgumentValue>& given) {
  auto given_as = [&](const char* name) {
    return std::find_if(given.begin(), given.end(), [&](const auto& g) { return g.name == name; });
  };
  const auto logging_dir = given_as("logging_dir");
  if (c.tensorboard.enabled && (given_as("report_to") != given.end() || logging_dir != given.end()))
    spdlog::info("TensorBoard: events in {} (the Trainer's logging_dir)",
                 TensorboardMonitor::directory(c.tensorboard).string());
  else if (logging_dir != given.end())
    spdlog::warn("--logging_dir {}: nothing is written there without --report_to tensorboard (or a tensorboard block)",
                 logging_dir->value.value_or(""));
}

config::Config resolve(const TrainArgs& a, int world_size) {
  a.trainer->check_not_doubled();
  config::ResolveOptions o;
  o.world_size = world_size;
  o.overrides = a.overrides;
  o.resumed_position = resumed_position;  // a length in epochs counts from where a resume starts
  if (a.overwrite) o.overrides.insert(o.overrides.begin(), "training.overwrite=true");
  if (*a.model_opt) o.model = a.model;
  if (a.trainer->model_given()) {
    o.model = a.trainer->model();
    o.model_option = "--model_name_or_path";
  }
  if (*a.data_opt) o.data = a.data;
  if (*a.steps_opt) o.steps = a.steps;
  o.trainer_arguments = a.trainer->mapped();
  for (const std::string& note : a.trainer->ignored_notes()) spdlog::warn("{}", note);
  for (const std::string& note : config::trainer_argument_warnings(o.trainer_arguments)) spdlog::warn("{}", note);
  const std::string set_by_trainer_arguments = config::describe_trainer_arguments(o.trainer_arguments);
  if (!set_by_trainer_arguments.empty()) spdlog::info("Hugging Face Trainer arguments: {}", set_by_trainer_arguments);
  config::Config c = a.config.empty()
                         ? config::resolve_config(nlohmann::json::parse(kDefaultConfig), o, "default config")
                         : config::load_config(a.config, o);
  note_tensorboard(c, o.trainer_arguments);
  return c;
}

int print_config(const TrainArgs& a, int argc, char** argv) {
  World world(argc, argv);  // started by mpirun or srun: the world size comes from MPI
  if (world.rank() != 0) return 0;
  try {
    init_logging(log_options(0, a.log_level));
    check_local_rank(a);
    auto config = resolve(a, *a.world_opt ? a.world_size : world.size());
    std::printf("%s\n", config::to_json(config).dump(2).c_str());
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  return 0;
}

int train(const TrainArgs& a, int argc, char** argv) {
  if (auto problem = foreign_launcher_problem()) return usage_error(*problem);
  World world(argc, argv);
  // From here on, Ctrl-C, SIGTERM and SIGUSR1 stop training after the current step (during set-up
  // they end the process at once, status 128 + signal). Installed before any compute thread starts:
  // those never take the signals (train/stop_signals.hpp).
  StopSignals::install();
  const int rank = world.rank();

  // Every rank resolves the same config; the ranks agree on failure so none is left waiting.
  config::Config config;
  std::optional<OutputLocks> locks;  // checkpoint_dir and nvme_path, held until the run ends
  std::vector<std::filesystem::path> made;  // the output directories this rank made
  // A run that does not start leaves none of the directories it made, once the locks in them are
  // gone (on every rank: the barrier).
  auto unmake = [&] {
    locks.reset();
    world.first_failure(false);
    for (const auto& dir : made) remove_empty_directories(dir);
  };
  // Runs `phase` on every rank; true when it failed on any (the first failing rank says why).
  auto failed_anywhere = [&](auto phase) {
    std::string error;
    try {
      phase();
    } catch (const std::exception& e) {
      error = e.what();
    }
    const int first_failure = world.first_failure(!error.empty());
    if (first_failure < 0) return false;
    if (rank == first_failure) usage_error(error);
    unmake();
    return true;
  };
  // Every rank judges the outputs as the user left them before any rank creates or probes one.
  if (failed_anywhere([&] {
        init_logging(log_options(rank, a.log_level));
        if (rank != 0) spdlog::set_level(spdlog::level::err);  // config warnings once, from rank 0
        check_local_rank(a);
        const int planned = *a.world_opt ? a.world_size : world.size();  // --world-size: --dry-run plans for N ranks
        config = resolve(a, planned);
        check_output_paths(config, planned);  // before anything is opened for writing
        check_previous_run(config);
      }))
    return kExitBadInput;
  if (failed_anywhere([&] {
        if (!a.dry_run) made = prepare_outputs(config, rank, world.size());
        if (!a.dry_run && rank == 0) locks.emplace(config, world.size());
        init_logging(log_options(rank, a.log_level, config.training.log_dir));
      }))
    return kExitBadInput;
  if (rank == 0 && world.uses_mpi() && !world.mpi_thread_multiple())
    spdlog::warn("MPI does not provide MPI_THREAD_MULTIPLE; communication overlap may serialize");
  if (rank == 0) log_resolved_config(config);

  try {
    bool started = false;
    const int status = run_training(world, config, {a.dry_run, [&] { started = true; }});
    if (!started && !a.dry_run) unmake();
    return status;
  } catch (const std::exception& e) {
    // The other ranks may be inside a collective: end them all now.
    abort_job(kExitFailed, fmt::format("rank {}: {}", rank, e.what()));
  }
}

}  // namespace

Subcommand train_subcommand(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  app.footer(kExamples);
  add_train_options(app, *args);
  auto run = [args](int argc, char** argv) {
    if (*args->world_opt && !args->print_config && !args->dry_run)
      return usage_error("--world-size: only with --print-config or --dry-run (a run's world size is the number of "
                         "ranks launched) (run with --help for usage)");
    return args->print_config ? print_config(*args, argc, argv) : train(*args, argc, argv);
  };
  return {&app, run};
}

}  // namespace zt::cli
