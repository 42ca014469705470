#include "train/output_paths.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/directories.hpp"
#include "core/error.hpp"
#include "core/file_type.hpp"
#include "hf/hf_dir.hpp"
#include "hf/peft_adapter.hpp"
#include "metrics/csv_monitor.hpp"
#include "metrics/tensorboard_monitor.hpp"
#include "train/model_export.hpp"

namespace fs = std::filesystem;

namespace zt {

namespace {

// What save_final and export write: a model directory's files, or a LoRA run's adapter directory's
// (the adapter and the tokenizer's files).
std::vector<std::string> saved_directory_files(bool adapter) {
  std::vector<std::string> names = hf_directory_files();
  if (!adapter) return names;
  names.clear();
  for (const std::string& file : hf_tokenizer_files()) names.push_back(file);
  for (std::string_view file : {kPeftConfigFile, kPeftWeightsFile}) names.emplace_back(file);
  const size_t n = names.size();
  for (size_t i = 0; i < n; ++i) names.push_back(names[i] + ".tmp");
  return names;
}

// Absolute, with symbolic links and ".." resolved, no trailing '/'. Directories that do not exist
// yet will be made as plain directories, so ".." after one is resolved lexically; that may bring
// an existing symbolic link into reach ("new/../link"), hence the repetition.
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::absolute(p, ec);
  if (ec) r = p;
  for (int i = 0; i < 40; ++i) {
    fs::path next = fs::weakly_canonical(r, ec);
    if (ec) next = r.lexically_normal();
    if (!next.has_filename() && next != next.root_path()) next = next.parent_path();
    if (next == r) break;
    r = next;
  }
  return r;
}

bool same_inode(const fs::path& a, const fs::path& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

bool same_file(const fs::path& a, const fs::path& b) {
  const fs::path ra = resolved(a), rb = resolved(b);
  return ra == rb || same_inode(ra, rb);
}

bool writes_name(const OutputLocation& dir, const std::string& name) {
  if (std::find(dir.files.begin(), dir.files.end(), name) != dir.files.end()) return true;
  for (const auto& prefix : dir.file_prefixes)
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

// The file of `dir`'s that `file` is, if any: by name in the same directory, or by inode.
std::optional<fs::path> written_as(const OutputLocation& dir, const fs::path& file) {
  const fs::path r = resolved(file);
  if (same_file(r.parent_path(), dir.path) && writes_name(dir, r.filename().string())) return dir.path / r.filename();
  for (const auto& name : dir.files)
    if (same_inode(resolved(dir.path / name), r)) return dir.path / name;
  return std::nullopt;
}

// Two directory outputs in the same directory clash when one may write a name the other writes.
bool names_overlap(const OutputLocation& a, const OutputLocation& b) {
  for (const auto& name : a.files)
    if (writes_name(b, name)) return true;
  for (const auto& name : b.files)
    if (writes_name(a, name)) return true;
  for (const auto& pa : a.file_prefixes)
    for (const auto& pb : b.file_prefixes)
      if (pa.rfind(pb, 0) == 0 || pb.rfind(pa, 0) == 0) return true;
  return false;
}

const char* const kLoseInput = "writing it would destroy the input; choose another path for";
const char* const kTwoOutputs = "the two outputs would overwrite each other; choose different paths";

}  // namespace

bool lies_in(const fs::path& inner, const fs::path& outer) {
  const fs::path i = resolved(inner), o = resolved(outer);
  if (same_file(i, o)) return true;
  for (fs::path p = i; p.has_parent_path() && p != p.parent_path();) {
    p = p.parent_path();
    if (p == o || same_inode(p, o)) return true;
  }
  return false;
}

namespace {

// " (training.save_final is where the run writes the LoRA adapter: ...)", for an adapter directory.
std::string what_it_writes(const OutputLocation& out) {
  return out.writes.empty() ? "" : fmt::format(" ({} is where the run writes {})", out.key, out.writes);
}

// The output is the input, writes a file that is the input, or is a file the input directory reads.
void check_names(const OutputLocation& out, const InputFile& in, bool overwrite) {
  if (overwrite && out.replaced_whole) return;
  // A directory output in an input directory, writing none of the files there, destroys nothing:
  // that it writes where the run reads is check_holds' to say.
  const bool destroys = !out.directory || in.files.empty() ||
                        std::any_of(in.files.begin(), in.files.end(), [&](const std::string& f) {
                          std::error_code ec;
                          return writes_name(out, f) && fs::exists(in.path / f, ec);
                        });
  if (same_file(out.path, in.path) && destroys)
    fail("{} '{}' names the same {} as {} '{}': {} {}{}{}", out.key, out.path.string(), out.directory ? "path" : "file",
         in.key, in.path.string(), kLoseInput, out.key,
         out.replaced_whole ? " (or --overwrite if you mean to replace it)" : "", what_it_writes(out));
  if (!out.directory) {
    for (const auto& name : in.files)
      if (same_file(out.path, in.path / name))
        fail("{} '{}' is {}'s '{}': {} {}", out.key, out.path.string(), in.key, (in.path / name).string(), kLoseInput,
             out.key);
    return;
  }
  if (auto file = written_as(out, in.path))
    fail("{} '{}' would write '{}', which is {} '{}': {} {}{}", out.key, out.path.string(), file->string(), in.key,
         in.path.string(), kLoseInput, out.key, what_it_writes(out));
}

// An output directory holds the input.
void check_holds(const OutputLocation& out, const InputFile& in, bool overwrite) {
  if (!out.directory || overwrite || !lies_in(in.path, out.path)) return;
  fail("{} '{}' holds {} '{}': a run writes nowhere near what it reads; choose another path for {} (or --overwrite "
       "if you mean to write there){}",
       out.key, out.path.string(), in.key, in.path.string(), out.key, what_it_writes(out));
}

void check_pair(const OutputLocation& a, const OutputLocation& b) {
  if (same_file(a.path, b.path)) {
    const bool share = a.directory && b.directory && !a.exclusive && !b.exclusive && !names_overlap(a, b);
    if (!share)
      fail("{} '{}' and {} '{}' name the same {}: {}", a.key, a.path.string(), b.key, b.path.string(),
           a.directory && b.directory ? "directory" : "path", kTwoOutputs);
    return;
  }
  for (auto [dir, file] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    if (!dir->directory || file->directory) continue;
    if (auto written = written_as(*dir, file->path))
      fail("{} '{}' would write '{}', which is {} '{}': {}", dir->key, dir->path.string(), written->string(),
           file->key, file->path.string(), kTwoOutputs);
  }
}

std::string probe_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return ".zerotrain-probe-" + std::string(host) + "-" + std::to_string(::getpid());
}

// A file is created, written and removed in `dir`: the directory takes new files and has room.
void probe_directory(const std::string& key, const fs::path& dir) {
  const fs::path probe = dir / probe_name();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail("{}: cannot write in '{}': {}", key, dir.string(), std::strerror(errno));
  const ssize_t n = ::write(fd, "zerotrain", 9);
  const int error = n < 0 ? errno : ENOSPC;
  ::close(fd);
  ::unlink(probe.c_str());
  if (n != 9) fail("{}: cannot write in '{}': {}", key, dir.string(), std::strerror(error));
}

// The file can be written where it is: an existing one is opened for writing without changing a
// byte; a new name is created and removed.
void probe_file(const std::string& key, const fs::path& path) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISCHR(st.st_mode)) return;  // /dev/null and the like: writes are checked as they happen
  if (exists && !S_ISREG(st.st_mode))
    fail("{}: '{}' is {} (expected a file to write)", key, path.string(), file_type_name(st.st_mode));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (exists ? O_APPEND : O_CREAT | O_EXCL), 0666);
  if (fd < 0) fail("{}: cannot write '{}': {}", key, path.string(), std::strerror(errno));
  ::close(fd);
  if (!exists) ::unlink(path.c_str());
  probe_directory(key, path.has_parent_path() ? path.parent_path() : fs::path("."));
}

}  // namespace

