#pragma once
// The directories a run writes alone (the exclusive output locations of train/output_paths.hpp:
// training.checkpoint_dir and the offload nvme_paths), each locked (ckpt/dir_lock.hpp) while the
// run lasts, so that a second job given one of them is refused at start instead of overwriting
// this one's files. Rank 0 takes them, once the config is checked and the directories exist; an
// nvme_path is therefore locked on rank 0's machine.
#include <memory>
#include <vector>

#include "ckpt/dir_lock.hpp"
#include "config/config.hpp"

namespace zt {

class OutputLocks {
public:
  // Throws zt::Error naming the directory, its key and the job that holds it.
  OutputLocks(const config::Config& config, int world_size);

private:
  std::vector<std::unique_ptr<DirLock>> locks_;
};

}  // namespace zt
