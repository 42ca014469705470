// LoRA against PEFT + transformers (tests/fixtures/lora, scripts/make_lora_fixtures.py), on 2 ranks
// under mpirun: a small Qwen3 and a small Llama 3 from their save_pretrained directories, adapters
// from PEFT's adapter directory, 8 steps of AdamW in fp32 at ZeRO stages 0 and 3 give PEFT's losses
// and gradient norms; the adapter directory zerotrain saves is the one PEFT loaded (its config, and
// the weights read back bit for bit), and zerotrain computes PEFT's logits from it; the merged
// model zerotrain exports computes the adapted model's logits, and transformers' from the merged
// model it checked.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "adamw_block.hpp"
#include "ckpt/checkpoint_dir.hpp"
#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "config/config.hpp"
#include "core/json_file.hpp"
#include "data/token_file_writer.hpp"
#include "hf/peft_adapter.hpp"
#include "inference/model_source.hpp"
#include "mpi_world.hpp"
#include "step_records.hpp"
#include "train/model_export.hpp"
#include "train/trainer.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(ZT_SOURCE_DIR) / "tests" / "fixtures" / "lora";

struct Fixture {
  std::string name;
  fs::path dir;
  nlohmann::json ref;
  std::string tokens;  // the token file of ref's tokens
};

Fixture fixture(const std::string& name) {
  Fixture f{name, kFixtures / name, nlohmann::json::parse(std::ifstream(kFixtures / name / "reference.json")), ""};
  const std::string dir = shared_dir("lora-peft", name + "-tokens");
  f.tokens = dir + "/tokens.bin";
  if (world().rank() == 0) {
    const int vocab = read_json_file((f.dir / "base" / "config.json").string()).at("vocab_size");
    TokenFileWriter writer(f.tokens, vocab);
    writer.append(f.ref.at("tokens").get<std::vector<int32_t>>(), {});
    writer.finish();
  }
  world().control().barrier();
  return f;
}

// The run of the fixture's script: its model, adapters, data and optimizer, on this world.
nlohmann::json run_json(const Fixture& f, int stage) {
  const nlohmann::json& r = f.ref;
  const nlohmann::json& l = r.at("lora");
  const int W = world().world_size();
  return {{"train_micro_batch_size_per_gpu", r.at("B")},
          {"gradient_accumulation_steps", r.at("ranks").get<int>() / W},
          {"gradient_clipping", r.at("clip")},
          {"optimizer", adamw_block([&](const char* name) { return r.at(name); })},
          {"zero_optimization", {{"stage", stage}}},
          {"model", {{"path", (f.dir / "base").string()}}},
          {"data", {{"train", f.tokens}, {"seq_len", r.at("T")}, {"shuffle", false}}},
          {"lora",
           {{"r", l.at("r")},
            {"alpha", l.at("alpha")},
            {"target_modules", l.at("target_modules")},
            {"use_rslora", l.at("use_rslora")},
            {"init_from", (f.dir / "init_adapter").string()}}},
          {"training",
           {{"steps", r.at("steps")},
            {"eval_interval", 0},
            {"lr_scheduler_type", "constant"},
            {"init_from", (f.dir / "base").string()}}}};
}

config::Config resolve(const nlohmann::json& raw) {
  config::ResolveOptions options;
  options.world_size = world().world_size();
  return config::resolve_config(raw, options, "lora_peft.json");
}

// The model's logits of the fixture's eval tokens, [B·T, V] (collective at stage 3).
std::vector<float> logits_of(Trainer& trainer, const Fixture& f) {
  const int B = f.ref.at("B"), T = f.ref.at("T"), V = trainer.model().shape().vocab_size;
  const std::vector<int32_t> inputs = f.ref.at("eval_tokens").get<std::vector<int32_t>>();
  trainer.engine().begin_micro_batch();
  trainer.model().forward(inputs.data(), nullptr, B, T, trainer.engine());
  std::vector<float> out(size_t(B) * T * V);
  for (int row = 0; row < B * T; ++row) trainer.model().copy_logits_row(row, out.data() + size_t(row) * V);
  return out;
}

// The largest difference as a fraction of the largest logit.
double relative_max_difference(const std::vector<float>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

std::vector<float> trained_master(Trainer& trainer) {
  std::vector<float> master(trainer.engine().trainable().numel());
  trainer.engine().gather_master(master.data());
  return master;
}

}  // namespace

