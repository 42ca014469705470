#pragma once
// The keys and values of every layer for the positions a generation has computed so far, so that a
// new token attends to them instead of recomputing them (Gpt::forward_cached,
// ModelOps::attention_cached_forward). Per layer, k and v of [batch, capacity, n_kv_head·head_dim]
// elements in device memory, in the model's compute dtype, registered as activations.
#include <cstddef>

#include "kernels/backend.hpp"
#include "model/gpt_activations.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

class KvCache {
public:
  // Room for `batch` sequences of up to `capacity` positions each. Throws zt::Error for a bound
  // that is not positive or beyond model.max_seq_len.
  KvCache(const GptShape& shape, int batch, int capacity, const Backend& backend = cpu_backend())
      : KvCache(shape, batch, capacity, backend.device, backend.model.dtype()) {}
  // The same on `device` in `dtype` (a model's: Gpt::device(), Gpt::dtype()).
  KvCache(const GptShape& shape, int batch, int capacity, Device& device, DType dtype);
  // The bytes the cache holds.
  static size_t bytes(const GptShape& shape, int batch, int capacity, DType dtype);

  int batch() const { return batch_; }
  int capacity() const { return capacity_; }
  // The positions held, the same for every sequence: the next token is at this position.
  int length() const { return length_; }
  void clear() { length_ = 0; }
  // Records that positions [length(), length() + count) have been written (Gpt::forward_cached).
  void advance(int count);

  void* keys(int layer) { return data_.at(size_t(2 * layer) * layer_elements_); }
  void* values(int layer) { return data_.at(size_t(2 * layer + 1) * layer_elements_); }

private:
  int batch_, capacity_, length_ = 0;
  size_t layer_elements_;  // of one layer's k (or v)
  ActTensor data_;          // per layer: k, then v
};

}  // namespace zt