std::vector<OutputLocation> output_locations(const config::Config& c, int world_size) {
  std::vector<OutputLocation> out;
  const auto& t = c.training;
  if (!t.metrics.empty()) out.push_back({.key = "training.metrics", .path = t.metrics});
  if (c.csv_monitor.enabled)
    out.push_back({.key = "csv_monitor",
                   .path = CsvMonitor::directory(c.csv_monitor),
                   .directory = true,
                   .files = CsvMonitor::file_names()});
  if (c.tensorboard.enabled)
    out.push_back({.key = "tensorboard",
                   .path = TensorboardMonitor::directory(c.tensorboard),
                   .directory = true,
                   .file_prefixes = {"events.out.tfevents."}});
  if (!t.save_final.empty())
    out.push_back(model_directory_output("training.save_final", t.save_final, final_form(c) == SavedForm::Adapter));
  // A directory per step and `latest` (docs/architecture.md, "Checkpoints"): nothing else writes there.
  if (!t.checkpoint_dir.empty())
    out.push_back({.key = "training.checkpoint_dir",
                   .path = t.checkpoint_dir,
                   .directory = true,
                   .files = {"latest", "latest.tmp"},
                   .exclusive = true,
                   .every_rank = true});
  if (!t.log_dir.empty()) {
    OutputLocation logs{.key = "training.log_dir", .path = t.log_dir, .directory = true, .every_rank = true};
    for (int r = 0; r < world_size; ++r) logs.files.push_back("rank" + std::to_string(r) + ".log");
    out.push_back(logs);
  }
  // Offloaded state; DeepSpeed configs commonly give both blocks the same nvme_path.
  const auto& z = c.zero;
  auto offload = [](const std::string& key, const std::string& path) {
    return OutputLocation{.key = key, .path = path, .directory = true, .exclusive = true, .every_rank = true};
  };
  const bool nvme_optimizer = z.offload_optimizer.device == OffloadDevice::Nvme,
             nvme_param = z.offload_param.device == OffloadDevice::Nvme;
  if (nvme_optimizer)
    out.push_back(offload("zero_optimization.offload_optimizer.nvme_path", z.offload_optimizer.nvme_path));
  if (nvme_param && !(nvme_optimizer && same_file(z.offload_param.nvme_path, z.offload_optimizer.nvme_path)))
    out.push_back(offload("zero_optimization.offload_param.nvme_path", z.offload_param.nvme_path));
  return out;
}

