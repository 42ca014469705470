#include "core/directories.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "core/file_type.hpp"

namespace zt {

void make_directories(const std::string& label, const std::filesystem::path& dir) {
  std::filesystem::path made;
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
    if (::mkdir(made.c_str(), 0777) != 0 && errno != EEXIST)
      fail("{}: cannot create directory '{}': {}", label, dir.string(), std::strerror(errno));
  }
}

}  // namespace zt