TEST_CASE("LoRA trains as PEFT + transformers: 8 steps at stages 0 and 3; the saved adapter is PEFT's",
          "[trainer][lora][peft]") {
  REQUIRE(2 % world().world_size() == 0);
  for (const char* name : {"qwen3", "llama3"}) {
    const Fixture f = fixture(name);
    for (int stage : {0, 3}) {
      DYNAMIC_SECTION(name << " at stage " << stage) {
        const std::string dir = shared_dir("lora-peft", std::string(name) + "-stage" + std::to_string(stage));
        nlohmann::json raw = run_json(f, stage);
        raw["training"]["metrics"] = dir + "/metrics.jsonl";
        raw["training"]["save_final"] = dir + "/adapter";
        raw["training"]["checkpoint_dir"] = dir + "/ck";
        const config::Config c = resolve(raw);  // (the trainer keeps a reference)
        Trainer trainer(c, world());
        REQUIRE(trainer.run() == 0);
        const std::vector<float> master = trained_master(trainer);
        if (world().rank() == 0) {
          const auto steps = step_records(dir + "/metrics.jsonl");
          REQUIRE(steps.size() == f.ref.at("losses").size());
          for (size_t i = 0; i < steps.size(); ++i) {
            const double loss = steps[i]["loss"], want = f.ref["losses"][i];
            const double norm = steps[i]["grad_norm"], want_norm = f.ref["grad_norms"][i];
            INFO("step " << i + 1 << ": loss " << loss << ", PEFT " << want << "; grad norm " << norm << ", PEFT "
                         << want_norm);
            CHECK(std::abs(loss - want) <= 1e-4 * want);
            CHECK(std::abs(norm - want_norm) <= 1e-4 * want_norm);
          }
          // The adapter directory PEFT loaded: the same config (the base model's path aside).
          nlohmann::json saved = read_json_file(dir + "/adapter/adapter_config.json");
          nlohmann::json checked = read_json_file((f.dir / "trained_adapter" / "adapter_config.json").string());
          saved.erase("base_model_name_or_path");
          checked.erase("base_model_name_or_path");
          CHECK(saved == checked);
        }
        world().control().barrier();
        // Read back, the saved adapter is the trained state, bit for bit.
        nlohmann::json again = run_json(f, stage);
        again["lora"]["init_from"] = dir + "/adapter";
        const config::Config c_again = resolve(again);
        Trainer reread(c_again, world());
        const std::vector<float> read = trained_master(reread);
        REQUIRE(read.size() == master.size());
        CHECK(std::memcmp(read.data(), master.data(), master.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("PEFT's logits from the adapter zerotrain saved, and transformers' from the merged model it exported",
          "[trainer][lora][peft]") {
  for (const char* name : {"qwen3", "llama3"}) {
    DYNAMIC_SECTION(name) {
      const Fixture f = fixture(name);
      const std::string dir = shared_dir("lora-peft", std::string(name) + "-logits");
      // The adapter PEFT loaded, in zerotrain.
      nlohmann::json raw = run_json(f, 3);
      raw["lora"]["init_from"] = (f.dir / "trained_adapter").string();
      raw["lora"]["save_merged"] = true;
      raw["training"]["checkpoint_dir"] = dir + "/ck";
      raw["training"]["save_final"] = dir + "/final";
      raw["training"]["steps"] = 1;
      const config::Config c_adapted = resolve(raw);  // (a trainer keeps a reference)
      Trainer adapted(c_adapted, world());
      const std::vector<float> lora_logits = logits_of(adapted, f);
      const double to_peft = relative_max_difference(lora_logits, f.ref.at("peft_logits").get<std::vector<double>>());
      INFO("zerotrain against PEFT " << to_peft);
      CHECK(to_peft < 1e-5);
      // The merged model transformers loaded, in zerotrain.
      nlohmann::json plain = run_json(f, 0);
      plain.erase("lora");
      plain["training"]["init_from"] = (f.dir / "merged").string();
      const config::Config c_merged = resolve(plain);
      Trainer merged(c_merged, world());
      const std::vector<float> merged_logits = logits_of(merged, f);
      const double to_transformers =
          relative_max_difference(merged_logits, f.ref.at("merged_logits").get<std::vector<double>>());
      INFO("zerotrain's merged model against transformers " << to_transformers);
      CHECK(to_transformers < 1e-5);

      // zerotrain's export --merge of a checkpoint: the adapted model's logits.
      REQUIRE(adapted.run() == 0);  // one step: a checkpoint of the adapters (which moved)
      const std::vector<float> after = logits_of(adapted, f);
      if (world().rank() == 0) export_checkpoint(dir + "/ck", dir + "/merged", HfOutput(DType::F32), true);
      world().control().barrier();
      plain["training"]["init_from"] = dir + "/merged";
      const config::Config c_exported = resolve(plain);
      Trainer exported(c_exported, world());
      std::vector<double> expected(after.begin(), after.end());
      const double merged_vs_adapted = relative_max_difference(logits_of(exported, f), expected);
      INFO("exported merged model against the adapted model " << merged_vs_adapted);
      CHECK(merged_vs_adapted < 1e-5);
      // lora.save_merged writes what export --merge writes, byte for byte.
      if (world().rank() == 0)
        for (const char* file : {"model.safetensors", "config.json"})
          CHECK(read_text_file(dir + "/final/" + file) == read_text_file(dir + "/merged/" + file));
      // generate and eval read the checkpoint as the merged model, bit for bit.
      const LoadedModel from_checkpoint = load_model(dir + "/ck"), from_export = load_model(dir + "/merged");
      REQUIRE(from_checkpoint.weights.size() == from_export.weights.size());
      CHECK(std::memcmp(from_checkpoint.weights.data(), from_export.weights.data(),
                        from_export.weights.size() * sizeof(float)) == 0);
    }
  }
}
