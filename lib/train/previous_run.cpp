#include "train/previous_run.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_format.hpp"
#include "core/error.hpp"
#include "hf/hf_dir.hpp"
#include "hf/peft_adapter.hpp"
#include "train/output_paths.hpp"

namespace fs = std::filesystem;

namespace zt {

namespace {

const char* const kResume = "--resume_from_checkpoint (training.resume=latest)";
const char* const kOverwrite = "--overwrite_output_dir (training.overwrite=true)";

// The newest step an earlier run saved in `dir` (its `latest`, else its newest complete step
// directory), or "`latest`" when only an unreadable one is there; nothing when it holds no run.
std::optional<std::string> saved_run(const std::string& dir) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return std::nullopt;
  const bool has_latest = fs::exists(fs::path(dir) / kLatestFile, ec);
  std::optional<std::string> step_dir;
  try {
    step_dir = latest_checkpoint(dir);
  } catch (const Error&) {  // a damaged `latest`: the step directories say how far the run got
  }
  if (!step_dir) {
    const std::vector<StepDir> steps = list_checkpoints(dir);
    if (!steps.empty()) step_dir = steps.back().path;
  }
  if (!step_dir) return has_latest ? std::optional<std::string>(std::string("a `latest` file")) : std::nullopt;
  return fmt::format("step {} ({})", step_of_dir_name(fs::path(*step_dir).filename().string()), *step_dir);
}

size_t line_count(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return size_t(std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

bool nonempty_file(const std::string& path) {
  std::error_code ec;
  const bool regular = fs::is_regular_file(path, ec);
  const uintmax_t size = regular ? fs::file_size(path, ec) : 0;
  return regular && !ec && size > 0;  // a file gone between the two questions is not there
}

// The first file of a saved model or adapter in `dir`, if any.
std::optional<std::string> saved_model_file(const std::string& dir) {
  std::error_code ec;
  for (std::string_view name : {kPeftWeightsFile, kPeftConfigFile, kHfWeightsFile, kHfIndexFile, kHfConfigFile})
    if (fs::exists(fs::path(dir) / name, ec)) return (fs::path(dir) / name).string();
  return std::nullopt;
}

}  // namespace

void check_previous_run(const config::Config& config) {
  const config::TrainingConfig& t = config.training;
  if (t.resume.asked()) return;  // asked to continue: the outputs are that run's
  const std::optional<std::string> run = saved_run(t.checkpoint_dir);
  if (t.overwrite) {
    if (!run) return;
    for (const InputFile& in : input_files(config))
      if (lies_in(in.path, t.checkpoint_dir))
        fail("training.checkpoint_dir {}: training.overwrite starts afresh and removes the earlier run's checkpoints "
             "there, and {} '{}' lies there: copy it elsewhere first",
             t.checkpoint_dir, in.key, in.path.string());
    return;
  }
  if (run)
    fail("training.checkpoint_dir {} holds an earlier run, saved up to {}, and a run starts afresh over it only when "
         "asked: resume it with {}, or start afresh with {}, which removes its checkpoints",
         t.checkpoint_dir, *run, kResume, kOverwrite);
  if (!t.metrics.empty() && nonempty_file(t.metrics))
    fail("training.metrics {} holds {} lines of an earlier run, which a fresh start would replace: start afresh with "
         "{}, or give training.metrics another path",
         t.metrics, line_count(t.metrics), kOverwrite);
  if (!t.save_final.empty())
    if (auto file = saved_model_file(t.save_final))
      fail("training.save_final {} holds the model of an earlier run ({}), which this run would replace when it ends: "
           "start afresh with {}, or give training.save_final another path",
           t.save_final, *file, kOverwrite);
}

std::vector<std::string> remove_previous_checkpoints(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string base = name.ends_with(kTmpSuffix) ? name.substr(0, name.size() - kTmpSuffix.size()) : name;
    if (base == kLatestFile || step_of_dir_name(base) >= 0) names.push_back(name);
  }
  // `latest` first: a removal that fails midway never leaves it naming a removed step.
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return (a == kLatestFile) != (b == kLatestFile) ? a == kLatestFile : a < b;
  });
  for (const std::string& name : names) {
    fs::remove_all(fs::path(dir) / name, ec);
    if (ec) fail("training.checkpoint_dir: cannot remove {} of the earlier run: {}", (fs::path(dir) / name).string(),
                 ec.message());
  }
  return names;
}

}  // namespace zt
