// training.save_final: the consolidated weights are written at the end, one parameter group at a
// time: what is held on top of training is two buffers of the largest group (the gathered group
// and its host copy), counted in the memory ledger, never the whole model.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "hf/hf_weights.hpp"
#include "ckpt/synced_file.hpp"
#include "core/json_file.hpp"
#include "core/sha256.hpp"
#include "hf/peft_adapter.hpp"
#include "start/run_weights.hpp"
#include "model/gpt_layout.hpp"
#include "train/model_export.hpp"
#include "ckpt/safetensors.hpp"
#include "config/config.hpp"
#include "core/ledger.hpp"
#include "self_communicator.hpp"
#include "train/run_checkpoints.hpp"
#include "train/trainer.hpp"

using namespace zt;

TEST_CASE("save_final writes the trained weights, holding one group at a time", "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / ("zt_test_save_final_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  config::ResolveOptions options;
  options.world_size = 1;
  const nlohmann::json raw = {{"train_micro_batch_size_per_gpu", 1},
                              {"model", {{"preset", "toy"}}},
                              {"training", {{"steps", 1}, {"save_final", dir.string()}}}};
  const config::Config config = config::resolve_config(raw, options, "test.json");

  test::SelfCommunicator comm;
  Trainer trainer(config, comm);
  const ParamLayout& layout = trainer.model().layout();
  CHECK(trainer.run() == 0);
  std::vector<float> trained(layout.total), loaded(layout.total, 0.0f);
  trainer.engine().gather_master(trained.data());
  const HfWeights file(dir.string(), hf_tensors(config.model.shape));
  REQUIRE(file.numel() == layout.total);
  file.read(loaded.data(), 0, layout.total);
  // The file holds the trained weights, bit for bit (the toy vocabulary, 256, needs no padding rows).
  CHECK(loaded == trained);
  CHECK(std::filesystem::exists(dir / "config.json"));

  // The same save again, measured: the peak on top of what training holds.
  size_t largest = 0;
  for (auto& g : layout.groups) largest = std::max(largest, g.size);
  const size_t before = MemoryLedger::instance().stats().cur(MemCategory::Buffers);
  MemoryLedger::instance().reset_peaks();
  const InitialWeights unused(config.model.shape, {}, layout, {});  // nothing is frozen
  save_gathered_weights((dir / "again").string(), SavedForm::Model, {config.model.shape, {}, layout}, {}, comm,
                        cpu_device(), trainer.engine(), checkpoint_pieces(trainer.engine().train_partition()), unused);
  const size_t held = MemoryLedger::instance().stats().pk(MemCategory::Buffers) - before;
  CHECK(held == 2 * largest * sizeof(float));
  CHECK(held < layout.total * sizeof(float));
  CHECK(MemoryLedger::instance().stats().cur(MemCategory::Buffers) == before);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the weights a checkpoint's run started from: \"random\" is the seeded initialisation", "[trainer]") {
  const ParamLayout layout = make_gpt_layout(*gpt_preset("toy"));
  const nlohmann::json random = {{"training", {{"init_from", "random"}, {"seed", uint64_t(7)}}}};
  const WeightSources seeded = recorded_weight_sources(config::read_recorded_run(random), layout);
  CHECK(seeded.init_from.empty());
  CHECK(seeded.seed == 7);
  const nlohmann::json model = {{"training", {{"init_from", "models/base"}, {"seed", 7}}}};
  CHECK(recorded_weight_sources(config::read_recorded_run(model), layout).init_from == "models/base");
}

TEST_CASE("a LoRA adapter names its base model, not the data's tokenizer that ships beside it", "[trainer][lora]") {
  const auto dir = std::filesystem::temp_directory_path() / ("zt_test_adapter_base_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "tokenizer");
  const std::string tokenizer_json = (dir / "tokenizer" / "tokenizer.json").string();
  write_file_durably(tokenizer_json, "{\"model\": {}}");
  const TokenizerIdentity data_tokenizer{(dir / "tokenizer").string(),
                                         "byte-level BPE",
                                         300,
                                         {{"tokenizer.json", tokenizer_json, sha256_of_file(tokenizer_json)}}};
  config::ResolveOptions options;
  options.world_size = 1;
  const nlohmann::json raw = {{"train_micro_batch_size_per_gpu", 1}, {"model", {{"preset", "toy"}}}};
  const config::Config config = config::resolve_config(raw, options, "test.json");
  // No model directory: the data's tokenizer ships, and there is no base model to name.
  const HfOutput output = final_weights_output(config, data_tokenizer);
  CHECK(output.tokenizer_dir == (dir / "tokenizer").string());
  CHECK(output.model_dir.empty());
  const LoraSpec spec{2, 4.0, 0.0, false, {"c_attn"}};
  const ParamLayout layout = make_training_layout(config.model.shape, {spec, {}});
  const std::vector<float> values(layout.total, 0.5f);
  PeftAdapterWriter writer((dir / "adapter").string(), layout, config.model.shape, spec, output);
  for (const ParamGroup& g : layout.groups) writer.write_group(g, values.data() + g.offset);
  writer.commit();
  const nlohmann::json adapter_config =
      nlohmann::json::parse(read_text_file((dir / "adapter/adapter_config.json").string()));
  CHECK(adapter_config["base_model_name_or_path"].is_null());  // PEFT writes null without a base path
  CHECK(read_text_file((dir / "adapter/tokenizer.json").string()) == "{\"model\": {}}");
  std::filesystem::remove_all(dir);
}
