#pragma once
// The first output of a run that could not be written (training.metrics, csv_monitor, tensorboard:
// a full disk, a file size limit, /dev/full). The writer that fails reports it here, logs it once
// and writes nothing more; every rank learns of it in the next step's all-reduce and the run stops
// after that step, saves what it was asked to save (training.save_final; checkpoints when
// checkpoint_dir is set) and exits with kExitFailed (core/exit_status.hpp): a run never exits 0 when something the
// user asked for was not written.
#include <string>

#include "core/exit_status.hpp"

namespace zt {

class OutputFailure {
public:
  // Keeps the first failure (later ones follow from it) and logs every one as an error.
  static void report(const std::string& message);
  static bool happened();
  static std::string message();  // the first failure; empty when none
};

}  // namespace zt
