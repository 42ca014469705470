// Training from a Hugging Face model directory that transformers' save_pretrained wrote
// (tests/fixtures/hf, scripts/make_hf_dir_fixtures.py), on 2 ranks under mpirun: model.path gives
// the architecture, training.init_from the weights (sharded, fp32 and bf16), and the first step's
// loss is transformers' own on the same batch, at ZeRO stage 0 and at stage 3, where each rank
// reads only the bytes of its own shard of the parameters.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "config/config.hpp"
#include "data/token_file_writer.hpp"
#include "train/trainer.hpp"

using namespace zt;
namespace fs = std::filesystem;

namespace {

Communicator& world() {
  static auto comm = make_mpi_communicator(120.0);
  return *comm;
}

const fs::path kFixtures = fs::path(ZT_SOURCE_DIR) / "tests" / "fixtures" / "hf";

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

config::Config make(const std::string& model_dir, const std::string& data, const nlohmann::json& ref, int stage) {
  const int W = world().world_size();
  const nlohmann::json raw = {
      {"train_micro_batch_size_per_gpu", ref.at("B")},
      {"gradient_accumulation_steps", 2 / W},
      {"zero_optimization", {{"stage", stage}}},
      {"model", {{"path", model_dir}}},
      {"data", {{"train", data}, {"seq_len", ref.at("T")}, {"shuffle", false}}},
      {"training", {{"steps", 1}, {"eval_interval", 0}, {"init_from", model_dir}}}};
  config::ResolveOptions options;
  options.world_size = W;
  return config::resolve_config(raw, options, "hf_init.json");
}

}  // namespace

TEST_CASE("a save_pretrained directory trains from its weights: the first loss is transformers'", "[trainer][hf]") {
  REQUIRE(2 % world().world_size() == 0);
  for (const char* name : {"llama3_dir_fp32", "qwen2_dir_bf16"}) {
    const std::string dir = (kFixtures / name).string();
    const nlohmann::json ref = nlohmann::json::parse(std::ifstream(kFixtures / (std::string(name) + ".reference.json")));
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
