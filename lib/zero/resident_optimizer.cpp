// The resident strategy of the shard optimizer: master, m and v in device memory, one VectorOps
// call per step.
#include "zero/shard_optimizer.hpp"

namespace zt {

namespace {

class ResidentOptimizer final : public ShardOptimizer {
public:
  explicit ResidentOptimizer(const Parts& p) : ShardOptimizer(p), device_(p.backend.device), vector_(p.backend.vector) {
    const size_t n = range_.size();
    if (dtype_ != DType::F32) master_ = Buffer<float>(device_, MemSpace::Device, MemCategory::Optimizer, n);
    m_ = Buffer<float>(device_, MemSpace::Device, MemCategory::Optimizer, n);
    v_ = Buffer<float>(device_, MemSpace::Device, MemCategory::Optimizer, n);
  }

  void init_master() override {
    if (dtype_ != DType::F32) vector_.convert(params_.view(), master_view(), range_.size());
  }

  void update(ConstView grads, const float* kept_grads, const GradNorm* norm, const AdamWHyper& hyper,
              int64_t step) override {
    vector_.adamw(segments_, {state(StateTensor::Master), m_.data(), v_.data()}, grads, norm, params_.view(), hyper,
                  step);
    for (const KeptPiece& k : kept_)
      vector_.adamw(k.segments, {state(StateTensor::Master) + k.offset, m_.data() + k.offset, v_.data() + k.offset},
                    ConstView{kept_grads + k.grad, DType::F32, MemSpace::Device}, norm, params_.view().at(k.offset),
                    hyper, step);
  }

  void read(StateTensor t, Range r, float* host) override {
    const Range rel = relative(r);
    device_.copy(host, state(t) + rel.begin, rel.size() * sizeof(float), device_.compute());
    device_.synchronize(device_.compute());
  }

  void write(StateTensor t, Range r, const float* host) override {
    const Range rel = relative(r);
    device_.copy(state(t) + rel.begin, host, rel.size() * sizeof(float), device_.compute());
    device_.synchronize(device_.compute());
  }

  void round_params() override {
    if (dtype_ != DType::F32) vector_.convert(master_view(), params_.view(), range_.size());
  }

private:
  // In fp32 training the parameters are the master.
  float* state(StateTensor t) {
    switch (t) {
      case StateTensor::AdamM: return m_.data();
      case StateTensor::AdamV: return v_.data();
      case StateTensor::Master: break;
    }
    return dtype_ == DType::F32 ? static_cast<float*>(params_.view().data) : master_.data();
  }
  View master_view() { return {master_.data(), DType::F32, MemSpace::Device}; }

  Device& device_;
  VectorOps& vector_;
  Buffer<float> master_, m_, v_;
};

}  // namespace

std::unique_ptr<ShardOptimizer> make_resident_optimizer(const ShardOptimizer::Parts& parts) {
  return std::make_unique<ResidentOptimizer>(parts);
}

}  // namespace zt
