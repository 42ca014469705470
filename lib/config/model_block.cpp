#include "config/model_block.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "config/blocks.hpp"
#include "config/config_search.hpp"
#include "config/json_reader.hpp"
#include "core/error.hpp"

namespace zt::config {

namespace {

struct ShapeKey {
  const char* name;
  int GptShape::*field;
};
constexpr ShapeKey kShapeKeys[] = {{"n_layer", &GptShape::n_layer},
                                   {"n_head", &GptShape::n_head},
                                   {"d_model", &GptShape::d_model},
                                   {"vocab_size", &GptShape::vocab_size},
                                   {"max_seq_len", &GptShape::max_seq_len}};

bool same_shape(const GptShape& a, const GptShape& b) {
  for (const auto& k : kShapeKeys)
    if (a.*k.field != b.*k.field) return false;
  return true;
}

}  // namespace

GptShape shape_of(const ModelConfig& m) { return {m.n_layer, m.n_head, m.d_model, m.vocab_size, m.max_seq_len}; }

ModelConfig read_model(Block& b) {
  std::vector<std::string> names;
  for (const auto& p : gpt_presets()) names.push_back(p.name);
  names.push_back("custom");
  const std::string preset = b.choice("preset", "toy", names);

  GptShape shape = preset == "custom" ? GptShape{} : *gpt_preset(preset);
  std::string missing;
  for (const auto& k : kShapeKeys) {
    if (auto v = b.optional_integer(k.name, IntRange::between(1, 1 << 30)))
      shape.*k.field = int(*v);
    else if (preset == "custom")
      missing += std::string(missing.empty() ? "" : ", ") + k.name;
  }
  if (!missing.empty())
    b.fail("preset", fmt::format("\"custom\" needs n_layer, n_head, d_model, vocab_size and max_seq_len "
                                 "(missing: {})", missing));
  // Far beyond any machine, and below where the byte counts of the plan and the buffers overflow.
  constexpr double kMaxParams = 1e15;
  const double C = shape.d_model, L = shape.n_layer;
  const double params = double(shape.vocab_size) * C + double(shape.max_seq_len) * C + L * (12 * C * C + 13 * C) + 2 * C;
  if (params > kMaxParams)
    b.diagnostics().fail(b.path(), fmt::format("n_layer {}, d_model {}, vocab_size {} and max_seq_len {} make {:.3g} parameters (expected at "
                           "most {:.0e})",
                           shape.n_layer, shape.d_model, shape.vocab_size, shape.max_seq_len, params, kMaxParams));
  if (shape.d_model % shape.n_head != 0)
    b.fail("n_head", fmt::format("{} does not divide {} {} (expected a divisor of d_model)", shape.n_head,
                                 b.path_of("d_model"), shape.d_model));
  b.finish();

  ModelConfig m;
  m.preset = "custom";
  for (const auto& p : gpt_presets())
    if (same_shape(p.shape, shape)) m.preset = p.name;
  m.n_layer = shape.n_layer;
  m.n_head = shape.n_head;
  m.d_model = shape.d_model;
  m.vocab_size = shape.vocab_size;
  m.max_seq_len = shape.max_seq_len;
  return m;
}

std::optional<std::string> model_file(const std::string& arg) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) return arg;
  if (gpt_preset(arg)) return std::nullopt;
  return find_preset_file(arg, "models");
}

nlohmann::json model_argument(const std::string& arg) {
  const std::optional<std::string> file = model_file(arg);
  if (!file && gpt_preset(arg)) return {{"preset", arg}};
  if (!file) {
    std::string presets;
    for (const auto& p : gpt_presets()) presets += (presets.empty() ? "" : ", ") + std::string(p.name);
    fail("--model {}: not a model preset ({}) and no such file", arg, presets);
  }
  nlohmann::json model = read_json_file(*file);
  if (!model.is_object()) fail("{}: {} is not an object (expected a model block such as {{\"preset\": \"toy\"}})",
                               *file, show(model));
  return model;
}

ModelConfig resolve_model_argument(const std::string& arg) {
  nlohmann::json block = model_argument(arg);
  Block b(Diagnostics{arg}, "model", &block, UnknownKeys::Error);
  return read_model(b);
}

}  // namespace zt::config
