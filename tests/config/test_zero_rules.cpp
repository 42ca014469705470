// Rules that tie zero_optimization keys to the stage, and the offload devices.
#include <filesystem>

#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("offload_param only with stage 3") {
  CHECK(error_of(with({{"zero_optimization", {{"stage", 2}, {"offload_param", {{"device", "cpu"}}}}}})) ==
        "test.json: zero_optimization.offload_param.device: \"cpu\" needs ZeRO stage 3 (parameters are partitioned "
        "only there; stage is 2)");
  auto c = resolve(
      with({{"zero_optimization", {{"stage", 3}, {"offload_param", {{"device", "cpu"}, {"buffer_count", 7}}}}}}));
  CHECK(c.zero.offload_param.device == zt::OffloadDevice::Cpu);
  CHECK(c.zero.offload_param.buffer_count == 7);
  // device none is fine at any stage (ms-swift writes it for stage 1).
  CHECK_NOTHROW(resolve(with({{"zero_optimization", {{"stage", 1}, {"offload_param", {{"device", "none"}}}}}})));
}

TEST_CASE("offload_optimizer needs stage >= 1; ratio < 1 only with stage 3") {
  CHECK(error_of(with({{"zero_optimization", {{"stage", 0}, {"offload_optimizer", {{"device", "cpu"}}}}}})).find(
            "zero_optimization.offload_optimizer.device: \"cpu\" needs ZeRO stage 1, 2 or 3 (stage is 0)") !=
        std::string::npos);
  CHECK(error_of(with(
            {{"zero_optimization", {{"stage", 2}, {"offload_optimizer", {{"device", "cpu"}, {"ratio", 0.5}}}}}})) ==
        "test.json: zero_optimization.offload_optimizer.ratio: 0.5 needs ZeRO stage 3 (partial optimizer offload; "
        "stage is 2)");
  auto c = resolve(
      with({{"zero_optimization", {{"stage", 3}, {"offload_optimizer", {{"device", "cpu"}, {"ratio", 0.3}}}}}}));
  CHECK(c.zero.offload_optimizer.ratio == 0.3);
}

TEST_CASE("nvme needs a writable nvme_path") {
  CHECK(error_of(with({{"zero_optimization", {{"stage", 2}, {"offload_optimizer", {{"device", "nvme"}}}}}})) ==
        "test.json: zero_optimization.offload_optimizer.nvme_path: missing (required when device is nvme)");
  CHECK(
      error_of(with({{"zero_optimization",
                      {{"stage", 3}, {"offload_param", {{"device", "nvme"}, {"nvme_path", "/no/such/dir"}}}}}})) ==
      "test.json: zero_optimization.offload_param.nvme_path: \"/no/such/dir\" is not a writable directory (expected a "
      "directory for offloaded state)");
  auto dir = std::filesystem::temp_directory_path() / "zt_test_nvme";
  std::filesystem::create_directories(dir);
  auto c = resolve(with({{"zero_optimization",
                          {{"stage", 3},
                           {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", dir.string()}}},
                           {"offload_param", {{"device", "nvme"}, {"nvme_path", dir.string()}}}}}}));
  CHECK(c.zero.offload_optimizer.device == zt::OffloadDevice::Nvme);
  CHECK(c.zero.offload_param.nvme_path == dir.string());
  std::filesystem::remove_all(dir);
}

TEST_CASE("stage3 settings read through") {
  auto z = resolve(with({{"zero_optimization",
                          {{"stage", 3},
                           {"stage3_max_live_parameters", 0},
                           {"stage3_max_reuse_distance", 0},
                           {"stage3_prefetch_bucket_size", 1e6},
                           {"stage3_param_persistence_threshold", 1e3},
                           {"contiguous_gradients", false},
                           {"reduce_scatter", false},
                           {"load_from_fp32_weights", false},
                           {"ignore_unused_parameters", false}}}}))
               .zero;
  CHECK(z.stage3_max_live_parameters == 0);
  CHECK(z.stage3_max_reuse_distance == 0);
  CHECK(z.stage3_prefetch_bucket_size == 1000000);
  CHECK(z.stage3_param_persistence_threshold == 1000);
  CHECK_FALSE(z.contiguous_gradients);
  CHECK_FALSE(z.reduce_scatter);
  CHECK_FALSE(z.load_from_fp32_weights);
  CHECK_FALSE(z.ignore_unused_parameters);
}
