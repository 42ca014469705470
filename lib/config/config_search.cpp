#include "config/config_search.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "config/config.hpp"
#include "core/error.hpp"
#include "core/file_type.hpp"

#ifndef ZT_SOURCE_DIR
#define ZT_SOURCE_DIR "."
#endif
#ifndef ZT_INSTALL_DATADIR
#define ZT_INSTALL_DATADIR "/usr/local/share/zerotrain"
#endif

namespace fs = std::filesystem;

namespace zt::config {

std::vector<std::string> config_dirs() {
  std::vector<std::string> dirs;
  for (const char* d : {ZT_SOURCE_DIR "/configs", ZT_INSTALL_DATADIR "/configs"}) {
    std::error_code ec;
    if (fs::is_directory(d, ec) && std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  }
  return dirs;
}

std::optional<std::string> find_preset_file(const std::string& name, const std::string& subdir) {
  if (name.empty()) return std::nullopt;
  for (const auto& dir : config_dirs()) {
    fs::path base = subdir.empty() ? fs::path(dir) : fs::path(dir) / subdir;
    for (const auto& candidate : {base / name, base / (name + ".json")}) {
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
  }
  return std::nullopt;
}

std::vector<std::string> preset_names(const std::string& subdir) {
  std::set<std::string> names;
  for (const auto& dir : config_dirs()) {
    fs::path base = subdir.empty() ? fs::path(dir) : fs::path(dir) / subdir;
    std::error_code ec;
    for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file() && it->path().extension() == ".json") names.insert(it->path().stem().string());
  }
  return {names.begin(), names.end()};
}

std::string default_train_data() { return ZT_SOURCE_DIR "/data/tinytext/train.txt"; }
std::string default_val_data() { return ZT_SOURCE_DIR "/data/tinytext/val.txt"; }

std::string find_config_file(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  if (auto preset = find_preset_file(name_or_path, "")) return *preset;
  // It exists but is no file to read: say what it is (a FIFO is not opened: that would block).
  struct stat st {};
  if (::stat(name_or_path.c_str(), &st) == 0)
    fail("--config {}: is {}, not a config file (expected a DeepSpeed JSON file or a preset name)", name_or_path,
         file_type_name(st.st_mode));
  std::string looked = name_or_path;
  for (const auto& dir : config_dirs()) looked += ", " + (fs::path(dir) / (name_or_path + ".json")).string();
  std::string presets;
  for (const auto& n : preset_names("")) presets += (presets.empty() ? "" : ", ") + n;
  fail("--config {}: no such file or preset (looked for {}; presets: {})", name_or_path, looked,
       presets.empty() ? "none found" : presets);
}

}  // namespace zt::config
