#pragma once
// The checkpoint root (training.checkpoint_dir): complete step directories, the `latest` file
// that names the newest, and what is left of saves that never completed (*.tmp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zt {

// The step directory `latest` names, or nullopt when the root has no `latest` (no checkpoint yet).
// Errors name the file: `latest` unreadable, or naming a directory that is not a checkpoint.
std::optional<std::string> latest_checkpoint(const std::string& root);

// What a checkpoint path means: a step directory (it holds meta.json) as it is, or a root whose
// `latest` names one. An error naming the path otherwise.
std::string resolve_checkpoint(const std::string& path);
bool is_step_dir(const std::string& path);  // a directory holding meta.json
bool is_checkpoint(const std::string& path);  // a step directory, or a root holding `latest`

// Points `latest` at the step directory `name` (atomically: temporary file, fsync, rename).
void publish_latest(const std::string& root, const std::string& name);

struct StepDir {
  int64_t step = 0;
  std::string path;
};
// The complete step directories under root, by step.
std::vector<StepDir> list_checkpoints(const std::string& root);
// Removes all but the newest `keep` (0: keeps all), never the one `latest` names, and never the
// best one (`best_step`) as the Hugging Face Trainer's save_total_limit: the best takes the place
// of the newest but one, and with keep 1 the newest stays beside it. Returns what it removed.
std::vector<std::string> prune_checkpoints(const std::string& root, int64_t keep,
                                           std::optional<int64_t> best_step = std::nullopt);
// Keeps only the checkpoint of `step`, which `latest` then names (the Trainer's save_total_limit 1 at
// the end of a run: the best alone). Returns what it removed.
std::vector<std::string> keep_only_checkpoint(const std::string& root, int64_t step);
// Removes the leftovers of saves that did not complete (step_*.tmp, latest.tmp).
void remove_incomplete_saves(const std::string& root);

}  // namespace zt
