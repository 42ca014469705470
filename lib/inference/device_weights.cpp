#include "inference/device_weights.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"

namespace zt {

DeviceWeights::DeviceWeights(const ParamLayout& layout, const float* weights, const Backend& backend)
    : layout_(layout),
      dtype_(backend.model.dtype()),
      data_(backend.device, MemSpace::Device, MemCategory::Params, layout.total * dtype_size(dtype_),
            Init::Uninitialised) {
  // Converted a slice at a time: a model of billions of parameters needs no second full copy.
  constexpr size_t kSlice = size_t(1) << 22;
  std::vector<uint8_t> staged(std::min(kSlice, layout.total) * dtype_size(dtype_));
  Device& device = backend.device;
  for (size_t begin = 0; begin < layout.total; begin += kSlice) {
    const size_t n = std::min(kSlice, layout.total - begin);
    from_f32(dtype_, weights + begin, staged.data(), n);
    device.copy(data_.data() + begin * dtype_size(dtype_), staged.data(), n * dtype_size(dtype_), device.compute());
    device.synchronize(device.compute());  // staged is reused
  }
}

ConstView DeviceWeights::fetch(int g) {
  return {data_.data() + layout_.groups[size_t(g)].offset * dtype_size(dtype_), dtype_, MemSpace::Device};
}

View DeviceWeights::grads(int g) {
  fail("DeviceWeights: group {} has no gradients (the weights of a trained model are only read)",
       layout_.groups[size_t(g)].name);
}

}  // namespace zt
