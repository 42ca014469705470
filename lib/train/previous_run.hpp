#pragma once
// What a run finds of an earlier run where it writes, judged before anything is written. A run
// continues an earlier run only when asked (training.resume, --resume_from_checkpoint), starts
// afresh over it only when asked (training.overwrite, --overwrite_output_dir), and is otherwise
// refused, naming what it found and the two ways on (docs/checkpoints.md, "Running again"):
// - training.checkpoint_dir holds checkpoints (a `latest`, step directories): a run to resume;
// - training.metrics holds lines: an earlier run's metrics, which a fresh start would replace;
// - training.save_final holds a saved model or adapter, which a fresh start would replace.
// A resume writes on (the metrics file grows; save_final is the run's own model once it ends).
#include <string>
#include <vector>

#include "config/config.hpp"

namespace zt {

// Throws zt::Error (bad input, exit status 2) naming the output and what it holds.
void check_previous_run(const config::Config& config);

// A fresh start with training.overwrite over checkpoints of an earlier run: removes them (the step
// directories, complete or not, and `latest`), so that no later resume takes them for this run's.
// Nothing else in the directory is touched. Returns the names it removed. Rank 0, once set-up has
// succeeded.
std::vector<std::string> remove_previous_checkpoints(const std::string& checkpoint_dir);

}  // namespace zt
