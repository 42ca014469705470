#include "zero/trainable_params.hpp"

#include <algorithm>
#include <vector>

namespace zt {

TrainableParams::TrainableParams(const StageContext& ctx, Range compact)
    : ctx_(ctx), compact_(compact),
      values_(ctx.device(), MemSpace::Device, MemCategory::Params, compact.size() * dtype_size(ctx.dtype())),
      shard_(ctx.device(), ctx.view(values_.data(), ctx.dtype()), compact.size()) {}

void TrainableParams::init(const ParamInit& init) {
  const TrainableSpace& space = ctx_.trainable;
  // The compact elements past the last trainable one (partition padding) start, and stay, zero.
  ParamInit mapped = [&](float* dst, size_t begin, size_t count) {
    for (const TrainableSpace::Run& run : space.in_compact({begin, begin + count}))
      init(dst + (run.compact - begin), run.flat, run.size);
  };
  upload_params(ctx_, mapped, shard_, compact_, space.numel());
}

void TrainableParams::copy_to(View flat_params) {
  Device& dev = ctx_.device();
  const size_t esz = dtype_size(ctx_.dtype());
  for (const TrainableSpace::Run& run : ctx_.trainable.in_compact(compact_))
    dev.copy(flat_params.at(run.flat).data, values_.data() + (run.compact - compact_.begin) * esz, run.size * esz,
             dev.compute());
}

template <typename Recv>
void TrainableParams::gather_runs(Recv&& recv) {
  const Partition& part = ctx_.train_partition;
  const size_t esz = dtype_size(ctx_.dtype());
  const size_t piece = std::max<size_t>(1, ctx_.options.allgather_bucket_size);
  std::vector<std::vector<size_t>> counts;
  std::vector<WorkPtr> works;
  ctx_.clock.time(&StepBreakdown::gather_wait, [&] {
    for (const TrainableSpace::Run& run : ctx_.trainable.runs())
      for (size_t a = 0; a < run.size; a += piece) {
        const TrainableSpace::Run cut{run.flat + a, run.compact + a, std::min(piece, run.size - a)};
        const Range range{cut.compact, cut.compact + cut.size};
        const Range own = range.intersect(compact_);
        counts.push_back(part.pieces(range));
        const void* send = values_.data() + (own.empty() ? 0 : own.begin - compact_.begin) * esz;
        works.push_back(ctx_.comm.all_gather(send, recv(cut), counts.back(), ctx_.dtype(), true));
      }
    for (auto& w : works) w->sync(ctx_.device().compute());
  });
}

void TrainableParams::all_gather_into(View flat_params) {
  if (ctx_.train_partition.world_size() == 1) return copy_to(flat_params);
  gather_runs([&](const TrainableSpace::Run& cut) { return flat_params.at(cut.flat).data; });
}

void TrainableParams::all_gather_into(ParamShard& flat_shard) {
  Device& dev = ctx_.device();
  const DType dt = ctx_.dtype();
  const size_t esz = dtype_size(dt);
  size_t total = 0;
  for (const TrainableSpace::Run& run : ctx_.trainable.runs()) total += run.size;
  // Every run side by side in one transient buffer, then this rank's flat elements out of it.
  void* all = ctx_.pool.acquire(std::max<size_t>(1, total) * esz);
  auto place = [&](const TrainableSpace::Run& cut) {
    return static_cast<char*>(all) + cut.compact * esz;  // runs lie in compact order: compact offset = place
  };
  if (ctx_.train_partition.world_size() == 1)
    dev.copy(all, values_.data(), total * esz, dev.compute());
  else
    gather_runs(place);
  const Range own = ctx_.partition.own();
  std::vector<uint8_t> host;
  for (const TrainableSpace::Run& run : ctx_.trainable.in_flat(own)) {
    const char* src = static_cast<const char*>(all) + run.compact * esz;
    const Range rel{run.flat - own.begin, run.flat - own.begin + run.size};
    if (View v = flat_shard.view(); v.data) {
      dev.copy(v.at(rel.begin).data, src, run.size * esz, dev.compute());
      continue;
    }
    host.resize(run.size * esz);  // a shard in a file: through host memory
    dev.copy(host.data(), src, host.size(), dev.compute());
    dev.synchronize(dev.compute());
    flat_shard.write(rel, host.data());
  }
  ctx_.pool.release(all);
}

}  // namespace zt
