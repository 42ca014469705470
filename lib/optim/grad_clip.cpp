#include "optim/grad_clip.hpp"

namespace zt {

double clip_coefficient(double total_norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  double coefficient = max_norm / (total_norm + 1e-6);
  return coefficient < 1.0 ? coefficient : 1.0;
}

}  // namespace zt
