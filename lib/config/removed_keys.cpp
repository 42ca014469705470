// The keys DeepSpeed 0.19.8 removed (its _REMOVED_TOP_LEVEL_CONFIG_KEYS and _REMOVED_ZERO_CONFIG_KEYS):
// DeepSpeed refuses a config that carries any of them. Here a key that asks for nothing (a block
// with "enabled": false or no keys, a flag at its old default) only warns, so that configs written
// for older DeepSpeed keep loading; any other value is refused as DeepSpeed refuses it.
#include <nlohmann/json.hpp>

#include "config/blocks.hpp"

namespace zt::config {

namespace {

struct RemovedKey {
  const char* key;
  nlohmann::json off;  // the value that asks for nothing; null: a block, off when disabled or empty
  const char* what;
};

bool asks_for_nothing(const nlohmann::json* v, const nlohmann::json& off) {
  if (!v) return true;  // null
  if (!off.is_null()) return *v == off;
  if (!v->is_object()) return false;
  return v->empty() || (v->contains("enabled") && (*v)["enabled"] == false);
}

void read_removed(Block& b, const std::vector<RemovedKey>& keys) {
  for (const RemovedKey& k : keys) {
    if (!b.present(k.key) && !b.is_null(k.key)) continue;
    b.removed(k.key, asks_for_nothing(b.raw(k.key), k.off), k.what);
  }
}

}  // namespace

void read_removed_top_level_keys(Block& top) {
  static const std::vector<RemovedKey> keys{
      {"nebula", nullptr, "Nebula checkpointing"},
      {"compression_training", nullptr, "the compression library"},
      {"amp", nullptr, "NVIDIA Apex AMP; use bf16 or fp16"},
      {"quantize_training", nullptr, "Mixture-of-Quantization"},
      {"sparse_gradients", false, "sparse embedding gradients"},
      {"eigenvalue", nullptr, "eigenvalue-based Mixture-of-Quantization"},
      {"sparse_attention", nullptr, "Sparse Attention"},
      {"elasticity", nullptr, "elastic training; set the batch sizes directly"},
      {"graph_harvesting", false, "graph harvesting"},
      {"curriculum_learning", nullptr, "legacy curriculum learning"},
      {"progressive_layer_drop", nullptr, "Progressive Layer Dropping"},
  };
  read_removed(top, keys);
}

void read_removed_zero_keys(Block& zero) {
  static const std::vector<RemovedKey> keys{
      {"mics_shard_size", -1, "MiCS sharding"},
      {"mics_hierarchical_params_gather", false, "MiCS sharding"},
      {"zeropp_loco_param", nullptr, "LoCo-ZeRO++"},
  };
  read_removed(zero, keys);
}

}  // namespace zt::config
