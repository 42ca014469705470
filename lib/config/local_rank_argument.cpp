#include "config/local_rank_argument.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"

namespace zt::config {

std::string check_local_rank_argument(int64_t local_rank, const Environment& env) {
  if (local_rank < 0) fail("--local_rank {}: expected a local rank, 0 or more", local_rank);
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}) {
    const char* value = env(name);
    if (!value) continue;
    int64_t actual = -1;
    const char* end = value + std::strlen(value);
    auto [stop, ec] = std::from_chars(value, end, actual);
    if (ec != std::errc() || stop != end || actual < 0)
      fail("--local_rank {}: {}={} is not a local rank (expected an integer, 0 or more)", local_rank, name, value);
    if (actual != local_rank)
      fail("--local_rank {}: this process is local rank {} ({}={}); zerotrain takes its rank from the launcher, so "
           "the argument must agree with it or be left out",
           local_rank, actual, name, value);
    return fmt::format("--local_rank {} agrees with {}; the rank comes from the launcher", local_rank, name);
  }
  return fmt::format("--local_rank {} ignored: no launcher's local rank in the environment to check it against "
                     "(OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, LOCAL_RANK); the rank comes from the launcher",
                     local_rank);
}

std::string check_local_rank_argument(int64_t local_rank) {
  return check_local_rank_argument(local_rank, [](const char* name) { return std::getenv(name); });
}

}  // namespace zt::config
