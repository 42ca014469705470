#include "config/recorded_run.hpp"

#include "config/config.hpp"

namespace zt::config {

namespace {

std::string text_at(const nlohmann::json& config, const char* pointer) {
  const nlohmann::json::json_pointer p(pointer);
  return config.contains(p) && config.at(p).is_string() ? config.at(p).get<std::string>() : "";
}

TrainedParts recorded_parts(const nlohmann::json& config) {
  TrainedParts parts;
  const nlohmann::json::json_pointer freeze("/training/freeze");
  if (config.contains(freeze)) parts.freeze = config.at(freeze).get<std::vector<std::string>>();
  if (!config.contains("lora") || !config.at("lora").value("enabled", false)) return parts;
  const nlohmann::json& l = config.at("lora");
  parts.lora = LoraSpec{l.at("r").get<int>(), l.at("alpha").get<double>(), l.at("dropout").get<double>(),
                        l.at("use_rslora").get<bool>(), l.at("target_modules").get<std::vector<std::string>>()};
  return parts;
}

}  // namespace

RecordedRun read_recorded_run(const nlohmann::json& config, const std::string& where) {
  RecordedRun r;
  r.model_path = text_at(config, "/model/path");
  r.init_from = text_at(config, "/training/init_from");
  if (r.init_from == kRandomInit) r.init_from.clear();
  r.lora_init_from = text_at(config, "/lora/init_from");
  const nlohmann::json::json_pointer seed("/training/seed");
  if (config.contains(seed) && config.at(seed).is_number_unsigned()) r.seed = config.at(seed).get<uint64_t>();
  r.sample_tokenizer = text_at(config, "/training/sample_tokenizer");
  if (const std::string mismatch = text_at(config, "/data/tokenizer_mismatch"); !mismatch.empty())
    r.tokenizer_mismatch = kTokenizerMismatchNames.parse(mismatch, where + " data.tokenizer_mismatch");
  r.parts = recorded_parts(config);
  return r;
}

}  // namespace zt::config
