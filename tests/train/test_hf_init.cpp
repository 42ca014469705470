// Training from a Hugging Face model directory that transformers' save_pretrained wrote
// (tests/fixtures/hf, scripts/make_hf_dir_fixtures.py), on 2 ranks under mpirun: model.path gives
// the architecture, training.init_from the weights (sharded, fp32 and bf16), and the first step's
// loss is transformers' own on the same batch, at ZeRO stage 0 and at stage 3, where each rank
// reads only the bytes of its own shard of the parameters. Sliding-window directories (Mistral's
// window, Qwen2's use_sliding_window from max_window_layers on) over sequences three windows long
// train step by step as transformers' AdamW trains them, and the directory save_final writes
// starts where those steps ended. So do Gemma 2 (four norms a block, soft-capped attention and
// logits, GeGLU, even layers sliding) and Gemma 3 text (q/k norms, a rotary base per layer kind).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "config/config.hpp"
#include "data/token_file_writer.hpp"
#include "mpi_world.hpp"
#include "train/trainer.hpp"

using namespace zt;
using zt::test::world;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(ZT_SOURCE_DIR) / "tests" / "fixtures" / "hf";

nlohmann::json reference_of(const std::string& name) {
  return nlohmann::json::parse(std::ifstream(kFixtures / (name + ".reference.json")));
}

// The reference's tokens as an llm.c token file (rank 0 writes it).
std::string write_tokens(const nlohmann::json& ref, const std::string& name, int vocab) {
  const fs::path dir = fs::path(ZT_BINARY_DIR) / "test-runs" / "hf-init";
  const std::string path = (dir / (name + ".bin")).string();
  if (world().rank() == 0) {
    fs::create_directories(dir);
    TokenFileWriter writer(path, vocab);
    writer.append(ref.at("tokens").get<std::vector<int32_t>>(), {});
    writer.finish();
  }
  world().control().barrier();
  return path;
}

// The loss of each step a run's metrics file records.
std::vector<double> step_losses(const fs::path& metrics) {
  std::vector<double> losses;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.at("event") == "step") losses.push_back(record.at("loss"));
  }
  return losses;
}

// One step of B x T on each of two windows: gradient accumulation over both, or a window per rank.
// `training` adds to the training block.
config::Config make(const std::string& model_dir, const std::string& data, const nlohmann::json& ref, int stage,
                    const nlohmann::json& training = nlohmann::json::object()) {
  const int W = world().world_size();
  nlohmann::json raw = {
      {"train_micro_batch_size_per_gpu", ref.at("B")},
      {"gradient_accumulation_steps", 2 / W},
      {"zero_optimization", {{"stage", stage}}},
      {"model", {{"path", model_dir}}},
      {"data", {{"train", data}, {"seq_len", ref.at("T")}, {"shuffle", false}}},
      {"training", {{"steps", 1}, {"eval_interval", 0}, {"init_from", model_dir}}}};
  raw["training"].update(training);
  if (ref.contains("adamw")) {  // torch.optim.AdamW's settings, a constant learning rate
    const nlohmann::json& o = ref.at("adamw");
    raw["optimizer"] = {{"type", "AdamW"},
                        {"params", {{"lr", o.at("lr")}, {"betas", {o.at("beta1"), o.at("beta2")}},
                                    {"eps", o.at("eps")}, {"weight_decay", o.at("weight_decay")}}}};
    raw["gradient_clipping"] = o.at("clip");
    raw["training"]["lr_scheduler_type"] = "constant";
  }
  config::ResolveOptions options;
  options.world_size = W;
  return config::resolve_config(raw, options, "hf_init.json");
}

}  // namespace

TEST_CASE("a save_pretrained directory trains from its weights: the first loss is transformers'", "[trainer][hf]") {
  REQUIRE(2 % world().world_size() == 0);
  for (const char* name : {"llama3_dir_fp32", "qwen2_dir_bf16"}) {
    const std::string dir = (kFixtures / name).string();
    const nlohmann::json ref = reference_of(name);
    const double want = ref.at("loss");
    for (int stage : {0, 3}) {
      DYNAMIC_SECTION(name << " at stage " << stage) {
        const int vocab = nlohmann::json::parse(std::ifstream(kFixtures / name / "config.json")).at("vocab_size");
        const std::string data = write_tokens(ref, name, vocab);
        Trainer trainer(make(dir, data, ref, stage), world());
        const TrainStepResult first = trainer.train_step(1);
        INFO("loss " << first.loss << ", transformers " << want);
        CHECK(std::abs(first.loss - want) <= 1e-5 * want);
      }
    }
  }
}

TEST_CASE("sliding-window directories train step by step as transformers does, and their saved weights load back",
          "[trainer][hf][window]") {
  REQUIRE(2 % world().world_size() == 0);
  for (const char* name : {"mistral_swa_fp32", "qwen2_swa_fp32", "gemma2_swa_fp32", "gemma3_text_swa_fp32"}) {
    const std::string dir = (kFixtures / name).string();
    const nlohmann::json ref = reference_of(name);
    const std::vector<double> want = ref.at("adamw").at("losses");
    const nlohmann::json source = nlohmann::json::parse(std::ifstream(fs::path(dir) / "config.json"));
    REQUIRE(source.at("sliding_window").get<int>() * 3 == ref.at("T").get<int>());  // the window is a third
    for (int stage : {0, 3}) {
      DYNAMIC_SECTION(name << " at stage " << stage) {
        const std::string data = write_tokens(ref, name, source.at("vocab_size"));
        const fs::path out = fs::path(ZT_BINARY_DIR) / "test-runs" / "hf-sliding" /
                             (std::string(name) + "-stage" + std::to_string(stage) + "-np" +
                              std::to_string(world().world_size()));
        if (world().rank() == 0) {
          fs::remove_all(out);
          fs::create_directories(out);
        }
        world().control().barrier();
        const nlohmann::json training = {{"steps", want.size()},
                                         {"save_final", (out / "final").string()},
                                         {"metrics", (out / "m.jsonl").string()}};
        REQUIRE(Trainer(make(dir, data, ref, stage, training), world()).run() == 0);
        if (world().rank() == 0) {
          const std::vector<double> losses = step_losses(out / "m.jsonl");
          REQUIRE(losses.size() == want.size());
          for (size_t k = 0; k < want.size(); ++k) {
            const double loss = losses[k];
            INFO("step " << k + 1 << ": loss " << loss << ", transformers " << want[k]);
            CHECK(std::abs(loss - want[k]) <= 1e-5 * want[k]);
          }
          // What transformers reads back: the same window and the same layers sliding.
          const nlohmann::json saved = nlohmann::json::parse(std::ifstream(out / "final" / "config.json"));
          for (const char* key : {"sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
                                  "rope_parameters", "query_pre_attn_scalar", "attn_logit_softcapping",
                                  "final_logit_softcapping", "hidden_activation", "architectures"}) {
            INFO(key);
            CHECK(saved.contains(key) == source.contains(key));
            if (source.contains(key)) CHECK(saved.at(key).dump() == source.at(key).dump());  // ints stay ints
          }
        }
        world().control().barrier();
        // The saved directory starts where the steps ended: its loss on the first step's windows.
        const std::string final_dir = (out / "final").string();
        Trainer again(make(final_dir, data, ref, stage), world());
        const double trained = ref.at("trained_loss");
        const TrainStepResult first = again.train_step(1);
        INFO("loss " << first.loss << ", transformers " << trained);
        CHECK(std::abs(first.loss - trained) <= 1e-5 * trained);
      }
    }
  }
}
