#include "config/initial_weights.hpp"

#include <fmt/format.h>


namespace zt::config {

std::string resolve_initial_weights(Config& c, const ValueSources& sources) {
  std::string& init = c.training.init_from;
  const std::string& dir = c.model.path;
  if (init == kRandomInit)
    return fmt::format("weights: random values from {}", sources.described("training.init_from"));
  if (!init.empty())
    return fmt::format("weights from {} ({}): the weights only; Adam's moments, the step and the schedule start afresh",
                       init, sources.described("training.init_from"));
  if (dir.empty()) {
    init = kRandomInit;
    return "weights: random values (training.init_from random, the default without a model directory)";
  }
  init = dir;  // a directory without weights is refused when the run starts (--dry-run plans without them)
  return fmt::format("weights from {} (model.path, as from_pretrained loads them; --set training.init_from=random "
                     "for random values)",
                     dir);
}

}  // namespace zt::config
