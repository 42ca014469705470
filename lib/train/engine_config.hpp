#pragma once
// The ZeRO engine's options, read off the resolved DeepSpeed config.
#include "config/config.hpp"
#include "zero/engine_options.hpp"

namespace zt {

EngineOptions engine_options(const config::Config& config);

}  // namespace zt
