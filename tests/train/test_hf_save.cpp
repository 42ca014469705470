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
#include "model/gpt_layout.hpp"
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

TEST_CASE("a bf16 Qwen3-MoE keeps its routers in fp32: trained, checkpointed, resumed and exported bit for bit",
          "[trainer][hf][fp32]") {
  auto& comm = world();
  const std::string dir = shared_dir("hf-save", "fp32-routers");
  auto moe_config = [&](int stage, bool keep) {
    config::Config c = make_config({.stage = stage, .dtype = "bf16", .world = comm.world_size()});
    c.model = config::read_model_block({{"preset", "qwen3-moe-tiny"}}, "test");
    c.keep_in_fp32_modules = keep ? fp32_module_patterns(c.model.shape) : std::vector<std::string>{};
    c.training.steps = 2;
    c.training.save_final = dir + "/final";
    c.training.checkpoint_dir = dir + "/ckpt";
    return c;
  };
  auto routers = [](const ParamLayout& layout, const std::vector<float>& flat) {
    std::vector<float> out;
    for (const ParamGroup& g : layout.groups)
      for (const TensorSpec& t : g.tensors)
        if (t.keep_fp32)
          out.insert(out.end(), flat.begin() + long(t.offset), flat.begin() + long(t.offset + t.numel()));
    return out;
  };
  for (int stage : {0, 3}) {
    DYNAMIC_SECTION("stage " << stage) {
      fs::remove_all(dir);
      comm.control().barrier();
      const config::Config c = moe_config(stage, true);
      std::vector<float> master, read;
      {
        Trainer trainer(c, comm);
        REQUIRE(trainer.run() == 0);
        master.resize(trainer.model().layout().total);
        trainer.engine().gather_master(master.data());
        read = gather_params(trainer);
        const std::vector<float> kept = routers(trainer.model().layout(), master);
        const GptShape& shape = c.model.shape;
        REQUIRE(kept.size() == size_t(shape.n_layer * shape.moe.num_experts * shape.d_model));  // every router
        // The model computes with the trained fp32 values, not their bf16 rounding.
        CHECK(routers(trainer.model().layout(), read) == kept);
        std::vector<float> rounded = kept;
        cpu_backend().vector.round_to(DType::BF16, rounded.data(), rounded.size());
        CHECK(rounded != kept);
      }
      // The model reads the routers it keeps: with bf16 routers the same steps compute other losses.
      {
        auto unsaved = [&](bool keep) {
          config::Config u = moe_config(stage, keep);
          u.training.save_final.clear();
          u.training.checkpoint_dir.clear();
          return u;
        };
        const config::Config kept = unsaved(true), plain = unsaved(false);
        const RunResult with = train(kept, comm, 2), without = train(plain, comm, 2);
        CHECK(with.params == master);
        CHECK(with.losses != without.losses);
      }
      // A resumed run reads the checkpoint's fp32 routers back.
      {
        config::Config resumed = c;
        resumed.training.resume.from = config::ResumeFrom::Latest;
        resumed.training.save_final.clear();
        Trainer trainer(resumed, comm);
        REQUIRE(trainer.start_step() == 2);
        CHECK(gather_params(trainer) == read);
      }
      if (comm.rank() == 0) {
        // save_final and export (fp32) write the trained fp32 values.
        CHECK(read_hf_weights(c.training.save_final, c.model.shape, "F32") == master);
        export_checkpoint(c.training.checkpoint_dir, dir + "/export", HfOutput());
        CHECK(read_hf_weights(dir + "/export", c.model.shape, "F32") == master);
      }
      comm.control().barrier();
    }
  }
}
