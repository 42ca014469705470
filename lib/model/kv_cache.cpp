#include "model/kv_cache.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zt {

namespace {

size_t row_elements(const GptShape& shape, int batch) {
  return size_t(batch) * size_t(shape.kv_heads()) * size_t(shape.head_size());
}

int checked_capacity(const GptShape& shape, int batch, int capacity) {
  if (batch <= 0) fail("KV cache: the batch must be positive, got {}", batch);
  if (capacity <= 0 || capacity > shape.max_seq_len)
    fail("KV cache: {} positions are outside [1, {}] (model.max_seq_len)", capacity, shape.max_seq_len);
  return capacity;
}

std::vector<int> rows_of(const GptShape& shape, int capacity) {
  std::vector<int> rows(size_t(shape.n_layer));
  for (int l = 0; l < shape.n_layer; ++l) rows[size_t(l)] = KvCache::layer_rows(shape, l, capacity);
  return rows;
}

// Where each layer's k starts, and (last) the elements of all of them.
std::vector<size_t> offsets_of(const std::vector<int>& rows, size_t row_elements) {
  std::vector<size_t> offsets{0};
  for (int r : rows) offsets.push_back(offsets.back() + 2 * size_t(r) * row_elements);
  return offsets;
}

}  // namespace

KvCache::KvCache(const GptShape& shape, int batch, int capacity, Device& device, DType dtype)
    : batch_(batch),
      capacity_(checked_capacity(shape, batch, capacity)),
      row_elements_(row_elements(shape, batch)),
      rows_(rows_of(shape, capacity)),
      offsets_(offsets_of(rows_, row_elements_)),
      data_(device, dtype, offsets_.back()) {}

int KvCache::layer_rows(const GptShape& shape, int layer, int capacity) {
  const int window = shape.layer_window(layer);
  return window > 0 ? std::min(window, capacity) : capacity;
}

size_t KvCache::bytes(const GptShape& shape, int batch, int capacity, DType dtype) {
  return offsets_of(rows_of(shape, capacity), row_elements(shape, batch)).back() * dtype_size(dtype);
}

size_t KvCache::layer_bytes(const GptShape& shape, int layer, int batch, int capacity, DType dtype) {
  return 2 * size_t(layer_rows(shape, layer, capacity)) * row_elements(shape, batch) * dtype_size(dtype);
}

void KvCache::advance(int count) {
  if (count < 0 || length_ + count > capacity_)
    fail("KV cache: {} more positions after {} exceed its {}", count, length_, capacity_);
  length_ += count;
}

}  // namespace zt
