#include "inference/device_weights.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"

namespace zt {

DeviceWeights::DeviceWeights(const ParamLayout& layout, const float* weights, const Backend& backend, DType stored)
    : layout_(layout),
      dtype_(backend.model.dtype()),
      data_(backend.device, MemSpace::Device, MemCategory::Params, layout.total * dtype_size(dtype_),
            Init::Uninitialised) {
  // Converted a slice at a time: a model of billions of parameters needs no second full copy.
  constexpr size_t kSlice = size_t(1) << 22;
  std::vector<uint8_t> staged(std::min(kSlice, layout.total) * dtype_size(dtype_));
  // A 16-bit run on the CPU computes in fp32 with its parameters rounded to 16 bits.
  const bool round = stored != DType::F32 && stored != dtype_;
  std::vector<uint16_t> rounded_bits(round ? std::min(kSlice, layout.total) : 0);
  std::vector<float> rounded(rounded_bits.size());
  Device& device = backend.device;
  for (size_t begin = 0; begin < layout.total; begin += kSlice) {
    const size_t n = std::min(kSlice, layout.total - begin);
    const float* values = weights + begin;
    if (round) {
      from_f32(stored, values, rounded_bits.data(), n);
      to_f32(stored, rounded_bits.data(), rounded.data(), n);
      values = rounded.data();
    }
    from_f32(dtype_, values, staged.data(), n);
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
