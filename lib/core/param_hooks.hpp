#pragma once
// How the model asks for its parameters and hands over its gradients, group by group.
// The ZeRO engine implements this; the model knows nothing of ranks or stages.
#include <cstring>

#include "core/buffer.hpp"
#include "core/param_layout.hpp"
#include "core/view.hpp"

namespace zt {

class ParamHooks {
public:
  virtual ~ParamHooks() = default;
  // The values of group g (group.size elements; element i is flat index group.offset + i), in the
  // dtype the model computes with. Valid until release(g). Forward and backward each fetch a
  // group before using it.
  virtual ConstView fetch(int g) = 0;
  virtual void release(int g) = 0;
  // Where the model adds group g's gradient for the current micro-batch (same dtype as fetch): a
  // buffer that starts at zero, or one that already holds earlier micro-batches' sum (gradient
  // accumulation in place). Valid until grads_ready(g).
  virtual View grads(int g) = 0;
  // The gradients of group g are final for this micro-batch.
  virtual void grads_ready(int g) = 0;
  // When the model computes in a 16-bit dtype: group g's tensors kept in fp32
  // (TensorSpec::keep_fp32), side by side in the group's order, in fp32 (valid until release(g)),
  // and where the model adds their fp32 gradients for the micro-batch (from zero; valid until
  // grads_ready(g)); their places in fetch's and grads' views are not read. Null views when the
  // group keeps none, or the model computes in fp32 (it finds them in fetch's view then).
  virtual ConstView fetch_fp32(int) { return {}; }
  virtual View grads_fp32(int) { return {}; }
};

// All parameters and gradients resident in fp32 host memory on this process: single-process use
// and tests of a CPU model.
class ResidentParams : public ParamHooks {
public:
  explicit ResidentParams(const ParamLayout& layout)
      : layout_(layout), params(MemCategory::Params, layout.total), grad(MemCategory::Grads, layout.total) {}
  ConstView fetch(int g) override { return {params.data() + layout_.groups[g].offset, DType::F32, MemSpace::Host}; }
  void release(int) override {}
  View grads(int g) override { return {grad.data() + layout_.groups[g].offset, DType::F32, MemSpace::Host}; }
  void grads_ready(int) override {}
  void zero_grads() { std::memset(grad.data(), 0, grad.bytes()); }

  const ParamLayout& layout_;
  Buffer<float> params;
  Buffer<float> grad;  // accumulates across backward passes until zero_grads()
};

}  // namespace zt
