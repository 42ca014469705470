#pragma once
// What rank 0 tells scripts/launch.sh about the run once set-up has succeeded, when the launcher
// asks for it (it sets ZT_LAUNCH_MARKERS=1): marker lines on stderr, which the launcher reads and
// never shows. A job that failed in set-up (bad input) gives none: the launcher neither offers to
// resume it nor restarts it.
//   <zt-checkpoint-dir> /abs/path   training.checkpoint_dir (empty: none): after a failed job the
//                                    launcher reads its `latest` to say "resume from step N", and
//                                    --max-restarts restarts from it
//   <zt-comm-timeout> 600           training.comm_timeout: how long the launcher waits for the
//                                    other ranks after one has failed before it ends the job
// And the launcher's restarts need checkpoints: with ZT_MAX_RESTARTS > 0 (launch.sh
// --max-restarts N) a run without training.checkpoint_dir is refused before it starts.
#include <optional>
#include <string>

#include "config/config.hpp"
#include "core/exit_status.hpp"

namespace zt {

// Why the launcher's restarts cannot work for this config, or nullopt.
std::optional<std::string> restart_problem(const config::Config& config);

// Writes the markers on stderr when ZT_LAUNCH_MARKERS is set (call on rank 0).
void write_launcher_markers(const config::Config& config);

}  // namespace zt
