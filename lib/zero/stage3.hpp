#pragma once
#include "zero/stage.hpp"

namespace zt {
// Stage 3: parameters exist only as shards, gathered group by group around their use.
std::unique_ptr<Stage> make_stage3(const StageContext& ctx);
}  // namespace zt
