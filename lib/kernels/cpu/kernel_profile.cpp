#include "kernels/cpu/kernel_profile.hpp"

namespace zt::cpu {

std::string_view kernel_kind_name(KernelKind k) {
  static constexpr std::array<std::string_view, kKernelKinds> names = {
      "matmul fwd",    "matmul bwd",    "attention fwd", "attention bwd", "layernorm fwd",
      "layernorm bwd", "gelu fwd",      "gelu bwd",      "xent fwd",      "xent bwd",
      "embedding fwd", "embedding bwd", "residual fwd",  "residual bwd",  "rmsnorm fwd",
      "rmsnorm bwd",   "rope fwd",      "rope bwd",      "swiglu fwd",    "swiglu bwd",
      "moe routing",
  };
  return names[int(k)];
}

}  // namespace zt::cpu
