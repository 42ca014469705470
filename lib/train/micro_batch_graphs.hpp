#pragma once
// training.cuda_graph: each micro-batch's forward and backward captured once as a graph of the
// device (CUDA graphs) and replayed after: one launch instead of hundreds. A graph holds the host
// values its work was queued with (the micro-batch's loss weight and dloss, and its shape: rows of
// samples padded to the longest row change their length from one micro-batch to the next, and the
// LM head's rows, those whose target counts), so a
// micro-batch whose values differ is captured again. Only where a micro-batch's work is the same queue of device work
// on the same buffers every time, with no collective and no host bookkeeping that changes from one
// micro-batch to the next: a device with graphs, ZeRO stage 0 or 1, no offload (the trainer
// decides). Its tokens must come from pinned memory, which the replays read.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/device.hpp"

namespace zt {

class MicroBatchGraphs {
public:
  struct Key {
    double weight = 0, dloss = 0;
    int batch = 0, seq = 0;
    int64_t counted = 0;  // targets that count: the rows the LM head computes
    bool operator==(const Key&) const = default;
  };

  MicroBatchGraphs() = default;
  MicroBatchGraphs(Device& device, int micro_batches) : device_(&device), graphs_(size_t(micro_batches)) {}
  ~MicroBatchGraphs();
  MicroBatchGraphs(MicroBatchGraphs&& o) noexcept;
  MicroBatchGraphs& operator=(MicroBatchGraphs&& o) noexcept;

  bool enabled() const { return device_ != nullptr; }
  // Queues micro-batch `micro`'s graph, captured from `work` first when it has none for `key`.
  void launch(int micro, Key key, const std::function<void()>& work);

private:
  void destroy();
  struct Captured {
    Graph graph;
    Key key;
  };
  Device* device_ = nullptr;
  std::vector<Captured> graphs_;
};

}  // namespace zt
