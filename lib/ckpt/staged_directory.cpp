#include "ckpt/staged_directory.hpp"

#include <fcntl.h>
#include <linux/fs.h>  // RENAME_EXCHANGE
#include <stdio.h>     // renameat2
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "ckpt/synced_file.hpp"
#include "core/error.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) names.push_back(entry.path().filename().string());
  if (ec) fail("{}: cannot list the directory: {}", dir, ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

bool holds(const std::vector<std::string>& names, const std::string& name) {
  return std::binary_search(names.begin(), names.end(), name);
}

}  // namespace

StagedDirectory::StagedDirectory(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::path place = fs::absolute(dir_, ec).lexically_normal();
  if (!place.has_filename()) place = place.parent_path();
  if (fs::is_symlink(place, ec)) place = fs::canonical(place, ec);  // the directory the link names is replaced
  fs::create_directories(place.parent_path(), ec);
  if (ec) fail("{}: cannot create directory: {}", dir_, ec.message());
  if (fs::exists(place, ec) && !fs::is_directory(place, ec)) fail("{}: exists and is not a directory", dir_);
  staging_ = (place.parent_path() / ("." + place.filename().string() + ".zerotrain-" + std::to_string(::getpid())))
                 .string();
  fs::remove_all(staging_, ec);
  if (!fs::create_directory(staging_, ec) || ec)
    fail("{}: cannot create directory: {}", dir_, ec ? ec.message() : "it exists");
  dir_ = place.string();
}

StagedDirectory::~StagedDirectory() {
  std::error_code ec;
  if (!installed_) fs::remove_all(staging_, ec);
}

void StagedDirectory::install(const std::function<bool(const std::string&)>& keep, const std::string& last) {
  sync_directory(staging_);
  std::error_code ec;
  if (!fs::exists(dir_, ec)) {
    rename_durably(staging_, dir_);
    installed_ = true;
    return;
  }
  if (!exchange_with_old(keep)) move_files_in(keep, last);
  installed_ = true;
}

// The old DIR's kept files as hard links in the staging directory, then one exchange of the two.
// False, with nothing changed in DIR, where that cannot be done.
bool StagedDirectory::exchange_with_old(const std::function<bool(const std::string&)>& keep) {
  const std::vector<std::string> staged = names_in(staging_);
  std::error_code ec;
  for (const std::string& name : names_in(dir_)) {
    if (holds(staged, name) || !keep(name)) continue;
    const fs::path from = fs::path(dir_) / name, to = fs::path(staging_) / name;
    if (!fs::is_regular_file(fs::symlink_status(from, ec))) return false;  // a subdirectory, a link: not carried whole
    if (::link(from.c_str(), to.c_str()) != 0) fs::copy_file(from, to, ec);
    if (ec) fail("{}: cannot keep {} of the old directory: {}", dir_, name, ec.message());
  }
  sync_directory(staging_);
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) return false;
    fail("{}: cannot put the new directory in place: {}", dir_, std::strerror(errno));
  }
  sync_directory(fs::path(dir_).parent_path().string());
  fs::remove_all(staging_, ec);  // the old directory now
  return true;
}

void StagedDirectory::move_files_in(const std::function<bool(const std::string&)>& keep, const std::string& last) {
  const std::vector<std::string> staged = names_in(staging_);  // sorted, for holds()
  std::vector<std::string> in_order = staged;
  std::stable_partition(in_order.begin(), in_order.end(), [&](const std::string& n) { return n != last; });
  for (const std::string& name : in_order)
    rename_durably((fs::path(staging_) / name).string(), (fs::path(dir_) / name).string());
  std::error_code ec;
  for (const std::string& name : names_in(dir_))
    if (!holds(staged, name) && !keep(name)) fs::remove(fs::path(dir_) / name, ec);
  sync_directory(dir_);
  fs::remove_all(staging_, ec);
}

}  // namespace zt
