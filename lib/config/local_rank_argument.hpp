#pragma once
// `--local_rank N`: what torch.distributed.launch and the deepspeed launcher pass to every process.
// zerotrain takes its ranks from the launcher it runs under, so the argument decides nothing; it is
// checked against the local rank the environment gives (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID
// or LOCAL_RANK, the first one set), so that a process never runs as another rank than it was told.
#include <cstdint>
#include <functional>
#include <string>

namespace zt::config {

using Environment = std::function<const char*(const char*)>;

// The note to log when the argument agrees with the environment (or the environment says nothing);
// throws zt::Error naming both when they disagree.
std::string check_local_rank_argument(int64_t local_rank, const Environment& env);
std::string check_local_rank_argument(int64_t local_rank);  // this process's environment

}  // namespace zt::config
