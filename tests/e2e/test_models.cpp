// The llama family through the binary: the tiny presets train on the shipped corpus with several
// ranks, checkpoint and resume to the same bits, export their Hugging Face directory; what is not
// implemented yet, or cannot be written, is refused (before step 1 for a run).
#include <catch2/catch.hpp>

#include "run_helpers.hpp"

using namespace zt::test;

namespace {

double mean_loss(const Metrics& m, size_t first, size_t count) {
  double sum = 0;
  for (size_t i = first; i < first + count; ++i) sum += m.steps[i]["loss"].get<double>();
  return sum / double(count);
}

}  // namespace

TEST_CASE("llama-tiny and qwen3-tiny train on the shipped corpus with 2 ranks and the loss falls", "[e2e][models]") {
  for (std::string preset : {"llama-tiny", "qwen3-tiny"}) {
    auto dir = fresh_dir("model-" + preset);
    const std::string cmd = launch(2) + " --model " + preset + " --config zero3 --steps 60 --set training.lr=3e-3" +
                            " --set data.seq_len=64 --set training.eval_interval=0 --set training.metrics=" + dir +
                            "/metrics.jsonl";
    INFO(cmd);
    const int code = run_command(cmd, dir + "/out.log");
    const std::string log = read_file(dir + "/out.log");
    INFO(log);
    REQUIRE(code == 0);
    CHECK(log.find(preset == "llama-tiny" ? "model: Llama 2 layers, 4 heads (2 key/value) of 16"
                                          : "model: Qwen3 2 layers, 4 heads (2 key/value) of 32") != std::string::npos);
    const Metrics m = read_metrics(dir + "/metrics.jsonl");
    REQUIRE(m.steps.size() == 60);
    CHECK(mean_loss(m, 55, 5) < mean_loss(m, 0, 5) - 1.0);
  }
}

TEST_CASE("a qwen3-tiny run resumed from its checkpoint continues bit for bit", "[e2e][models]") {
  auto dir = fresh_dir("model-resume");
  const std::string common = launch(2) + " --model qwen3-tiny --config zero2 --steps 6 --set data.seq_len=32" +
                             " --set training.eval_interval=0";
  REQUIRE(run_command(common + " --set training.save_interval=3 --set training.checkpoint_dir=" + dir +
                          "/a --set training.metrics=" + dir + "/a.jsonl",
                      dir + "/a.log") == 0);
  const int code = run_command(common + " --set training.resume=" + dir + "/a/step_00000003 --set training.metrics=" +
                                   dir + "/b.jsonl",
                               dir + "/b.log");
  INFO(read_file(dir + "/b.log"));
  REQUIRE(code == 0);
  const Metrics a = read_metrics(dir + "/a.jsonl"), b = read_metrics(dir + "/b.jsonl");
  REQUIRE(a.steps.size() == 6);
  REQUIRE(b.steps.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(b.steps[i]["loss"] == a.steps[3 + i]["loss"]);

  // Its export: the Hugging Face directory of a Qwen3, from the checkpoint two ranks wrote at stage 2.
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " export " + dir + "/a --output " + dir + "/hf --dtype bf16",
                      dir + "/export.log") == 0);
  const auto config = nlohmann::json::parse(read_file(dir + "/hf/config.json"));
  CHECK(config["architectures"][0] == "Qwen3ForCausalLM");
  CHECK(config["head_dim"] == 32);
  CHECK(config["torch_dtype"] == "bfloat16");
  CHECK(read_file(dir + "/hf/model.safetensors").find("model.layers.1.self_attn.k_norm.weight") != std::string::npos);
}

TEST_CASE("what the llama family cannot do yet, or write, is refused before step 1, naming the key", "[e2e][models]") {
  auto dir = fresh_dir("model-refusals");
  const std::string run = std::string(ZT_ZEROTRAIN) + " --model llama-tiny --steps 2 --set training.eval_interval=0";
  std::ofstream(dir + "/blocker") << "a file where save_final needs a directory";
  const std::pair<std::string, std::string> cases[] = {
      {" --set training.save_final=" + dir + "/blocker/final",
       "training.save_final: cannot create directory '" + dir + "/blocker/final': '" + dir + "/blocker' is"},
      {" --set 'model.rope_scaling={\"rope_type\":\"yarn\",\"factor\":4}'",
       "model.rope_scaling.rope_type: \"yarn\" is not implemented"},
  };
  for (auto& [args, message] : cases) {
    INFO(args);
    const int code = run_command(run + args, dir + "/out.log");
    const std::string log = read_file(dir + "/out.log");
    INFO(log);
    CHECK(code != 0);
    CHECK(log.find(message) != std::string::npos);
    CHECK(log.find("step     1") == std::string::npos);
  }
}
