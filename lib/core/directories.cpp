#include "core/directories.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/file_type.hpp"

namespace zt {

std::filesystem::path make_directories(const std::string& label, const std::filesystem::path& dir) {
  std::filesystem::path made, first;
  for (const auto& part : dir) {
    made /= part;
    if (part.empty() || part == made.root_path()) continue;
    struct stat st {};
    if (::stat(made.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        fail("{}: cannot create directory '{}': '{}' is {}, not a directory", label, dir.string(), made.string(),
             file_type_name(st.st_mode));
      continue;
    }
    if (::mkdir(made.c_str(), 0777) == 0) {
      if (first.empty()) first = made;
    } else if (errno != EEXIST) {
      fail("{}: cannot create directory '{}': {}", label, dir.string(), std::strerror(errno));
    }
  }
  return first;
}

void remove_empty_directories(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> dirs{dir};
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != decltype(it)(); it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path());
  // Deeper paths are longer: the longest first empties each parent before its turn.
  std::sort(dirs.begin(), dirs.end(),
            [](const auto& a, const auto& b) { return a.native().size() > b.native().size(); });
  for (const auto& d : dirs) ::rmdir(d.c_str());  // fails, as it should, on a directory that holds anything
}

}  // namespace zt
