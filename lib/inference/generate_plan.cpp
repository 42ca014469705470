#include "inference/generate_plan.hpp"

#include <fmt/format.h>

#include "model/gpt_activations.hpp"
#include "model/gpt_layout.hpp"
#include "model/kv_cache.hpp"
#include "model/moe_block.hpp"

namespace zt {

namespace {

double mib(size_t bytes) { return double(bytes) / 1048576.0; }

}  // namespace

std::string GenerateLayerKind::name() const {
  const std::string attention = window > 0 ? fmt::format("sliding (window {})", window) : "full attention";
  return attention + (experts ? ", experts" : ", dense MLP");
}

GeneratePlan plan_generate(const GptShape& shape, int positions, const ModelOps& ops) {
  GeneratePlan p;
  p.positions = positions;
  p.dtype = ops.dtype();
  const size_t element = dtype_size(p.dtype);
  const ParamLayout layout = make_gpt_layout(shape);
  p.weights = layout.total * element;
  p.other_weight_bytes = p.weights;
  for (int l = 0; l < shape.n_layer; ++l) {
    GenerateLayerKind k;
    k.window = shape.layer_window(l);
    k.experts = shape.moe.enabled() && shape.sparse(l);
    k.weight_bytes = layout.groups[size_t(l) + 1].size * element;  // group 0 is the embedding
    k.kv_rows = KvCache::layer_rows(shape, l, positions);
    k.kv_bytes = KvCache::layer_bytes(shape, l, 1, positions, p.dtype);
    p.other_weight_bytes -= k.weight_bytes;
    p.kv_cache += k.kv_bytes;
    GenerateLayerKind* same = nullptr;
    for (GenerateLayerKind& seen : p.kinds)
      if (seen.window == k.window && seen.experts == k.experts && seen.weight_bytes == k.weight_bytes) same = &seen;
    if (!same) same = &p.kinds.emplace_back(k);
    ++same->layers;
  }
  // One block's activations (generate recomputes nothing: it keeps a single block slot).
  p.activations = GptActivations::bytes(shape, 1, positions, 1, ops) + MoeBlock::bytes(shape, 1, positions, 1, ops);
  return p;
}

std::string format_generate_plan(const GeneratePlan& p) {
  std::string s = fmt::format("generate memory plan: batch 1, {} positions (the prompt and --max-new-tokens), {}\n",
                              p.positions, dtype_name(p.dtype));
  s += fmt::format("  {:<40} {:>6} {:>16} {:>8} {:>16}\n", "layers", "count", "weights/layer", "KV rows",
                   "KV cache/layer");
  for (const GenerateLayerKind& k : p.kinds)
    s += fmt::format("  {:<40} {:>6} {:>12.3f} MiB {:>8} {:>12.3f} MiB\n", k.name(), k.layers, mib(k.weight_bytes),
                     k.kv_rows, mib(k.kv_bytes));
  s += fmt::format("  {:<40} {:>6} {:>12.3f} MiB\n", "embedding, final norm, LM head", "", mib(p.other_weight_bytes));
  s += fmt::format("  weights      {:12.2f} MiB ({} bytes)\n", mib(p.weights), p.weights);
  s += fmt::format("  KV cache     {:12.2f} MiB ({} bytes)\n", mib(p.kv_cache), p.kv_cache);
  s += fmt::format("  activations  {:12.2f} MiB ({} bytes)   one block's, and the logits\n", mib(p.activations),
                   p.activations);
  s += fmt::format("  total        {:12.2f} MiB ({} bytes)\n", mib(p.total()), p.total());
  return s;
}

}  // namespace zt
