#include "train/output_locks.hpp"

#include "train/output_paths.hpp"

namespace zt {

OutputLocks::OutputLocks(const config::Config& config, int world_size) {
  for (const auto& out : output_locations(config, world_size))
    if (out.directory && out.exclusive) locks_.push_back(std::make_unique<DirLock>(out.path.string(), out.key));
}

}  // namespace zt
