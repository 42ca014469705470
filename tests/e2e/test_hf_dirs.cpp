// A Hugging Face model directory through the binary (tests/fixtures/hf, written by transformers'
// save_pretrained): `--model DIR` fine-tunes it from its own weights on 2 ranks at ZeRO stage 3,
// as training.init_from DIR does, and training.init_from random trains its architecture afresh;
// `estimate` and `--dry-run` read its config.json (tests/inference evaluates it); a broken
// directory stops the job before any step with one line naming what is wrong and where.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "run_helpers.hpp"

using namespace zt::test;
namespace fs = std::filesystem;

namespace {

const std::string kFixture = std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/llama3_dir_fp32";

// The lines of `out` that say "error".
size_t error_lines(const std::string& out) {
  size_t n = 0;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) n += line.find("error") != std::string::npos;
  return n;
}

nlohmann::json read_json(const std::string& p) { return nlohmann::json::parse(std::ifstream(p)); }
void write_json(const std::string& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(2); }

std::string fine_tune(int ranks, const std::string& model, const std::string& dir, const std::string& extra = "") {
  return launch(ranks) + " --config zero3 --model " + model + " --set training.init_from=" + model +
         " --set data.seq_len=16 --steps 2 --set training.log_dir=" + dir + "/logs --set training.metrics=" + dir +
         "/m.jsonl " + extra;
}

}  // namespace

TEST_CASE("--model DIR fine-tunes a save_pretrained directory from its weights at stage 3, as init_from DIR does",
          "[e2e][hf]") {
  const std::string dir = fresh_dir("hf-fine-tune");
  const int code = run_command(fine_tune(2, kFixture, dir, "--set train_micro_batch_size_per_gpu=2"), dir + "/out.log");
  const std::string out = read_file(dir + "/out.log");
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("training.init_from " + kFixture + ": the weights of 7 safetensors files") != std::string::npos);
  const Metrics m = read_metrics(dir + "/m.jsonl");
  REQUIRE(m.steps.size() == 2);
  // --model DIR alone loads the same weights; init_from random computes another first loss.
  const std::string scratch = fresh_dir("hf-scratch");
  REQUIRE(run_command(launch(2) + " --config zero3 --model " + kFixture +
                          " --set data.seq_len=16 --steps 2 --set train_micro_batch_size_per_gpu=2"
                          " --set training.metrics=" + scratch + "/m.jsonl",
                      scratch + "/out.log") == 0);
  const std::string scratch_out = read_file(scratch + "/out.log");
  CHECK(scratch_out.find("weights from " + kFixture + " (model.path, as from_pretrained loads them") !=
        std::string::npos);
  CHECK(read_metrics(scratch + "/m.jsonl").steps[0]["loss"] == m.steps[0]["loss"]);  // the same weights
  const std::string fresh = fresh_dir("hf-random");
  REQUIRE(run_command(launch(2) + " --config zero3 --model " + kFixture +
                          " --set data.seq_len=16 --steps 2 --set train_micro_batch_size_per_gpu=2"
                          " --set training.init_from=random --set training.metrics=" + fresh + "/m.jsonl",
                      fresh + "/out.log") == 0);
  CHECK(read_file(fresh + "/out.log").find("weights: random values from training.init_from") != std::string::npos);
  CHECK(read_metrics(fresh + "/m.jsonl").steps[0]["loss"] != m.steps[0]["loss"]);
  // A directory with config.json and no weights: nothing to start from unless init_from says random.
  const std::string bare = fresh_dir("hf-bare") + "/model";
  fs::create_directories(bare);
  fs::copy_file(kFixture + "/config.json", bare + "/config.json");
  const std::string bare_out = bare + "/../out.log";
  CHECK(run_command(std::string(ZT_ZEROTRAIN) + " --model " + bare + " --steps 1 --set data.seq_len=16", bare_out) !=
        0);
  CHECK(read_file(bare_out).find(bare + ": holds config.json but no weights") != std::string::npos);
  CHECK(run_command(std::string(ZT_ZEROTRAIN) + " --model " + bare + " --steps 1 --set data.seq_len=16 --dry-run",
                    bare_out) == 0);
}

TEST_CASE("estimate and --dry-run read a model directory's config.json", "[e2e][hf]") {
  const std::string dir = fresh_dir("hf-commands");
  CHECK(run_command(std::string(ZT_ZEROTRAIN) + " estimate --model " + kFixture + " --world-size 4",
                    dir + "/est.log") == 0);
  CHECK(read_file(dir + "/est.log").find("Llama 2 layers") != std::string::npos);
  CHECK(run_command(std::string(ZT_ZEROTRAIN) + " --model " + kFixture + " --set model.max_seq_len=64 --config zero3 "
                        "--dry-run --world-size 4 --print-config",
                    dir + "/dry.log") == 0);
  const std::string dry = read_file(dir + "/dry.log");
  INFO(dry);
  CHECK(dry.find("\"path\": \"" + kFixture + "\"") != std::string::npos);
  CHECK(dry.find("\"max_seq_len\": 64") != std::string::npos);
}

TEST_CASE("a broken model directory stops the job before any step with one line naming it", "[e2e][hf][failure]") {
  const std::string root = fresh_dir("hf-broken");
  const std::string up = "model.layers.1.mlp.up_proj.weight";
  auto index_of = [](const std::string& d) { return d + "/model.safetensors.index.json"; };
  const std::vector<std::pair<std::string, std::function<std::string(const std::string&)>>> cases = {
      {"missing-tensor",
       [&](const std::string& d) {
         nlohmann::json index = read_json(index_of(d));
         index["weight_map"].erase(up);
         write_json(index_of(d), index);
         return index_of(d) + ": tensor " + up + " is missing from weight_map";
       }},
      {"wrong-shape",
       [&](const std::string& d) {
         nlohmann::json config = read_json(d + "/config.json");
         config["intermediate_size"] = 96;
         write_json(d + "/config.json", config);
         return "tensor model.layers.0.mlp.gate_proj.weight has shape [64, 64], expected [96, 64]";
       }},
      {"truncated-shard",
       [&](const std::string& d) {
         const std::string shard = d + "/" + read_json(index_of(d))["weight_map"][up].get<std::string>();
         fs::resize_file(shard, fs::file_size(shard) / 2);
         return shard + ": tensor ";
       }},
      {"bad-index",
       [&](const std::string& d) {
         std::ofstream(index_of(d)) << "{\"weight_map\": [";
         return index_of(d) + ": not valid JSON";
       }},
      {"unknown-model-type",
       [&](const std::string& d) {
         nlohmann::json config = read_json(d + "/config.json");
         config["model_type"] = "phi3";
         write_json(d + "/config.json", config);
         return d + "/config.json: model_type: \"phi3\" is not a model type zerotrain implements";
       }},
  };
  for (const auto& [name, breakit] : cases) {
    DYNAMIC_SECTION(name) {
      const std::string d = root + "/" + name;
      fs::copy(kFixture, d);
      const std::string want = breakit(d);
      const int code = run_command(fine_tune(2, d, root + "/" + name + "-run"), root + "/" + name + ".log");
      const std::string out = read_file(root + "/" + name + ".log");
      INFO(out);
      CHECK(code != 0);
      CHECK(occurrences(out, want) == 1);
      CHECK(error_lines(out) == 1);
      CHECK(out.find("| loss ") == std::string::npos);
    }
  }
}
