#include "train/run.hpp"

#include <spdlog/spdlog.h>

#include <functional>
#include <optional>

#include "config/provenance.hpp"
#include "core/error.hpp"
#include "core/exit_status.hpp"
#include "core/ledger.hpp"
#include "core/threads.hpp"
#include "kernels/backend.hpp"
#include "train/launcher_markers.hpp"
#include "train/memory_plan.hpp"
#include "train/run_data.hpp"
#include "train/trainer.hpp"

namespace zt {

namespace {

// Runs `work` on every rank; the exit status of its failure on some rank, agreed by all (0: none):
// the lowest failing rank logs its error, and its kind gives every rank's status (2 for input that
// does not fit, zt::BadInput; else 1).
int failed_somewhere(const World& world, const std::function<void()>& work) {
  std::string error;
  bool bad_input = false;
  try {
    work();
  } catch (const std::exception& e) {
    error = e.what();
    bad_input = dynamic_cast<const BadInput*>(&e) != nullptr;
  }
  const int failed = world.first_failure(!error.empty());
  const int failed_on_input = world.first_failure(bad_input);
  if (failed < 0) return 0;
  if (failed == world.rank()) spdlog::error("{}", error);
  return failed_on_input == failed ? kExitBadInput : kExitFailed;
}

// --dry-run: the data opened and judged as the run opens it (train/run_data.hpp), then the plan
// for the world size the config resolved (--world-size N plans for N). Bad data fails as the run
// would fail, with its message and exit status.
int dry_run(const World& world, const config::Config& config, const Backend& backend) {
  std::optional<RunData> data;
  const int rank = world.rank() % config.world_size;  // --world-size N plans for N ranks on fewer
  if (const int status = failed_somewhere(world, [&] { data = open_run_data(config, config.world_size, rank); }))
    return status;
  if (world.rank() == 0) {
    config::log_provenance(config);
    log_data_plan(config, *data);
    print_memory_plan(config, config.world_size, world.info().local_size, backend, has_samples(*data),
                      planned_head_rows(*data->train_sampler, data->val_sampler.get()));
  }
  return 0;
}

}  // namespace

int run_training(const World& world, const config::Config& config, const RunOptions& options) {
  if (auto problem = restart_problem(config)) {  // every rank resolved the same config
    if (world.rank() == 0) spdlog::error("{}", *problem);
    return kExitBadInput;
  }
  // Where this rank computes, agreed before anything is allocated: one message, every rank exits.
  // A dry run chooses as the run would, so that its plan is the run's.
  Backend* backend = nullptr;
  if (const int status = failed_somewhere(world, [&] {
        backend = &select_backend(config.training.device, world.info().local_rank, world.info().local_size,
                                  config.training_dtype());
        if (config.training.device_memory_limit > 0)
          MemoryLedger::instance().set_limit(MemSpace::Device, size_t(config.training.device_memory_limit),
                                             "training.device_memory_limit");
      }))
    return status;
  if (options.dry_run) return dry_run(world, config, *backend);
  const CpuMask cpus = process_affinity();
  const ThreadChoice threads = use_compute_threads(cpus, world.local_cpu_masks(cpus));  // collective
  if (world.rank() == 0) {
    spdlog::info("device: {} ({} rank{}{})", backend->device.name(), world.size(), world.size() == 1 ? "" : "s",
                 world.uses_mpi() ? "" : ", no MPI");
    spdlog::info("threads: {}{} ({}); idle OpenMP threads {}", threads.threads, world.size() > 1 ? " on rank 0" : "",
                 threads.why, openmp_wait_policy());
  }
  auto comm = world.communicator(backend->device, config.training.comm_timeout);
  try {
    Trainer trainer(config, *comm, *backend);
    if (options.set_up) options.set_up();
    if (world.rank() == 0) write_launcher_markers(config);  // set up: from here a failed job can resume
    return trainer.run();
  } catch (const SetupFailed& e) {
    return e.status;  // reported once by the rank that found it; no rank is mid-collective
  } catch (const CheckpointFailed&) {
    return kExitFailed;  // a failed write, reported once; every rank agreed on it; the previous checkpoint stands
  }
}

}  // namespace zt
