// The fused AdamW against lib/optim/adamw.cpp over several steps, bit for bit: fp32 training
// (the master is the parameter buffer), bf16 and fp16 training (16-bit gradients scaled by a
// factor, 16-bit parameters written back), L2 mode, ranges without decay, and a chunk table.
#include "cuda_test_support.hpp"
#include "kernels/cuda/cuda_adamw.hpp"
#include "optim/adamw.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct Case {
  DType grad_type, param_type;  // param_type F32: no 16-bit copy
  bool adam_w_mode, decay;
};

AdamWHyper hyper_for(bool adam_w_mode) {
  AdamWHyper h{3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
  h.adam_w_mode = adam_w_mode;
  return h;
}

Bytes f32_bits(const Vec& v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

TEST_CASE("adamw_update matches lib/optim adamw_update bit for bit", "[cuda][adamw]") {
  const size_t n = small_shapes() ? 1000 : 1 << 20;
  const std::vector<Case> cases{
      {DType::F32, DType::F32, true, true},    {DType::BF16, DType::BF16, true, true},
      {DType::F16, DType::F16, true, true},    {DType::F32, DType::F32, false, true},
      {DType::BF16, DType::BF16, true, false}, {DType::F16, DType::BF16, false, true},
  };
  for (const Case& k : cases) {
    INFO("grads " << dtype_name(k.grad_type) << " params " << dtype_name(k.param_type) << " adam_w_mode "
                  << k.adam_w_mode << " decay " << k.decay);
    const AdamWHyper h = hyper_for(k.adam_w_mode);
    const bool sixteen = k.param_type != DType::F32;
    Vec master = rounded(k.param_type, random_vec(n, 91, 0.05f)), m(n, 0.0f), v(n, 0.0f);
    DeviceTensor dmaster(DType::F32, master), dm(DType::F32, m), dv(DType::F32, v);
    DeviceTensor dparams(k.param_type, master);
    const float factor = k.grad_type == DType::F16 ? 1.0f / 1024.0f : 0.5f;
    for (int64_t step = 1; step <= 3; step++) {
      const float grad_scale = k.grad_type == DType::F16 ? 1024.0f : 1.0f;  // as a loss-scaled fp16 gradient
      const Vec grads = rounded(k.grad_type, random_vec(n, 92 + uint64_t(step), 0.01f * grad_scale));
      Vec g(n);
      for (size_t i = 0; i < n; i++) g[i] = grads[i] * factor;
      adamw_update(master.data(), g.data(), m.data(), v.data(), n, h, step, k.decay);

      DeviceTensor dgrads(k.grad_type, grads);
      cuda::adamw_update(static_cast<float*>(dmaster.ptr()), static_cast<float*>(dm.ptr()),
                         static_cast<float*>(dv.ptr()), dgrads.ptr(), k.grad_type, factor,
                         sixteen ? dparams.ptr() : nullptr, k.param_type, n, k.decay, h, step, nullptr);
      device_sync();
      INFO("step " << step);
      REQUIRE(dmaster.bits() == f32_bits(master));
      REQUIRE(dm.bits() == f32_bits(m));
      REQUIRE(dv.bits() == f32_bits(v));
      if (sixteen) REQUIRE(dparams.bits() == encode(k.param_type, master));
    }
  }
}

TEST_CASE("adamw_update_chunks applies each chunk's decay setting", "[cuda][adamw]") {
  // Pieces of tensors as zero/shard_optimizer.cpp cuts them: some with decay, some without.
  const std::vector<cuda::AdamWChunk> chunks{{0, 300, 1}, {300, 17, 0}, {317, 700, 1}, {1017, 1, 0}, {1018, 500, 1}};
  const size_t n = 1518;
  const AdamWHyper h = hyper_for(true);
  Vec master = rounded(DType::BF16, random_vec(n, 95, 0.05f)), m(n, 0.0f), v(n, 0.0f);
  DeviceTensor dmaster(DType::F32, master), dm(DType::F32, m), dv(DType::F32, v), dparams(DType::BF16, master);
  DeviceBuffer dchunks = upload_raw(chunks);
  for (int64_t step = 1; step <= 2; step++) {
    const Vec grads = rounded(DType::BF16, random_vec(n, 96 + uint64_t(step), 0.01f));
    for (const auto& c : chunks) {
      Vec g(grads.begin() + long(c.offset), grads.begin() + long(c.offset + c.size));
      for (auto& x : g) x *= 0.25f;
      adamw_update(master.data() + c.offset, g.data(), m.data() + c.offset, v.data() + c.offset, c.size, h, step,
                   c.decay != 0);
    }
    DeviceTensor dgrads(DType::BF16, grads);
    cuda::adamw_update_chunks(static_cast<float*>(dmaster.ptr()), static_cast<float*>(dm.ptr()),
                              static_cast<float*>(dv.ptr()), dgrads.ptr(), DType::BF16, 0.25f, dparams.ptr(),
                              DType::BF16, dchunks.as<cuda::AdamWChunk>(), int(chunks.size()), h, step,
                              nullptr);
    device_sync();
    REQUIRE(dmaster.bits() == f32_bits(master));
    REQUIRE(dm.bits() == f32_bits(m));
    REQUIRE(dv.bits() == f32_bits(v));
    REQUIRE(dparams.bits() == encode(DType::BF16, master));
  }
}

TEST_CASE("adamw_update refuses step 0", "[cuda][adamw][errors]") {
  REQUIRE_THROWS_WITH(cuda::adamw_update(nullptr, nullptr, nullptr, nullptr, DType::F32, 1.0f, nullptr, DType::F32, 0,
                                         true, hyper_for(true), 0, nullptr),
                      Catch::Contains("adamw_update") && Catch::Contains("step must count from 1"));
}
