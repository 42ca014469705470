#pragma once
// What rank 0 says when a run stops before its last step: a stop signal, an output that could not
// be written, and how to continue.
#include <cstdint>

namespace zt {

void log_interrupted(int64_t step, int stop_requests, int world_size);
void log_output_failure(int64_t step);
// checkpointed: the run saves checkpoints (training.checkpoint_dir), so the one of `step` is complete.
void log_resume_hint(int64_t step, bool checkpointed);

}  // namespace zt
