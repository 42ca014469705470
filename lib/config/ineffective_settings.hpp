#pragma once
// Settings that are valid but do nothing in the config they are in: one warning each, saying how
// to get what the setting suggests.
#include "config/config.hpp"
#include "config/diagnostics.hpp"

namespace zt::config {

void warn_ineffective_settings(const Config& config, const Diagnostics& diag);

}  // namespace zt::config
