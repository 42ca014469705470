// Real-world DeepSpeed configs (fixtures/ds-configs) and zerotrain's presets (configs/) resolve at
// world sizes 1, 2 and 8; the resolved JSON is canonical and loads back to itself.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "config/config_search.hpp"
#include "core/json_file.hpp"
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> json_files(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

const fs::path kFixtures = fs::path(ZT_SOURCE_DIR) / "tests/config/fixtures/ds-configs";
const fs::path kPresets = fs::path(ZT_SOURCE_DIR) / "configs";

}  // namespace

TEST_CASE("every shared DeepSpeed config resolves at world sizes 1, 2 and 8") {
  auto files = json_files(kFixtures);
  REQUIRE(files.size() >= 19);
  CapturedLog quiet;  // their deprecated spellings are expected
  for (const auto& file : files)
    for (int w : {1, 2, 8}) {
      INFO(file << " at world size " << w);
      Config c;
      REQUIRE_NOTHROW(c = load_config(file, world(w)));
      CHECK(c.train_batch_size == c.train_micro_batch_size_per_gpu * c.gradient_accumulation_steps * w);
      CHECK(c.source == file);
      // fp16/bf16 "auto" on the CPU backend: bf16, never fp16.
      CHECK_FALSE(c.fp16.enabled);
    }
  // None carries a key unknown to zerotrain, so none has a near miss that would now be an error.
  CHECK(quiet.count("unknown key") == 0);
}

TEST_CASE("fixtures: the values they set are the values resolved") {
  CapturedLog quiet;
  auto c = load_config((kFixtures / "hf-transformers_ds_config_zero3.json").string(), world(2));
  CHECK(c.zero.stage == 3);
  CHECK(c.zero.offload_optimizer.device == zt::OffloadDevice::Cpu);
  CHECK(c.zero.offload_param.device == zt::OffloadDevice::Cpu);
  CHECK(c.zero.stage3_gather_16bit_weights_on_model_save);  // from the deprecated fp16 spelling
  CHECK(c.zero.reduce_bucket_size == 64 * 64);              // "auto" with the toy model
  CHECK(c.steps_per_print == 2000);
  CHECK(c.scheduler.type == "WarmupLR");
  // fp16 "auto" with no bf16 block: what the Trainer makes of it without --fp16, fp32.
  CHECK(c.dtype() == "fp32");
  CHECK(load_config((kFixtures / "hf-transformers_ds_config_zero2.json").string(), world(2)).dtype() == "bf16");
  auto a = load_config((kFixtures / "axolotl_zero3_bf16.json").string(), world(8));
  CHECK(a.zero.stage3_max_live_parameters == 0);  // short alias
  CHECK(a.zero.sub_group_size == 0);
  CHECK(a.bf16.enabled);
  auto l = load_config((kFixtures / "llama-factory_ds_z2_config.json").string(), world(2));
  CHECK(l.zero.reduce_bucket_size == 500000000);
  CHECK(l.zero_allow_untested_optimizer);
}

TEST_CASE("every preset in configs/ resolves and is what its name says") {
  const std::map<std::string, std::pair<int, std::string>> expected = {
      {"zero0", {0, "none"}}, {"zero1", {1, "none"}}, {"zero2", {2, "none"}},
      {"zero2_offload", {2, "cpu"}}, {"zero3", {3, "none"}}, {"zero3_offload", {3, "cpu"}}};
  CHECK(preset_names("").size() >= expected.size());
  for (const auto& [name, want] : expected) {
    for (int w : {1, 2, 8}) {
      INFO(name << " at world size " << w);
      CapturedLog log;
      auto c = load_config(name, world(w));
      CHECK(c.zero.stage == want.first);
      CHECK(zt::kOffloadDeviceNames.name(c.zero.offload_optimizer.device) == want.second);
      CHECK(c.bf16.enabled);
      CHECK(c.optimizer.type == "AdamW");
      CHECK_FALSE(c.scheduler.type.empty());
      CHECK(c.model.preset == "toy");
      CHECK(fs::is_regular_file(c.data.train.at(0)));
      CHECK(log.warnings().empty());  // presets use canonical keys only
    }
  }
  for (const auto& file : json_files(kPresets)) CHECK_NOTHROW(load_config(file, world(4)));
}

