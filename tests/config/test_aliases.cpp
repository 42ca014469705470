// Deprecated spellings and short aliases: accepted with a warning, read as the canonical key;
// given together with the canonical key they are an error.
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("cpu_offload is offload_optimizer.device cpu") {
  CapturedLog log;
  auto c = resolve(with({{"zero_optimization", {{"stage", 2}, {"cpu_offload", true}}}}));
  CHECK(c.zero.offload_optimizer.device == zt::OffloadDevice::Cpu);
  CHECK(log.count("zero_optimization.cpu_offload: deprecated") == 1);
  CHECK(resolve(with({{"zero_optimization", {{"stage", 2}, {"cpu_offload", false}}}})).zero.offload_optimizer.device ==
        zt::OffloadDevice::None);
  CHECK(error_of(with({{"zero_optimization", {{"stage", 0}, {"cpu_offload", true}}}})).find(
            "zero_optimization.cpu_offload: true needs ZeRO stage 1, 2 or 3") != std::string::npos);
  CHECK(error_of(with({{"zero_optimization",
                        {{"stage", 2},
                         {"cpu_offload", true},
                         {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", "/tmp"}}}}}}))
            .find("zero_optimization.cpu_offload: true contradicts offload_optimizer.device \"nvme\"") !=
        std::string::npos);
}

TEST_CASE("cpu_offload_param and cpu_offload_use_pin_memory") {
  CapturedLog log;
  auto c = resolve(with(
      {{"zero_optimization", {{"stage", 3}, {"cpu_offload_param", true}, {"cpu_offload_use_pin_memory", false}}}}));
  CHECK(c.zero.offload_param.device == zt::OffloadDevice::Cpu);
  CHECK_FALSE(c.zero.offload_param.pin_memory);
  CHECK_FALSE(c.zero.offload_optimizer.pin_memory);
  CHECK(log.count("cpu_offload_param: deprecated") == 1);
  CHECK(log.count("cpu_offload_use_pin_memory: deprecated") == 1);
}

TEST_CASE("stage3_gather_fp16_weights_on_model_save is the 16bit key") {
  CapturedLog log;
  auto c = resolve(with({{"zero_optimization", {{"stage", 3}, {"stage3_gather_fp16_weights_on_model_save", true}}}}));
  CHECK(c.zero.stage3_gather_16bit_weights_on_model_save);
  CHECK(log.count("zero_optimization.stage3_gather_fp16_weights_on_model_save: deprecated; read as "
                  "stage3_gather_16bit_weights_on_model_save") == 1);
}

TEST_CASE("\"bfloat16\" is read as bf16") {
  CapturedLog log;
  auto c = resolve(with({{"bfloat16", {{"enabled", true}}}}));
  CHECK(c.bf16.enabled);
  CHECK(log.count("bfloat16: deprecated spelling of bf16") == 1);
  CHECK(error_of(with({{"bfloat16", {{"enabled", true}}}, {"bf16", {{"enabled", true}}}})).find(
            "test.json: bfloat16: given together with bf16") == 0);
}

TEST_CASE("short aliases of the stage3_* keys") {
  const std::vector<std::tuple<std::string, std::string, int64_t ZeroConfig::*>> aliases = {
      {"max_live_parameters", "stage3_max_live_parameters", &ZeroConfig::stage3_max_live_parameters},
      {"prefetch_bucket_size", "stage3_prefetch_bucket_size", &ZeroConfig::stage3_prefetch_bucket_size},
      {"param_persistence_threshold", "stage3_param_persistence_threshold",
       &ZeroConfig::stage3_param_persistence_threshold},
      {"max_reuse_distance", "stage3_max_reuse_distance", &ZeroConfig::stage3_max_reuse_distance},
  };
  for (const auto& [alias, canonical, field] : aliases) {
    INFO(alias);
    CapturedLog log;
    auto c = resolve(with({{"zero_optimization", {{"stage", 3}, {alias, 1234}}}}));
    CHECK(c.zero.*field == 1234);
    CHECK(log.count("zero_optimization." + alias + ": short alias of " + canonical) == 1);
    CHECK(error_of(with({{"zero_optimization", {{"stage", 3}, {alias, 1}, {canonical, 2}}}})).find(
              "zero_optimization." + alias + ": given together with zero_optimization." + canonical) !=
          std::string::npos);
  }
  CapturedLog log;
  auto c = resolve(with({{"zero_optimization", {{"stage", 3}, {"gather_16bit_weights_on_model_save", true}}}}));
  CHECK(c.zero.stage3_gather_16bit_weights_on_model_save);
  CHECK(log.count("gather_16bit_weights_on_model_save: short alias of stage3_gather_16bit_weights_on_model_save") == 1);
  // An alias keeps the rules of its canonical key.
  CHECK(error_of(with({{"zero_optimization", {{"max_live_parameters", -1}}}})) ==
        "test.json: zero_optimization.stage3_max_live_parameters: -1 is out of range (expected >= 0)");
}

TEST_CASE("\"zero_optimization\": true means stage 1") {
  CHECK(resolve(with({{"zero_optimization", true}})).zero.stage == 1);
  CHECK(resolve(with({{"zero_optimization", false}})).zero.stage == 0);
}

TEST_CASE("optimizer and scheduler types are case-insensitive, canonical in the result") {
  CHECK(resolve(with({{"optimizer", {{"type", "adamw"}}}})).optimizer.type == "AdamW");
  CHECK(resolve(with({{"optimizer", {{"type", "ADAM"}}}})).optimizer.type == "Adam");
  CHECK(resolve(with({{"scheduler", {{"type", "warmuplr"}}}})).scheduler.type == "WarmupLR");
}
