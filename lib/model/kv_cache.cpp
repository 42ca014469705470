#include "model/kv_cache.hpp"

#include "core/error.hpp"

namespace zt {

namespace {

size_t layer_elements(const GptShape& shape, int batch, int capacity) {
  return size_t(batch) * size_t(capacity) * size_t(shape.kv_heads()) * size_t(shape.head_size());
}

int checked_capacity(const GptShape& shape, int batch, int capacity) {
  if (batch <= 0) fail("KV cache: the batch must be positive, got {}", batch);
  if (capacity <= 0 || capacity > shape.max_seq_len)
    fail("KV cache: {} positions are outside [1, {}] (model.max_seq_len)", capacity, shape.max_seq_len);
  return capacity;
}

}  // namespace

KvCache::KvCache(const GptShape& shape, int batch, int capacity, Device& device, DType dtype)
    : batch_(batch),
      capacity_(checked_capacity(shape, batch, capacity)),
      layer_elements_(layer_elements(shape, batch, capacity)),
      data_(device, dtype, 2 * size_t(shape.n_layer) * layer_elements_) {}

size_t KvCache::bytes(const GptShape& shape, int batch, int capacity, DType dtype) {
  return 2 * size_t(shape.n_layer) * layer_elements(shape, batch, capacity) * dtype_size(dtype);
}

void KvCache::advance(int count) {
  if (count < 0 || length_ + count > capacity_)
    fail("KV cache: {} more positions after {} exceed its {}", count, length_, capacity_);
  length_ += count;
}

}  // namespace zt
