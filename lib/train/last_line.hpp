#pragma once
// The last line of a run (rank 0): how it ended, at which step, where its checkpoint is and how to
// go on from it. A stopped run reads as a stop, never as a crash:
//   stopped at step 7 of 100: interrupted by SIGINT; checkpoint at ckpt/step_00000007; resume with
//   the same command and --set training.resume=auto (exit status 75)
#include <cstdint>
#include <string>

#include "config/config.hpp"

namespace zt {

struct RunEnding {
  int64_t step = 0;             // the last step trained
  int64_t steps = 0;            // training.steps
  bool interrupted = false;     // a stop signal ended it early
  std::string stop_signal;      // the signal's name, "" when it reached another rank only
  std::string output_failure;   // the output that could not be written, "" when none
  std::string checkpoint;       // the step directory `latest` names after the run, "" when none
  bool checkpoints = false;     // training.checkpoint_dir is set
  config::Resume resume;        // training.resume
  std::string early_stop;       // why early stopping ended the run, "" when it did not
  std::string best;             // the best evaluation ("eval_loss 2.3 at step 20"), "" when none is kept
  int exit_code = 0;
};

std::string last_line(const RunEnding& end);

// Logs last_line for this process's run: reads the stop signal, the output failure and the
// checkpoint directory's `latest`. Call on rank 0 once the last checkpoint is complete.
void log_last_line(const config::Config& config, int64_t step, bool interrupted, int exit_code,
                   const std::string& early_stop = "", const std::string& best = "");

}  // namespace zt
