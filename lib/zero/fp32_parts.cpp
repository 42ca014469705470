#include "zero/fp32_parts.hpp"

#include "core/error.hpp"

namespace zt {

Fp32Parts::Fp32Parts(const StageContext& ctx)
    : ctx_(ctx), first_slot_(ctx.layout.groups.size(), kNone), first_grad_(ctx.layout.groups.size(), kNone) {
  if (ctx.dtype() == DType::F32) return;  // every parameter is fp32 already
  size_t slot = 0, grad_slot = 0;
  for (size_t g = 0; g < ctx.layout.groups.size(); ++g)
    for (const TensorSpec& t : ctx.layout.groups[g].tensors) {
      if (!t.keep_fp32) continue;
      Piece p{int(g), t.offset, t.numel(), slot, t.trainable, 0, 0};
      if (first_slot_[g] == kNone) first_slot_[g] = slot;
      if (t.trainable) {
        p.compact = ctx.trainable.compact_at(t.offset);
        p.grad_slot = grad_slot;
        if (first_grad_[g] == kNone) first_grad_[g] = grad_slot;
        grad_slot += p.size;
      }
      pieces_.push_back(p);
      slot += p.size;
    }
  if (slot) values_ = Buffer<float>(ctx.device(), MemSpace::Device, MemCategory::Params, slot);
  if (grad_slot) grads_ = Buffer<float>(ctx.device(), MemSpace::Device, MemCategory::Grads, grad_slot);
}

size_t Fp32Parts::bytes(const ParamLayout& layout, DType dtype) {
  return dtype == DType::F32 ? 0 : layout.fp32_numel() * sizeof(float);
}

size_t Fp32Parts::grad_bytes(const ParamLayout& layout, DType dtype) {
  size_t n = 0;
  for (const ParamGroup& g : layout.groups)
    for (const TensorSpec& t : g.tensors) n += t.keep_fp32 && t.trainable ? t.numel() : 0;
  return dtype == DType::F32 ? 0 : n * sizeof(float);
}

ConstView Fp32Parts::values(int g) const {
  if (!beside(g)) return {};
  return {values_.data() + first_slot_[size_t(g)], DType::F32, MemSpace::Device};
}

View Fp32Parts::grads(int g) {
  if (!beside(g) || first_grad_[size_t(g)] == kNone) return {};
  return {grads_.data() + first_grad_[size_t(g)], DType::F32, MemSpace::Device};
}

void Fp32Parts::take_grads(int g, View group) {
  if (ctx_.model_dtype != DType::F32) return;  // the model wrote them here
  Device& dev = ctx_.device();
  const size_t offset = ctx_.layout.groups[size_t(g)].offset;
  for (const Piece& p : pieces_) {
    if (p.group != g || !p.trained) continue;
    const View from = group.at(p.flat - offset);
    ctx_.vector().add(from, {grads_.data() + p.grad_slot, DType::F32, MemSpace::Device}, p.size);
    dev.fill_zero(from.data, p.size * sizeof(float), dev.compute());
  }
}

void Fp32Parts::reduce_grads() {
  if (grads_.empty() || ctx_.comm.world_size() == 1) return;
  ctx_.clock.time(&StepBreakdown::reduce_wait, [&] {
    ctx_.comm.all_reduce(grads_.data(), grads_.data(), grads_.size(), DType::F32, ReduceOp::Sum, true)
        ->sync(ctx_.device().compute());
  });
}

void Fp32Parts::norm_partial(float factor, double* sum) {
  ctx_.vector().sum_of_squares_into({grads_.data(), DType::F32, MemSpace::Device}, grads_.size(), factor, sum);
}

void Fp32Parts::zero_grads() {
  if (!grads_.empty()) ctx_.device().fill_zero(grads_.data(), grads_.bytes(), ctx_.device().compute());
}

Range Fp32Parts::own_part(const Piece& p, Range held) {
  const Range r = Range{p.compact, p.compact + p.size}.intersect(held);
  return r.empty() ? Range{} : Range{r.begin - p.compact, r.end - p.compact};
}

void Fp32Parts::upload(const Piece& p, Range part, const float* host) {
  Device& dev = ctx_.device();
  dev.copy(values_.data() + p.slot + part.begin, host, part.size() * sizeof(float), dev.compute());
  dev.synchronize(dev.compute());  // the host values are reused
}

void Fp32Parts::init(const ParamInit& init, ShardOptimizer& optimizer, Range held) {
  std::vector<float> host;
  for (const Piece& p : pieces_) {
    host.resize(p.size);
    init(host.data(), p.flat, p.size);
    upload(p, {0, p.size}, host.data());
    const Range own = own_part(p, held);
    if (p.trained && !own.empty())
      optimizer.write(StateTensor::Master, {p.compact + own.begin, p.compact + own.end}, host.data() + own.begin);
  }
}

void Fp32Parts::refresh(ShardOptimizer& optimizer, Range held) {
  const Partition& part = ctx_.train_partition;
  // Stage 0 updates every element on every rank: the master is whole everywhere.
  const bool gather = part.world_size() > 1 && ctx_.options.stage > 0;
  std::vector<float> host;
  std::vector<std::vector<size_t>> counts;
  std::vector<WorkPtr> works;
  for (const Piece& p : pieces_) {
    if (!p.trained) continue;
    const Range own = own_part(p, held);
    if (!own.empty()) {
      host.resize(own.size());
      optimizer.read(StateTensor::Master, {p.compact + own.begin, p.compact + own.end}, host.data());
      upload(p, own, host.data());
    }
    if (!gather) continue;
    // In place: this rank's piece already lies at its place among the others'.
    counts.push_back(part.pieces({p.compact, p.compact + p.size}));
    float* base = values_.data() + p.slot;
    works.push_back(ctx_.comm.all_gather(base + own.begin, base, counts.back(), DType::F32, true));
  }
  ctx_.clock.time(&StepBreakdown::gather_wait, [&] {
    for (auto& w : works) w->sync(ctx_.device().compute());
  });
}

void Fp32Parts::overlay(int g, View group) const {
  if (pieces_.empty() || ctx_.model_dtype != DType::F32 || first_slot_[size_t(g)] == kNone) return;
  if (!group.data || group.dtype != DType::F32)
    fail("Fp32Parts: group {} is not handed out as an fp32 copy: its fp32 parameters cannot be put in it", g);
  Device& dev = ctx_.device();
  const size_t offset = ctx_.layout.groups[size_t(g)].offset;
  auto* dst = static_cast<float*>(group.data);
  for (const Piece& p : pieces_)
    if (p.group == g) dev.copy(dst + (p.flat - offset), values_.data() + p.slot, p.size * sizeof(float), dev.compute());
}

}  // namespace zt
