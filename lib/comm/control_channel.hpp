#pragma once
// The control channel (docs/architecture.md, "Device seams"): small values in host memory that every rank
// must agree on — the logged loss, the stop flag, gradient-norm partials, set-up failures — apart
// from the tensors of the data communicator, so a GPU backend never sees a host pointer. Every
// call is blocking and collective. Reductions are exact and the same on every rank: values are
// gathered and combined in rank order in double precision.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace zt {

class ControlChannel {
public:
  virtual ~ControlChannel() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // recv[r·bytes, (r+1)·bytes) = rank r's send[0, bytes), for every rank r.
  virtual void all_gather(const void* send, void* recv, size_t bytes) = 0;
  virtual void broadcast(void* buf, size_t bytes, int root) = 0;
  virtual void barrier() = 0;

  // values[i] = Σ_r values_r[i], summed in rank order.
  void all_reduce_sum(double* values, size_t n);
  // values[i] = max_r values_r[i] (NaN on any rank gives NaN).
  void all_reduce_max(double* values, size_t n);
  // The lowest rank where `failed` is true, or -1 when none.
  int first_failure(bool failed);
  template <typename T>
  std::vector<T> gather_all(const T& mine) {
    std::vector<T> all(static_cast<size_t>(world_size()));
    all_gather(&mine, all.data(), sizeof(T));
    return all;
  }

protected:
  // How all_reduce_sum and all_reduce_max move their bytes: an all_gather that implementations may
  // count as an all-reduce.
  virtual void gather_for_reduce(const void* send, void* recv, size_t bytes) { all_gather(send, recv, bytes); }
};

}  // namespace zt