TEST_CASE("find_config_file: path as given, then preset names") {
  CHECK(fs::path(find_config_file("zero2")) == kPresets / "zero2.json");
  CHECK(fs::path(find_config_file("zero2.json")) == kPresets / "zero2.json");
  const std::string fixture = (kFixtures / "ms-swift_zero1.json").string();
  CHECK(find_config_file(fixture) == fixture);
  CHECK_THROWS_WITH(find_config_file("zero9"),
                    Catch::Contains("--config zero9: no such file or preset") && Catch::Contains("zero3_offload"));
}

TEST_CASE("errors from a file start with the file's path") {
  auto dir = fs::temp_directory_path() / "zt_test_config_source";
  fs::create_directories(dir);
  auto file = (dir / "bad.json").string();
  std::ofstream(file) << R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 4}})";
  CHECK_THROWS_WITH(load_config(file, world(1)), file + ": zero_optimization.stage: 4 is out of range (expected 0..3)");
  fs::remove_all(dir);
}

TEST_CASE("to_json prints canonical names and nothing else") {
  auto j = to_json(load_config("zero3_offload", world(2)));
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  const std::set<std::string> expected = {
      "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping",
      "steps_per_print", "wall_clock_breakdown", "prescale_gradients", "gradient_predivide_factor",
      "communication_data_type", "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer", "dump_state",
      "zero_optimization", "fp16", "bf16", "optimizer", "scheduler", "csv_monitor", "tensorboard", "wandb",
      "comms_logger", "checkpoint", "activation_checkpointing", "aio", "expert_parallel", "data_types", "model", "data",
      "training",
      "lora",
      "preference"};
  CHECK(keys == expected);
  CHECK(j["zero_optimization"].contains("stage3_max_live_parameters"));
  CHECK_FALSE(j["zero_optimization"].contains("max_live_parameters"));
  CHECK(j["zero_optimization"]["offload_param"]["device"] == "cpu");
  CHECK(j["optimizer"]["params"]["betas"] == json({0.9, 0.999}));
  CHECK(j["scheduler"]["type"] == "WarmupDecayLR");  // the schedule of its twin zero3
  CHECK(j["communication_data_type"] == "bf16");
  CHECK(to_json(resolve(with({})))["scheduler"].is_null());
}

TEST_CASE("the resolved JSON resolves to itself (presets, fixtures, every scheduler)") {
  std::vector<json> raws;
  for (const auto& file : json_files(kPresets)) raws.push_back(zt::read_json_file(file));
  for (const auto& file : json_files(kFixtures)) raws.push_back(zt::read_json_file(file));
  raws.push_back(
      with({{"scheduler", {{"type", "OneCycle"}, {"params", {{"cycle_min_lr", 1e-4}, {"cycle_max_lr", 1e-3}}}}}}));
  raws.push_back(with({{"scheduler", {{"type", "WarmupCosineLR"}, {"params", {{"total_num_steps", 50}}}}}}));
  raws.push_back(with({{"scheduler", {{"type", "LRRangeTest"}}}}));
  raws.push_back(with({{"fp16", {{"enabled", true}}},
                       {"model",
                        {{"preset", "custom"},
                         {"n_layer", 1},
                         {"n_head", 1},
                         {"d_model", 8},
                         {"vocab_size", 9},
                         {"max_seq_len", 4}}}}));
  for (const auto& raw : raws)
    for (int w : {1, 3}) {
      INFO(raw.dump() << " at world size " << w);
      CapturedLog quiet;
      json once = to_json(resolve(raw, world(w)));
      json twice = to_json(resolve(once, world(w)));
      CHECK(once == twice);
      CHECK(quiet.count("unknown key") == 0);
    }
}
