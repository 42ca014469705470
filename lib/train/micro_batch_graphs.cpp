#include "train/micro_batch_graphs.hpp"

#include <utility>

namespace zt {

MicroBatchGraphs::~MicroBatchGraphs() { destroy(); }

MicroBatchGraphs::MicroBatchGraphs(MicroBatchGraphs&& o) noexcept
    : device_(std::exchange(o.device_, nullptr)), graphs_(std::move(o.graphs_)) {}

MicroBatchGraphs& MicroBatchGraphs::operator=(MicroBatchGraphs&& o) noexcept {
  if (this != &o) {
    destroy();
    device_ = std::exchange(o.device_, nullptr);
    graphs_ = std::move(o.graphs_);
  }
  return *this;
}

void MicroBatchGraphs::destroy() {
  if (!device_) return;
  for (Captured& c : graphs_) device_->destroy_graph(std::exchange(c.graph, Graph{}));
}

void MicroBatchGraphs::launch(int micro, Key key, const std::function<void()>& work) {
  Captured& c = graphs_.at(size_t(micro));
  if (!c.graph.handle || !(c.key == key)) {
    device_->destroy_graph(std::exchange(c.graph, Graph{}));
    c = {device_->capture(work), key};
  }
  device_->launch(c.graph);
}

}  // namespace zt
