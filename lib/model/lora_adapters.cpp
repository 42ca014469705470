#include "model/lora_adapters.hpp"

#include <algorithm>

#include "kernels/dropout_mask.hpp"

namespace zt {

namespace {

struct AdapterSizes {
  size_t h = 0, scratch = 0, dropped = 0, dh = 0;  // elements of the model's dtype
};

AdapterSizes sizes_of(const std::vector<LoraSite>& sites, int r, double dropout, size_t BT, int slots) {
  AdapterSizes s;
  if (sites.empty()) return s;
  int widest_in = 0, widest = 0;
  for (const LoraSite& site : sites) {
    widest_in = std::max(widest_in, site.in);
    widest = std::max({widest, site.in, site.out});
  }
  s.h = size_t(slots) * sites.size() * BT * size_t(r);
  s.scratch = BT * size_t(widest);
  s.dropped = dropout > 0 ? BT * size_t(widest_in) : 0;
  s.dh = BT * size_t(r);
  return s;
}

}  // namespace

LoraAdapters::LoraAdapters(const GptShape& shape, const LoraSpec& spec, int max_batch, int max_seq, int block_slots,
                           const Backend& backend)
    : ops_(backend.model), dtype_(backend.model.dtype()), sites_(lora_sites(shape, spec)), r_(spec.r),
      scale_(float(spec.scale())), dropout_(float(spec.dropout)), bt_max_(size_t(max_batch) * size_t(max_seq)) {
  const AdapterSizes s = sizes_of(sites_, r_, spec.dropout, bt_max_, block_slots);
  Device& dev = backend.device;
  if (s.h) h_ = ActTensor(dev, dtype_, s.h);
  if (s.scratch) scratch_ = ActTensor(dev, dtype_, s.scratch);
  if (s.dropped) dropped_ = ActTensor(dev, dtype_, s.dropped);
  if (s.dh) dh_ = ActTensor(dev, dtype_, s.dh);
}

size_t LoraAdapters::bytes(const GptShape& shape, const LoraSpec& spec, int max_batch, int max_seq, int block_slots,
                           const ModelOps& ops) {
  const AdapterSizes s =
      sizes_of(lora_sites(shape, spec), spec.r, spec.dropout, size_t(max_batch) * size_t(max_seq), block_slots);
  return (s.h + s.scratch + s.dropped + s.dh) * dtype_size(ops.dtype());
}

bool LoraAdapters::adapts(BlockRole projection) const {
  return std::any_of(sites_.begin(), sites_.end(), [&](const LoraSite& s) { return s.projection == projection; });
}

const void* LoraAdapters::adapter_input(size_t site, int layer, const void* x, int N) {
  if (!dropout_seed_ || dropout_ <= 0.0f) return x;
  // One mask per (micro-batch, layer, site), drawn again in backward.
  const uint64_t seed = dropout_hash(*dropout_seed_, uint64_t(layer) * sites_.size() + site);
  ops_.dropout(dropped_.data(), x, size_t(N) * size_t(sites_[site].in), dropout_, seed, GradInto::Overwrite);
  return dropped_.data();
}

void LoraAdapters::forward(BlockRole projection, int layer, int slot, void* out, const void* x, const void* adapters,
                           int N) {
  if (off_) return;
  const size_t esz = dtype_size(dtype_);
  auto param = [&](size_t offset) { return static_cast<const char*>(adapters) + offset * esz; };
  for (size_t i = 0; i < sites_.size(); ++i) {
    const LoraSite& s = sites_[i];
    if (s.projection != projection) continue;
    const void* input = adapter_input(i, layer, x, N);
    ops_.matmul_forward(h(slot, i), input, param(s.a_offset), nullptr, N, s.in, r_, WeightLayout::OutputMajor);
    ops_.matmul_forward(scratch_.data(), h(slot, i), param(s.b_offset), nullptr, N, r_, s.out,
                        WeightLayout::OutputMajor);
    ops_.scale_columns(static_cast<char*>(out) + size_t(s.column) * esz, s.width, scratch_.data(), s.out, N, s.out,
                       scale_, GradInto::Accumulate);
  }
}

void LoraAdapters::backward(BlockRole projection, int layer, int slot, void* dx, void* dadapters, const void* dout,
                            const void* x, const void* adapters, int N) {
  const size_t esz = dtype_size(dtype_);
  auto param = [&](size_t offset) { return static_cast<const char*>(adapters) + offset * esz; };
  auto grad = [&](size_t offset) { return dadapters ? static_cast<char*>(dadapters) + offset * esz : nullptr; };
  for (size_t i = 0; i < sites_.size(); ++i) {
    const LoraSite& s = sites_[i];
    if (s.projection != projection) continue;
    // g = scale · d(out slice); dh = g·B, dB += gᵀ·h; dA += dhᵀ·dropout(x), d dropout(x) = dh·A.
    ops_.scale_columns(scratch_.data(), s.out, static_cast<const char*>(dout) + size_t(s.column) * esz, s.width, N,
                       s.out, scale_, GradInto::Overwrite);
    ops_.matmul_backward(dh_.data(), grad(s.b_offset), nullptr, scratch_.data(), h(slot, i), param(s.b_offset), N,
                         r_, s.out, WeightLayout::OutputMajor, GradInto::Overwrite);
    const void* input = adapter_input(i, layer, x, N);
    const bool masked = input != x;
    // Through the mask, d dropout(x) goes to the scratch (free again) and from there to dx.
    ops_.matmul_backward(masked ? scratch_.data() : dx, grad(s.a_offset), nullptr, dh_.data(), input,
                         param(s.a_offset), N, s.in, r_, WeightLayout::OutputMajor,
                         masked ? GradInto::Overwrite : GradInto::Accumulate);
    if (masked) {
      const uint64_t seed = dropout_hash(*dropout_seed_, uint64_t(layer) * sites_.size() + i);
      ops_.dropout(dx, scratch_.data(), size_t(N) * size_t(s.in), dropout_, seed, GradInto::Accumulate);
    }
  }
}

}  // namespace zt
