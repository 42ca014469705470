#pragma once
// What `zerotrain generate` holds on its device (generate --dry-run): the weights in the dtype it
// computes in, the KV cache of each layer (a full layer a row per position, a sliding layer a ring
// of its window's rows) and one block's activations; per layer kind, as layers differ by their
// attention (full or sliding) and their MLP (dense or experts).
#include <cstddef>
#include <string>
#include <vector>

#include "kernels/model_ops.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

struct GenerateLayerKind {
  int window = 0;       // the keys a query attends to at most; 0: full attention
  bool experts = false;  // a mixture-of-experts MLP
  int layers = 0;        // how many layers are of this kind
  size_t weight_bytes = 0;  // of one layer
  int kv_rows = 0;          // the rows of one layer's KV ring
  size_t kv_bytes = 0;      // one layer's k and v
  std::string name() const;  // "sliding (window 512), dense MLP"
};

struct GeneratePlan {
  int positions = 0;  // prompt and new tokens together, the KV cache's capacity
  DType dtype = DType::F32;
  std::vector<GenerateLayerKind> kinds;  // in the order their first layer comes
  size_t other_weight_bytes = 0;         // the embedding, the final norm and an untied LM head
  size_t weights = 0, kv_cache = 0, activations = 0;
  size_t total() const { return weights + kv_cache + activations; }
};

// The bytes generate allocates for `shape` with room for `positions` positions (batch 1), with the
// model's operators `ops` (their dtype the weights', the cache's and the activations').
GeneratePlan plan_generate(const GptShape& shape, int positions, const ModelOps& ops);

// The plan as --dry-run prints it: a line per layer kind, then the totals.
std::string format_generate_plan(const GeneratePlan& plan);

}  // namespace zt
