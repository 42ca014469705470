// No write anywhere in the program can destroy an input: every output option (training.metrics,
// save_final, checkpoint_dir, log_dir, the monitors' directories, an nvme_path, `export -o`,
// `tokenize -o`) aimed at every input (the config file, the model directory and its files, the
// data, a checkpoint to start or resume from, a tokenizer) and at the directory holding it is
// refused before anything is written, naming both, and every input keeps its bytes; --overwrite
// lets save_final and export replace the model they started from, written whole beside it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

#include "run_helpers.hpp"

using namespace zt::test;
namespace fs = std::filesystem;

namespace {

const std::string kZt = ZT_ZEROTRAIN;

// Every file under `root` with its bytes.
std::map<std::string, std::string> contents(const std::string& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) files[e.path().string()] = read_file(e.path().string());
  return files;
}

struct Input {
  std::string name;     // what the run reads it as
  std::string args;     // the options that make the run read it
  std::string path;     // where it lies
  std::string command;  // "train", "export" or "tokenize"
};

struct Output {
  std::string name;
  std::string command;
  bool directory;
  std::string (*args)(const std::string& path);
};

std::string metrics(const std::string& p) { return " --set training.metrics=" + p; }
std::string save_final(const std::string& p) { return " --set training.save_final=" + p; }
std::string checkpoint_dir(const std::string& p) { return " --set training.checkpoint_dir=" + p; }
std::string log_dir(const std::string& p) { return " --set training.log_dir=" + p; }
std::string csv(const std::string& p) {
  return " --set csv_monitor.enabled=true --set csv_monitor.output_path=" + fs::path(p).parent_path().string() +
         " --set csv_monitor.job_name=" + fs::path(p).filename().string();
}
std::string tensorboard(const std::string& p) {
  return " --set tensorboard.enabled=true --set tensorboard.output_path=" + fs::path(p).parent_path().string() +
         " --set tensorboard.job_name=" + fs::path(p).filename().string();
}
std::string nvme(const std::string& p) {
  return " --set zero_optimization.stage=2 --set zero_optimization.offload_optimizer.device=nvme"
         " --set zero_optimization.offload_optimizer.nvme_path=" + p;
}
std::string export_to(const std::string& p) { return " -o " + p; }
std::string tokenize_to(const std::string& p) { return " -o " + p; }

}  // namespace

