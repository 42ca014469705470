// The expert_parallel block (DeepSpeed's AutoEP): its keys and defaults, the keys that change
// nothing named in warnings, and the sizes that cannot split the experts refused in one line.
#include <fmt/format.h>

#include <filesystem>

#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

namespace {
json moe_with(const json& ep) {
  return with({{"model", {{"preset", "qwen3-moe-tiny"}}}, {"expert_parallel", ep}});
}
}  // namespace

TEST_CASE("expert_parallel: DeepSpeed's defaults, the size of a group, and the printed block") {
  Config off = resolve(with({}));
  CHECK_FALSE(off.expert_parallel.enabled);
  CHECK(off.expert_parallel.autoep_size == 1);
  CHECK(off.expert_parallel.size() == 1);
  Config on = resolve(moe_with({{"enabled", true}, {"autoep_size", 2}, {"load_balance_coeff", nullptr},
                                {"preset_model", "qwen3_moe"}}),
                      world(4));
  CHECK(on.expert_parallel.size() == 2);
  CHECK(on.expert_parallel.preset_model == "qwen3_moe");
  const json printed = to_json(on)["expert_parallel"];
  CHECK(printed == json({{"enabled", true}, {"autoep_size", 2}, {"load_balance_coeff", nullptr},
                         {"preset_model", "qwen3_moe"}}));
  // Given but not enabled: no groups, and the size said to do nothing.
  CapturedLog log;
  CHECK(resolve(moe_with({{"autoep_size", 2}}), world(2)).expert_parallel.size() == 1);
  CHECK(log.count("expert_parallel.autoep_size: 2 has no effect while expert_parallel.enabled is false") == 1);
}

TEST_CASE("expert_parallel: AutoEP's keys that change nothing here are named in a warning") {
  CapturedLog log;
  resolve(moe_with({{"enabled", true}, {"autoep_size", 2}, {"comm_backend", "deepep"}, {"combine_impl", "auto"},
                    {"score_func", "sigmoid"}, {"use_grouped_mm", true}, {"expert_w1", "w1"}, {"no_such_key", 1}}),
          world(2));
  CHECK(log.count("expert_parallel.comm_backend: \"deepep\" has no effect") == 1);
  CHECK(log.count("expert_parallel.score_func: \"sigmoid\" has no effect") == 1);
  CHECK(log.count("expert_parallel.expert_w1: \"w1\" has no effect") == 1);
  CHECK(log.count("expert_parallel.no_such_key") == 1);
  CHECK(log.count("combine_impl") == 0);   // its default
  CHECK(log.count("use_grouped_mm") == 0);
}

TEST_CASE("expert_parallel: sizes that cannot split the experts, a dense model and a foreign preset refused") {
  CHECK(error_of(moe_with({{"enabled", true}, {"autoep_size", 2}}), world(3)) ==
        "test.json: expert_parallel.autoep_size: 2 does not divide the world size 3 (expected a divisor of it: "
        "each group of autoep_size ranks holds every expert once)");
  CHECK(error_of(moe_with({{"enabled", true}, {"autoep_size", 8}}), world(8)) ==
        "test.json: expert_parallel.autoep_size: 8 does not divide num_experts 4 (expected a divisor of it: each "
        "rank of a group holds num_experts / autoep_size experts)");
  CHECK(error_of(with({{"model", {{"preset", "qwen3-tiny"}}}, {"expert_parallel", {{"enabled", true}}}})) ==
        "test.json: expert_parallel.enabled: true, and the model (qwen3) has no experts (expected a "
        "mixture-of-experts model: qwen3_moe, qwen2_moe, mixtral or olmoe with num_experts > 0)");
  CHECK(error_of(moe_with({{"enabled", true}, {"preset_model", "mixtral"}})) ==
        "test.json: expert_parallel.preset_model: \"mixtral\" is a preset for mixtral models, and the model is "
        "qwen3_moe");
  CHECK_THAT(error_of(moe_with({{"enabled", true}, {"preset_model", "gpt_oss"}})),
             Catch::Contains("\"gpt_oss\" is not one of DeepSpeed's presets (mixtral, qwen3_moe,"));
  CHECK_THAT(error_of(moe_with({{"enabled", true}, {"load_balance_coeff", 0.001}})),
             Catch::Contains("expert_parallel.load_balance_coeff: 0.001 is not supported"));
  CHECK_THAT(error_of(moe_with({{"enabled", true}, {"autoep_size", 0}})),
             Catch::Contains("expert_parallel.autoep_size: 0 is out of range"));
  CapturedLog log;
  resolve(moe_with({{"enabled", true}, {"autoep_size", 1}}));
  CHECK(log.count("expert_parallel.autoep_size: 1: every rank holds every expert") == 1);
}

TEST_CASE("expert_parallel: a group's experts offloaded to files refused before anything is written") {
  const std::string dir = std::filesystem::temp_directory_path().string();
  for (const char* key : {"offload_optimizer", "offload_param"}) {
    json c = moe_with({{"enabled", true}, {"autoep_size", 2}});
    c["zero_optimization"] = {{"stage", 3}, {key, {{"device", "nvme"}, {"nvme_path", dir}}}};
    CHECK(error_of(c, world(2)) == fmt::format("test.json: zero_optimization.{}.device: \"nvme\" with "
                                               "expert_parallel.autoep_size 2: the experts a rank holds are not "
                                               "offloaded to files (expected \"cpu\" or \"none\", or "
                                               "expert_parallel.enabled false)",
                                               key));
    c["expert_parallel"]["autoep_size"] = 1;  // no second domain: files as for any model
    CHECK_NOTHROW(resolve(c, world(2)));
  }
}
