// aio: DeepSpeed's asynchronous I/O settings, used by NVMe offload.
#include <fmt/format.h>

#include "config/blocks.hpp"

namespace zt::config {

AioConfig read_aio(Block& top) {
  Block b = top.child("aio", UnknownKeys::Error);
  AioConfig a;
  b.rename("thread_count", "intra_op_parallelism", "the name DeepSpeed used before intra_op_parallelism");
  a.block_size = b.integer("block_size", a.block_size, IntRange::between(4096, int64_t(1) << 30));
  if (a.block_size % 4096 != 0)
    b.fail("block_size", fmt::format("{} is not a multiple of 4096 (expected whole 4 KiB pages for direct I/O)",
                                     a.block_size));
  a.queue_depth = b.integer("queue_depth", a.queue_depth, IntRange::between(1, 1024));
  a.intra_op_parallelism = b.integer("intra_op_parallelism", a.intra_op_parallelism, IntRange::between(1, 256));
  a.single_submit = b.boolean("single_submit", a.single_submit);
  a.overlap_events = b.boolean("overlap_events", a.overlap_events);
  a.use_gds = b.boolean("use_gds", a.use_gds);
  if (a.use_gds) b.warn("use_gds", "true has no effect (GPUDirect Storage is not implemented in zerotrain); ignored");
  b.finish();
  return a;
}

}  // namespace zt::config