TEST_CASE("every output aimed at every input is refused, and every input keeps its bytes", "[e2e][user-files]") {
  const std::string dir = fresh_dir("no-lost-inputs"), logs = fresh_dir("no-lost-inputs-logs");
  const std::string base = " --model llama-tiny --set data.seq_len=32 --set train_micro_batch_size_per_gpu=1";
  const std::string data = dir + "/data/train.txt";
  fs::create_directories(dir + "/data");
  fs::copy_file(std::string(ZT_SOURCE_DIR) + "/data/tinytext/val.txt", data);
  // A model directory (zerotrain's own save of a llama), a checkpoint of a run that started from it
  // (to start or resume from, and to export), a tokenizer, a config file.
  REQUIRE(run_command(kZt + base + " --steps 1 --data " + data + " --set training.save_final=" + dir + "/model",
                      logs + "/made.log") == 0);
  const std::string train = " --model " + dir + "/model --set data.seq_len=32 --steps 1 --data " + data;
  REQUIRE(run_command(kZt + train + " --set training.checkpoint_dir=" + dir + "/ck", logs + "/made.log") == 0);
  fs::copy(std::string(ZT_SOURCE_DIR) + "/tests/fixtures/tokenizer/trimmed/gpt2", dir + "/tok");
  { std::ofstream(dir + "/ds.json") << R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}})"; }

  const std::vector<Input> inputs = {
      {"--config", " --config " + dir + "/ds.json", dir + "/ds.json", "train"},
      {"model.path", "", dir + "/model", "train"},
      {"model.path", "", dir + "/model/model.safetensors", "train"},
      {"data.train", "", data, "train"},
      {"training.init_from", " --set training.init_from=" + dir + "/ck", dir + "/ck", "train"},
      {"training.resume", " --set training.resume=" + dir + "/ck/step_00000001", dir + "/ck/step_00000001", "train"},
      {"training.sample_tokenizer", " --set training.sample_tokenizer=" + dir + "/tok", dir + "/tok", "train"},
      {"the checkpoint", "", dir + "/ck", "export"},
      {"the model directory it started from", "", dir + "/model", "export"},
      {"the input", "", data, "tokenize"},
      {"--tokenizer", "", dir + "/tok/vocab.json", "tokenize"},
  };
  const std::vector<Output> outputs = {
      {"training.metrics", "train", false, metrics},       {"training.save_final", "train", true, save_final},
      {"training.checkpoint_dir", "train", true, checkpoint_dir}, {"training.log_dir", "train", true, log_dir},
      {"csv_monitor", "train", true, csv},                 {"tensorboard", "train", true, tensorboard},
      {"nvme_path", "train", true, nvme},                  {"-o", "export", true, export_to},
      {"-o", "tokenize", false, tokenize_to},
  };
  const auto before = contents(dir);
  int refused = 0;
  for (const Output& out : outputs)
    for (const Input& in : inputs) {
      if (in.command != out.command) continue;
      std::vector<std::string> aims = {in.path};
      if (out.directory) aims.push_back(fs::path(in.path).parent_path().string());
      for (const std::string& aim : aims) {
        // A checkpoint resumed from is what training.checkpoint_dir is for.
        if (out.name == "training.checkpoint_dir" && in.name == "training.resume") continue;
        std::string command;
        if (out.command == "train") command = kZt + train + in.args + out.args(aim);
        if (out.command == "export") command = kZt + " export " + dir + "/ck" + out.args(aim);
        if (out.command == "tokenize") command = kZt + " tokenize --tokenizer " + dir + "/tok " + data + out.args(aim);
        const int code = run_command(command, logs + "/out.log");
        const std::string log = read_file(logs + "/out.log");
        INFO(out.name << " at " << in.name << " (" << aim << "): " << command << "\n" << log);
        CHECK(code != 0);
        CHECK(log.find("error") != std::string::npos);
        CHECK(log.find("step     1/") == std::string::npos);
        REQUIRE(contents(dir) == before);  // not a byte of any input changed, nothing was added
        ++refused;
      }
    }
  CHECK(refused > 60);

  // The user who means it: export over the model it started from, written whole beside it.
  REQUIRE(run_command(kZt + " export " + dir + "/ck -o " + dir + "/model --overwrite", logs + "/over.log") == 0);
  CHECK(fs::exists(dir + "/model/model.safetensors"));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().rfind(".model", 0) != 0);
}

TEST_CASE("export of a LoRA run leaves its base model and the adapters it started from alone", "[e2e][user-files]") {
  const std::string dir = fresh_dir("no-lost-adapters"), logs = fresh_dir("no-lost-adapters-logs");
  const std::string data = dir + "/train.txt";
  fs::copy_file(std::string(ZT_SOURCE_DIR) + "/data/tinytext/val.txt", data);
  const std::string small = " --set data.seq_len=32 --set train_micro_batch_size_per_gpu=1 --steps 1 --data " + data;
  // A base model, an adapter directory trained on it, and a checkpoint of a run that started from both.
  REQUIRE(run_command(kZt + " --model llama-tiny" + small + " --set training.save_final=" + dir + "/model",
                      logs + "/made.log") == 0);
  const std::string lora = " --model " + dir + "/model --set lora.enabled=true" + small;
  REQUIRE(run_command(kZt + lora + " --set training.save_final=" + dir + "/adapter", logs + "/made.log") == 0);
  REQUIRE(fs::exists(dir + "/adapter/adapter_model.safetensors"));
  REQUIRE(run_command(kZt + lora + " --set lora.init_from=" + dir + "/adapter --set training.checkpoint_dir=" + dir +
                          "/ck",
                      logs + "/made.log") == 0);

  const auto before = contents(dir);
  for (const std::string& args : {" -o " + dir + "/adapter", " --merge -o " + dir + "/adapter",
                                  " --merge -o " + dir + "/model", " -o " + dir + "/model", " -o " + dir + "/ck"}) {
    const int code = run_command(kZt + " export " + dir + "/ck" + args, logs + "/out.log");
    const std::string log = read_file(logs + "/out.log");
    INFO("export" << args << "\n" << log);
    CHECK(code != 0);
    CHECK(log.find("error") != std::string::npos);
    REQUIRE(contents(dir) == before);
  }
  // Elsewhere, the merged model is written.
  REQUIRE(run_command(kZt + " export " + dir + "/ck --merge -o " + dir + "/merged", logs + "/merged.log") == 0);
  CHECK(fs::exists(dir + "/merged/model.safetensors"));
}
