#include "ckpt/checkpoint_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ckpt/checkpoint_format.hpp"
#include "ckpt/synced_file.hpp"
#include "core/error.hpp"
#include "core/quoted_bytes.hpp"

namespace zt {

namespace fs = std::filesystem;

bool is_step_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / kMetaFile, ec);
}

bool is_checkpoint(const std::string& path) {
  std::error_code ec;
  return is_step_dir(path) || (fs::is_directory(path, ec) && fs::exists(fs::path(path) / kLatestFile, ec));
}

std::optional<std::string> latest_checkpoint(const std::string& root) {
  const fs::path file = fs::path(root) / kLatestFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  // One short line; a longer file is not a `latest` zerotrain wrote, and is not read whole.
  std::string text(256, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  if (in.bad() || (!in && !in.eof())) fail("{}: cannot read the name of the latest checkpoint", file.string());
  text.resize(size_t(in.gcount()));
  std::string name = text.substr(0, text.find('\n'));
  while (!name.empty() && (name.back() == '\r' || name.back() == ' ')) name.pop_back();
  if (step_of_dir_name(name) < 0)
    fail("{}: {} is not the name of a step directory (expected step_NNNNNNNN and a newline)", file.string(),
         quoted_bytes(text));
  const std::string dir = (fs::path(root) / name).string();
  if (!is_step_dir(dir))
    fail("{}: names {}, which is not a complete checkpoint (no {})", file.string(), dir, kMetaFile);
  return dir;
}

std::string resolve_checkpoint(const std::string& path) {
  if (is_step_dir(path)) return path;
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    fail("{}: no such checkpoint directory (expected a step directory holding {} or a checkpoint directory holding "
         "`{}`)",
         path, kMetaFile, kLatestFile);
  if (auto latest = latest_checkpoint(path)) return *latest;
  fail("{}: not a checkpoint: it holds neither {} (a step directory) nor `{}` (a checkpoint directory)", path,
       kMetaFile, kLatestFile);
}

void publish_latest(const std::string& root, const std::string& name) {
  write_file_durably((fs::path(root) / kLatestFile).string(), name + "\n");
}

std::vector<StepDir> list_checkpoints(const std::string& root) {
  std::vector<StepDir> found;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(root, ec)) {
    const int64_t step = step_of_dir_name(entry.path().filename().string());
    if (step >= 0 && is_step_dir(entry.path().string())) found.push_back({step, entry.path().string()});
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.step < b.step; });
  return found;
}

std::vector<std::string> prune_checkpoints(const std::string& root, int64_t keep, std::optional<int64_t> best_step) {
  std::vector<std::string> removed;
  if (keep <= 0) return removed;
  const std::optional<std::string> latest = latest_checkpoint(root);
  std::vector<StepDir> all = list_checkpoints(root);
  if (int64_t(all.size()) <= keep) return removed;
  auto best = std::find_if(all.begin(), all.end(), [&](const StepDir& d) { return best_step && d.step == *best_step; });
  if (best != all.end()) {
    if (keep == 1 && best + 1 != all.end()) keep = 2;  // the newest stays, to resume from
    for (; best + 2 < all.end(); ++best) std::iter_swap(best, best + 1);  // to the newest but one
  }
  if (int64_t(all.size()) <= keep) return removed;
  all.resize(all.size() - size_t(keep));  // the oldest ones
  for (auto& old : all) {
    if (latest && fs::equivalent(*latest, old.path)) continue;
    std::error_code ec;
    fs::remove_all(old.path, ec);
    if (ec) fail("{}: cannot remove an old checkpoint (training.keep_last {}): {}", old.path, keep, ec.message());
    removed.push_back(old.path);
  }
  return removed;
}

std::vector<std::string> keep_only_checkpoint(const std::string& root, int64_t step) {
  publish_latest(root, step_dir_name(step));  // first: `latest` never names a removed checkpoint
  std::vector<std::string> removed;
  for (const StepDir& d : list_checkpoints(root)) {
    if (d.step == step) continue;
    std::error_code ec;
    fs::remove_all(d.path, ec);
    if (ec) fail("{}: cannot remove a checkpoint other than the best: {}", d.path, ec.message());
    removed.push_back(d.path);
  }
  return removed;
}

void remove_incomplete_saves(const std::string& root) {
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(kTmpSuffix)) continue;
    const std::string base = name.substr(0, name.size() - kTmpSuffix.size());
    if (step_of_dir_name(base) < 0 && base != kLatestFile) continue;
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
    if (rm) fail("{}: cannot remove what an incomplete save left: {}", entry.path().string(), rm.message());
  }
}

}  // namespace zt
