#pragma once
// A model's weights resident on its device in the dtype it computes in, handed to it group by group
// (ParamHooks) without gradients: what one process needs to run a trained model (generate, eval).
#include "core/buffer.hpp"
#include "core/param_hooks.hpp"
#include "kernels/backend.hpp"

namespace zt {

class DeviceWeights final : public ParamHooks {
public:
  // weights: the fp32 flat parameters of `layout` in host memory, rounded to `stored` (the dtype a
  // run kept its parameters in: what it computed with), converted to the backend's model dtype and
  // copied to its device.
  DeviceWeights(const ParamLayout& layout, const float* weights, const Backend& backend, DType stored = DType::F32);

  ConstView fetch(int g) override;
  void release(int) override {}
  View grads(int g) override;  // refused: these weights do not train
  void grads_ready(int) override {}

private:
  const ParamLayout& layout_;
  DType dtype_;
  Buffer<uint8_t> data_;
};

}  // namespace zt
