#pragma once
// The contract between the model and the ZeRO engine (docs/architecture.md, "Parameter groups and
// ParamHooks"): all parameters live in one flat buffer, cut into groups (embeddings, each
// transformer block, the final norm); each group is a contiguous run holding named tensors at
// fixed offsets. Offsets are absolute, in elements.
#include <cstddef>
#include <string>
#include <vector>

namespace zt {

// The elements of a tensor of `shape`, and the shape as messages write it: "[768, 2304]".
inline size_t numel_of(const std::vector<size_t>& shape) {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  return n;
}
inline std::string shape_text(const std::vector<size_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

struct TensorSpec {
  std::string name;           // e.g. "h.3.attn.c_attn.weight"
  size_t offset = 0;          // first element in the flat buffer
  std::vector<size_t> shape;  // as stored (row-major)
  bool weight_decay = false;  // AdamW decay applies (tensors of two or more dimensions)
  // Trained, or frozen (training.freeze, a LoRA run's base weights): a frozen tensor keeps its
  // parameters but has no gradient and no optimizer state.
  bool trainable = true;
  size_t numel() const { return numel_of(shape); }
};

struct ParamGroup {
  std::string name;  // "embeddings", "h.0", ..., "ln_f"
  size_t offset = 0;
  size_t size = 0;
  std::vector<TensorSpec> tensors;  // in order, exactly covering [offset, offset + size)
  // The ranks its parameters, gradients and optimizer state are sharded over: 0 every rank's, 1 a
  // group of ranks that hold the same values (the engine's second communicator), where each group
  // of ranks holds its own.
  int domain = 0;
};

struct ParamLayout {
  std::vector<ParamGroup> groups;  // in order, exactly covering [0, total)
  size_t total = 0;

  // Elements of the trainable tensors.
  size_t trainable_numel() const {
    size_t n = 0;
    for (auto& g : groups)
      for (auto& t : g.tensors) n += t.trainable ? t.numel() : 0;
    return n;
  }
  bool has_frozen() const { return trainable_numel() != total; }
  // Whether group g holds any trainable tensor.
  bool group_trainable(size_t g) const {
    for (auto& t : groups[g].tensors)
      if (t.trainable) return true;
    return false;
  }

  const TensorSpec* find(const std::string& name) const {
    for (auto& g : groups)
      for (auto& t : g.tensors)
        if (t.name == name) return &t;
    return nullptr;
  }
};

}  // namespace zt
