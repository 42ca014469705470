#pragma once
// The keys and values of every layer for the positions a generation has computed so far, so that a
// new token attends to them instead of recomputing them (Gpt::forward_cached,
// ModelOps::attention_cached_forward). Per layer, k and v of [batch, rows, n_kv_head·head_dim]
// elements in device memory, in the model's compute dtype, registered as activations. Each layer's
// rows are a ring, position p at row p % rows: a full layer has a row for every position, a sliding
// layer only for its window's (its queries never read further back), so its memory stays W rows
// however long the generation runs.
#include <cstddef>
#include <vector>

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
  // The rows of a layer's ring: `capacity`, or min(capacity, sliding_window) for a sliding layer.
  static int layer_rows(const GptShape& shape, int layer, int capacity);
  // The bytes the cache holds: per layer, k and v of batch · layer_rows · n_kv_head · head_dim.
  static size_t bytes(const GptShape& shape, int batch, int capacity, DType dtype);
  // Those of layer `layer` alone.
  static size_t layer_bytes(const GptShape& shape, int layer, int batch, int capacity, DType dtype);

  int batch() const { return batch_; }
  int capacity() const { return capacity_; }
  // The positions held, the same for every sequence: the next token is at this position.
  int length() const { return length_; }
  void clear() { length_ = 0; }
  // Records that positions [length(), length() + count) have been written (Gpt::forward_cached).
  void advance(int count);

  int rows(int layer) const { return rows_.at(size_t(layer)); }
  void* keys(int layer) { return data_.at(offsets_.at(size_t(layer))); }
  void* values(int layer) { return data_.at(offsets_.at(size_t(layer)) + layer_elements(layer)); }

private:
  size_t layer_elements(int layer) const { return size_t(rows(layer)) * row_elements_; }  // of one layer's k (or v)

  int batch_, capacity_, length_ = 0;
  size_t row_elements_;          // of one row of every sequence: batch · n_kv_head · head_dim
  std::vector<int> rows_;        // per layer
  std::vector<size_t> offsets_;  // per layer: where its k starts (its v follows)
  ActTensor data_;
};

}  // namespace zt
