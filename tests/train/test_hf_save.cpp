// Multi-rank (under mpirun): llama-family runs at ZeRO stage 3 write their Hugging Face model
// directory with training.save_final, and `zerotrain export` writes the same files from their
// checkpoint, unsharded and in shards: read back tensor by tensor, they hold the trained master
// weights bit for bit. A checkpoint does not resume a run of another architecture, even one with
// the same tensors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "../hf/hf_directory.hpp"
#include "train/model_export.hpp"
#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "config/model_block.hpp"
#include "engine_harness.hpp"
#include "mpi_world.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Grouped-query attention with a tied head; q/k/v biases with an untied head; q/k norms with a
// head_dim free of d_model / n_head and every attention bias. A vocabulary of 300, padded to 384.
json block(const std::string& type) {
  json b = {{"preset", "custom"}, {"model_type", type}, {"n_layer", 2}, {"n_head", 4}, {"n_kv_head", 2},
            {"d_model", 32}, {"d_ff", 48}, {"vocab_size", 300}, {"max_seq_len", 32}};
  if (type == "qwen2") b.update({{"n_kv_head", 1}, {"tie_word_embeddings", false}});
  if (type == "qwen3") b.update({{"head_dim", 12}, {"attention_bias", true}});
  return b;
}

config::Config run_config(const std::string& type, const std::string& dir) {
  config::Config c = make_config({.stage = 3, .world = world().world_size()});
  c.model = config::read_model_block(block(type), "test");
  c.training.steps = 2;
  c.training.save_final = dir + "/final";
  c.training.checkpoint_dir = dir + "/ckpt";
  return c;
}

}  // namespace

TEST_CASE("save_final and export write the trained weights of a stage 3 run, bit for bit", "[trainer][hf]") {
  auto& comm = world();
  for (std::string type : {"llama", "qwen2", "qwen3"}) {
    DYNAMIC_SECTION(type) {
      const std::string dir = shared_dir("hf-save", type);
      const config::Config c = run_config(type, dir);
      Trainer trainer(c, comm);
      REQUIRE(trainer.run() == 0);
      std::vector<float> master(trainer.model().layout().total);
      trainer.engine().gather_master(master.data());
      if (comm.rank() != 0) continue;
      const GptShape shape = c.model.shape;
      CHECK(read_hf_weights(c.training.save_final, shape, "F32") == master);
      const json config = json::parse(slurp(c.training.save_final + "/config.json"));
      CHECK(config.at("model_type") == type);
      CHECK(config.at("vocab_size") == 300);

      export_checkpoint(c.training.checkpoint_dir, dir + "/export", HfOutput());
      for (const char* file : {"model.safetensors", "config.json"})
        CHECK(slurp(dir + "/export/" + file) == slurp(c.training.save_final + "/" + file));
      HfOutput sharded;
      sharded.max_shard_bytes = 10000;
      export_checkpoint(c.training.checkpoint_dir, dir + "/sharded", sharded);
      std::set<std::string> files;
      for (auto& [name, file] : hf_weight_map(dir + "/sharded", shape)) files.insert(file);
      CHECK(files.size() > 2);
      CHECK(fs::exists(dir + "/sharded/model.safetensors.index.json"));
      CHECK(read_hf_weights(dir + "/sharded", shape, "F32") == master);
    }
  }
}

TEST_CASE("a checkpoint does not resume a run of another model type with the same tensors", "[trainer][hf]") {
  auto& comm = world();
  const std::string dir = shared_dir("hf-save", "mistral");
  {
    const config::Config saved = run_config("llama", dir);  // the trainer keeps a reference
    Trainer trainer(saved, comm);
    REQUIRE(trainer.run() == 0);
  }
  config::Config c = run_config("llama", dir);
  json mistral = block("llama");
  mistral["model_type"] = "mistral";
  c.model = config::read_model_block(mistral, "test");
  c.training.resume.from = config::ResumeFrom::Latest;
  c.training.steps = 3;
  c.training.save_final.clear();
  CHECK_THROWS_AS(Trainer(c, comm), SetupFailed);
  c.model = config::read_model_block(block("llama"), "test");
  Trainer resumed(c, comm);
  CHECK(resumed.start_step() == 2);
}
