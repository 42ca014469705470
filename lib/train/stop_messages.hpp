#pragma once
// What rank 0 says when a run stops before its last step: a stop signal, an output that could not
// be written (how the run ended and how to continue is its last line: train/last_line.hpp).
#include <cstdint>

namespace zt {

void log_interrupted(int64_t step, int stop_requests, int world_size);
void log_output_failure(int64_t step);

}  // namespace zt