InputFile model_directory_input(const std::string& key, const std::string& dir) {
  InputFile in{key, dir, hf_directory_files()};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (is_hf_shard_file_name(entry.path().filename().string())) in.files.push_back(entry.path().filename().string());
  return in;
}

OutputLocation model_directory_output(const std::string& key, const std::string& dir, bool adapter) {
  return {.key = key,
          .path = dir,
          .directory = true,
          .files = saved_directory_files(adapter),
          .file_prefixes = adapter ? std::vector<std::string>{} : std::vector<std::string>{std::string(kHfShardPrefix)},
          .replaced_whole = true,
          // A model directory's message names the file it writes; an adapter's names what it is.
          .writes = adapter ? fmt::format("the LoRA adapter: {}, {} and the tokenizer's files", kPeftConfigFile,
                                          kPeftWeightsFile)
                            : ""};
}

void add_start_inputs(std::vector<InputFile>& inputs, const std::string& init_from, const std::string& lora_init_from,
                      const std::string& model_dir, const std::string& init_key, const std::string& lora_key) {
  std::error_code ec;
  if (!init_from.empty() && init_from != model_dir)
    inputs.push_back(fs::is_directory(init_from, ec) ? model_directory_input(init_key, init_from)
                                                     : InputFile{init_key, init_from});
  if (!lora_init_from.empty())
    inputs.push_back({lora_key, lora_init_from, {std::string(kPeftConfigFile), std::string(kPeftWeightsFile)}});
}

std::vector<InputFile> input_files(const config::Config& c) {
  std::vector<InputFile> in;
  std::error_code ec;
  const auto& t = c.training;
  if (fs::exists(c.source, ec)) in.push_back({"--config", c.source});  // else built in ("default config")
  if (!c.model_file.empty()) in.push_back({"--model", c.model_file});
  if (!c.model.path.empty()) in.push_back(model_directory_input("model.path", c.model.path));
  for (const std::string& file : c.data.train) in.push_back({"data.train", file});
  for (const std::string& file : c.data.val) in.push_back({"data.val", file});
  add_start_inputs(in, t.random_init() ? "" : t.init_from, c.lora.enabled ? c.lora.init_from : "", c.model.path,
                   "training.init_from", "lora.init_from");
  // A checkpoint resumed from elsewhere; resuming in training.checkpoint_dir is what that directory is for.
  const bool named = t.resume.from == config::ResumeFrom::Path;
  if (named && !(fs::exists(t.checkpoint_dir, ec) && lies_in(t.resume.path, t.checkpoint_dir)))
    in.push_back({"training.resume", t.resume.path});
  if (!t.sample_tokenizer.empty()) in.push_back({"training.sample_tokenizer", t.sample_tokenizer});
  return in;
}

void check_output_against(const OutputLocation& output, const std::vector<InputFile>& inputs, bool overwrite) {
  for (const auto& in : inputs) check_names(output, in, overwrite);
  for (const auto& in : inputs) check_holds(output, in, overwrite);
}

void check_output_paths(const config::Config& config, int world_size) {
  const auto outputs = output_locations(config, world_size);
  const auto inputs = input_files(config);
  for (const auto& out : outputs)
    for (const auto& in : inputs) check_names(out, in, config.training.overwrite);
  for (const auto& out : outputs)
    for (const auto& in : inputs) check_holds(out, in, config.training.overwrite);
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j) check_pair(outputs[i], outputs[j]);
}

std::vector<fs::path> prepare_outputs(const config::Config& config, int rank, int world_size) {
  std::vector<fs::path> made;
  auto make = [&](const std::string& key, const fs::path& dir) {
    if (fs::path first = make_directories(key, dir); !first.empty()) made.push_back(first);
  };
  try {
    for (const auto& out : output_locations(config, world_size)) {
      if (!out.every_rank && rank != 0) continue;
      if (out.directory) {
        make(out.key, out.path);
        probe_directory(out.key, out.path);
      } else {
        if (out.path.has_parent_path()) make(out.key, out.path.parent_path());
        probe_file(out.key, out.path);
      }
    }
  } catch (const Error&) {  // one output cannot be written: the others' directories go again
    for (const auto& dir : made) remove_empty_directories(dir);
    throw;
  }
  return made;
}

}  // namespace zt
