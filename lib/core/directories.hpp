#pragma once
// Directories a run writes into, made before anything is written there.
#include <filesystem>
#include <string>

namespace zt {

// Like mkdir -p; an error names `label` and the part of the path in the way.
void make_directories(const std::string& label, const std::filesystem::path& dir);

}  // namespace zt
