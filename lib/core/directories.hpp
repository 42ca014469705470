#pragma once
// Directories a run writes into, made before anything is written there.
#include <filesystem>
#include <string>

namespace zt {

// Like mkdir -p; an error names `label` and the part of the path in the way. Returns the first
// directory it made (the others are below it), or an empty path when `dir` was there.
std::filesystem::path make_directories(const std::string& label, const std::filesystem::path& dir);

// Removes `dir` and the directories below it, deepest first, as far as they hold no file: what
// make_directories made for a run that did not start. Errors are ignored (what remains stays).
void remove_empty_directories(const std::filesystem::path& dir);

}  // namespace zt
