// A Hugging Face Trainer user's command, as docs/launching.md and the README write it, runs as
// written on two ranks (a real Trainer DeepSpeed config, a Qwen3 model directory, a token file),
// names where its settings came from and writes out/ as the Trainer does; run again with another
// length and --resume, it says how the schedule changes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>

#include "run_helpers.hpp"

using namespace zt::test;
namespace fs = std::filesystem;

namespace {

const std::string kMarker = "<!-- tests/e2e/test_trainer_command.cpp runs this command as written -->";

// The command in the block after the marker, its lines ending in \ joined.
std::string documented_command() {
  const std::string doc = read_file(std::string(ZT_SOURCE_DIR) + "/docs/launching.md");
  const size_t marker = doc.find(kMarker);
  REQUIRE(marker != std::string::npos);
  const size_t start = doc.find("```\n", marker) + 4;
  const std::string block = doc.substr(start, doc.find("```", start) - start);
  return std::regex_replace(std::regex_replace(block, std::regex(R"(\\\n\s*)"), ""), std::regex("\n$"), "");
}

}  // namespace

TEST_CASE("the documented Hugging Face Trainer command runs as written", "[e2e][trainer]") {
  const std::string command = documented_command();
  INFO(command);
  REQUIRE(command.find("--deepspeed ds_z3.json --model_name_or_path Qwen3-0.6B/") != std::string::npos);
  // The README shows the same command.
  const std::string readme = std::regex_replace(read_file(std::string(ZT_SOURCE_DIR) + "/README.md"),
                                                std::regex(R"(\\\n\s*)"), "");
  CHECK(readme.find(command) != std::string::npos);

  // The files it names: the Trainer's own ZeRO-3 config ("auto" throughout, steps_per_print 2000),
  // a small Qwen3 directory written by transformers, and 2049 tokens: 8 windows of 4 x 64.
  const std::string dir = fresh_dir("trainer-command");
  fs::copy_file(std::string(ZT_SOURCE_DIR) + "/tests/config/fixtures/ds-configs/hf-transformers_ds_config_zero3.json",
                dir + "/ds_z3.json");
  fs::create_directory_symlink(std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf_export/qwen3", dir + "/Qwen3-0.6B");
  fs::create_directory_symlink(std::string(ZT_SOURCE_DIR) + "/scripts", dir + "/scripts");
  fs::create_directories(dir + "/build");
  fs::create_symlink(ZT_ZEROTRAIN, dir + "/build/zerotrain");
  write_token_file(dir + "/chats.bin", 2049, 300);

  const int code = run_command("cd " + dir + " && " + command, dir + "/out.log");
  const std::string log = read_file(dir + "/out.log");
  INFO(log);
  REQUIRE(code == 0);
  CHECK(log.find("info: Hugging Face Trainer arguments: --output_dir out = training.checkpoint_dir "
                 "\"out/checkpoints\", training.metrics \"out/metrics.jsonl\", training.save_final \"out\"; "
                 "--learning_rate 2e-5 = training.lr 2e-05; --num_train_epochs 3 = training.epochs 3; "
                 "--per_device_train_batch_size 4 = training.micro_batch_size 4; --gradient_accumulation_steps 4 = "
                 "training.gradient_accumulation_steps 4; --bf16 = bf16.enabled true") != std::string::npos);
  // 3 epochs of 8 windows, 8 windows a step (4 micro-batches x 2 ranks): 3 steps.
  CHECK(log.find("length 3 steps from training.epochs (--num_train_epochs 3) 3: 3 x 8 windows of 4 x 64 tokens / 8 "
                 "windows per step (4 x 2 ranks), rounded up") != std::string::npos);
  CHECK(log.find("lr 2e-05 from scheduler.params.warmup_max_lr \"auto\" (config) = training.lr (--learning_rate "
                 "2e-5)") != std::string::npos);
  CHECK(log.find("precision bf16 from fp16.enabled \"auto\" (config), bf16.enabled true (--bf16)") !=
        std::string::npos);
  CHECK(log.find("a step line every 10 steps from training.logging_steps (default); steps_per_print 2000 (config) is "
                 "DeepSpeed's own print interval and decides nothing here") != std::string::npos);
  // out/ as the Trainer leaves it: the model for from_pretrained, the checkpoints, the metrics.
  for (const char* file : {"/out/config.json", "/out/model.safetensors", "/out/checkpoints/latest"})
    CHECK(fs::exists(dir + file));
  const Metrics m = read_metrics(dir + "/out/metrics.jsonl");
  REQUIRE(m.steps.size() == 3);
  CHECK(m.setup["dtype"] == "bf16");
  CHECK(m.steps[2]["lr"].get<double>() == 2e-5);  // WarmupLR after its warmup of 2 steps: the peak
}

TEST_CASE("a resume with another length says how the schedule changes, and follows the new one", "[e2e][trainer]") {
  const std::string dir = fresh_dir("trainer-resume-length");
  const std::string run = "cd " + dir + " && " + ZT_ZEROTRAIN + " --learning_rate 1e-3 --output_dir out" +
                          " --eval_steps 0 --logging_steps 1";
  REQUIRE(run_command(run + " --max_steps 4", dir + "/first.log") == 0);
  const int code = run_command(run + " --max_steps 8 --resume", dir + "/second.log");
  const std::string log = read_file(dir + "/second.log");
  INFO(log);
  REQUIRE(code == 0);
  // The linear decay of 4 steps is at 0 after step 4; stretched to 8, step 5 runs at 1e-3 x 4/8.
  CHECK(log.find("warning: resuming with another schedule than the checkpoint's run (training.steps 4 -> 8): step 5 "
                 "runs at lr 5.000e-04 where the saved schedule gives 0.000e+00.") != std::string::npos);
  const Metrics m = read_metrics(dir + "/out/metrics.jsonl");
  REQUIRE(m.steps.size() == 8);
  CHECK(m.steps[4]["lr"].get<double>() == 5e-4);
  CHECK(m.steps[7]["lr"].get<double>() == 1.25e-4);
}
