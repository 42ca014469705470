#pragma once
// Where presets live: configs/NAME.json and configs/models/NAME.json, searched in the source tree
// (so the build tree's binary finds them) and then in the installed share directory.
#include <optional>
#include <string>
#include <vector>

namespace zt::config {

// The configs/ folders that exist, in search order.
std::vector<std::string> config_dirs();
// NAME or NAME.json inside <config dir>/<subdir>; nullopt when none exists.
std::optional<std::string> find_preset_file(const std::string& name, const std::string& subdir);
// Names (file stems) of the *.json presets in <config dir>/<subdir>, sorted, without duplicates.
std::vector<std::string> preset_names(const std::string& subdir);

// The shipped corpus: data/tinytext/{train,val}.txt in the source tree.
std::string default_train_data();
std::string default_val_data();

}  // namespace zt::config
