// The paths a run writes: no output names an input or another output (however spelt), and every
// output location is made and probed before the run, with errors naming the key.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/config.hpp"
#include "core/error.hpp"
#include "core/machine_memory.hpp"
#include "train/output_paths.hpp"

using namespace zt;
namespace fs = std::filesystem;

namespace {

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("zt_test_outputs_" + std::to_string(::getpid()));
  Scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string file(const std::string& name, const std::string& text = "x\n") const {
    const fs::path p = dir / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

config::Config resolve(nlohmann::json training, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json raw = {{"train_micro_batch_size_per_gpu", 1}, {"training", training}};
  raw.merge_patch(extra);
  config::ResolveOptions o;
  o.world_size = 2;
  return config::resolve_config(raw, o, "built-in");
}

std::string collision(const config::Config& c) {
  try {
    check_output_paths(c, 2);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an output naming an input is found however the path is spelt", "[outputs]") {
  Scratch s;
  const std::string data = s.file("data/train.txt");
  fs::create_symlink(data, s.path("link.txt"));
  fs::create_hard_link(data, s.path("hard.txt"));
  const auto with_data = [&](const std::string& metrics) {
    return collision(resolve({{"metrics", metrics}}, {{"data", {{"train", data}}}}));
  };
  CHECK(with_data(data) == "training.metrics '" + data + "' names the same file as data.train '" + data +
                               "': writing it would destroy the input; choose another path for training.metrics");
  for (const std::string& spelling : {s.path("data/../data/./train.txt"), s.path("link.txt"), s.path("hard.txt"),
                                      s.path("new/dir/../../link.txt")}) {
    INFO(spelling);
    CHECK(with_data(spelling).rfind("training.metrics '" + spelling + "' names the same file as data.train", 0) == 0);
  }
  CHECK(with_data(s.path("data/other.jsonl")) == "");
  CHECK(with_data(s.path("data/train.txt.jsonl")) == "");
}

TEST_CASE("a directory output may not hold an input under a name it writes", "[outputs]") {
  Scratch s;
  const std::string weights = s.file("w/model.safetensors");
  CHECK(collision(resolve({{"save_final", s.path("w")}, {"init_from", weights}})) ==
        "training.save_final '" + s.path("w") + "' would write '" + s.path("w/model.safetensors") +
            "', which is training.init_from '" + weights +
            "': writing it would destroy the input; choose another path for training.save_final");
  // init_from as the directory holding model.safetensors.
  CHECK(collision(resolve({{"save_final", s.path("w/")}, {"init_from", s.path("w")}})).rfind(
            "training.save_final '" + s.path("w/") + "' names the same path as training.init_from", 0) == 0);
  // Beside it: fine. Below it under another name: the output directory holds the input, which a
  // run never writes near, unless training.overwrite says the user means it.
  CHECK(collision(resolve({{"save_final", s.path("out")}, {"init_from", weights}})) == "");
  const std::string old = s.file("w/old/model.safetensors");
  CHECK(collision(resolve({{"save_final", s.path("w")}, {"init_from", old}})) ==
        "training.save_final '" + s.path("w") + "' holds training.init_from '" + old +
            "': a run writes nowhere near what it reads; choose another path for training.save_final (or --overwrite "
            "if you mean to write there)");
  CHECK(collision(resolve({{"save_final", s.path("w")}, {"init_from", old}, {"overwrite", true}})) == "");
  // log_dir writes rank<r>.log for the ranks there are (2); it may not hold an input either.
  CHECK(collision(resolve({{"log_dir", s.path("d")}}, {{"data", {{"val", s.file("d/rank1.log")}}}}))
            .find("would write '" + s.path("d/rank1.log") + "', which is data.val") != std::string::npos);
  CHECK(collision(resolve({{"log_dir", s.path("d")}}, {{"data", {{"val", s.file("d/rank2.log")}}}}))
            .find("holds data.val") != std::string::npos);
  CHECK(collision(resolve({{"log_dir", s.path("d")}, {"overwrite", true}},
                          {{"data", {{"val", s.file("d/rank2.log")}}}})) == "");
  // A LoRA run's adapter directory (lora.init_from) is an input; save_final may write its files.
  const std::string adapter = s.file("adapter/adapter_model.safetensors");
  CHECK(collision(resolve({{"save_final", s.path("adapter")}}, {{"lora", {{"init_from", s.path("adapter")}}}}))
            .rfind("training.save_final '" + s.path("adapter") + "' names the same path as lora.init_from", 0) == 0);
  CHECK(collision(resolve({{"save_final", s.path("adapter")}},
                          {{"lora", nlohmann::json::object()}, {"data", {{"val", adapter}}}}))
            .rfind("training.save_final '" + s.path("adapter") + "' would write '" + adapter + "'", 0) == 0);
  // A run without adapters writes none: its save_final there holds the input, destroying nothing.
  CHECK(collision(resolve({{"save_final", s.path("adapter")}}, {{"data", {{"val", adapter}}}}))
            .rfind("training.save_final '" + s.path("adapter") + "' holds data.val", 0) == 0);
  CHECK(collision(resolve({{"save_final", s.path("out")}}, {{"lora", {{"init_from", s.path("adapter")}}}})) == "");
  // ... and replaced whole with --overwrite, as a model directory is.
  CHECK(collision(resolve({{"save_final", s.path("adapter")}, {"overwrite", true}},
                          {{"lora", {{"init_from", s.path("adapter")}}}})) == "");
  // A file output may not be one of the adapter directory's files.
  CHECK(collision(resolve({{"metrics", adapter}}, {{"lora", {{"init_from", s.path("adapter")}}}}))
            .find("is lora.init_from's '" + adapter + "'") != std::string::npos);
  // The config file is an input too.
  const std::string config_file = s.file("ds.json", "{}");
  config::Config c = resolve({{"metrics", config_file}});
  c.source = config_file;
  CHECK(collision(c).rfind("training.metrics '" + config_file + "' names the same file as --config", 0) == 0);
}

TEST_CASE("outputs may share a directory only when the files they write differ", "[outputs]") {
  Scratch s;
  const nlohmann::json monitors = {{"csv_monitor", {{"enabled", true}, {"output_path", s.path("m")}}},
                                   {"tensorboard", {{"enabled", true}, {"output_path", s.path("m")}}}};
  CHECK(collision(resolve({{"log_dir", s.path("m/DeepSpeedJobName")}}, monitors)) == "");
  CHECK(collision(resolve({{"metrics", s.path("m/DeepSpeedJobName/Train_Samples_lr.csv")}}, monitors)) ==
        "csv_monitor '" + s.path("m/DeepSpeedJobName") + "' would write '" +
            s.path("m/DeepSpeedJobName/Train_Samples_lr.csv") + "', which is training.metrics '" +
            s.path("m/DeepSpeedJobName/Train_Samples_lr.csv") +
            "': the two outputs would overwrite each other; choose different paths");
  CHECK(collision(resolve({{"metrics", s.path("m/DeepSpeedJobName/events.out.tfevents.1.host")}}, monitors)) != "");
  CHECK(collision(resolve({{"metrics", s.path("o")}, {"save_final", s.path("o")}})) ==
        "training.metrics '" + s.path("o") + "' and training.save_final '" + s.path("o") +
            "' name the same path: the two outputs would overwrite each other; choose different paths");
  // checkpoint_dir is its own.
  CHECK(collision(resolve({{"checkpoint_dir", s.path("c")}, {"log_dir", s.path("c")}})) != "");
  CHECK(collision(resolve({{"checkpoint_dir", s.path("c")}, {"log_dir", s.path("c/logs")}})) == "");
  // DeepSpeed configs commonly give both offload blocks the same nvme_path.
  fs::create_directories(s.path("nvme"));
  const nlohmann::json nvme = {{"zero_optimization",
                                {{"stage", 3},
                                 {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", s.path("nvme")}}},
                                 {"offload_param", {{"device", "nvme"}, {"nvme_path", s.path("nvme")}}}}}};
  CHECK(collision(resolve(nlohmann::json::object(), nvme)) == "");
  CHECK(collision(resolve({{"log_dir", s.path("nvme")}}, nvme)) != "");
}

TEST_CASE("output locations are made and probed, errors naming the key", "[outputs]") {
  Scratch s;
  const std::string file = s.file("afile");
  auto prepare_error = [](const config::Config& c, int rank) -> std::string {
    try {
      prepare_outputs(c, rank, 2);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(prepare_error(resolve({{"save_final", file + "/final"}}), 0) ==
        "training.save_final: cannot create directory '" + file + "/final': '" + file +
            "' is a regular file, not a directory");
  CHECK(prepare_error(resolve({{"metrics", s.path("d/e/m.jsonl")}}), 0) == "");
  CHECK(fs::is_directory(s.path("d/e")));
  CHECK(fs::is_empty(s.path("d/e")));  // the probe file is gone; the metrics file is made by the run
  fs::create_directories(s.path("dir"));
  CHECK(prepare_error(resolve({{"metrics", s.path("dir")}}), 0) ==
        "training.metrics: '" + s.path("dir") + "' is a directory (expected a file to write)");
  // Rank 0 writes metrics and save_final; every rank writes logs.
  CHECK(prepare_error(resolve({{"save_final", file + "/final"}}), 1) == "");
  CHECK(prepare_error(resolve({{"log_dir", file + "/logs"}}), 1) != "");
  // What probing leaves: the directories, no files; an existing metrics file untouched.
  const std::string kept = s.file("keep/m.jsonl", "earlier run\n");
  CHECK(prepare_error(resolve({{"metrics", kept}, {"save_final", s.path("new/final")}, {"log_dir", s.path("logs")}}),
                      0) == "");
  CHECK(fs::is_empty(s.path("new/final")));
  CHECK(fs::is_empty(s.path("logs")));
  CHECK(std::distance(fs::directory_iterator(s.path("keep")), fs::directory_iterator()) == 1);
  std::ifstream in(kept);
  std::string line;
  std::getline(in, line);
  CHECK(line == "earlier run");
}

TEST_CASE("MemTotal is read from /proc/meminfo", "[outputs]") {
  CHECK(mem_total_bytes("MemTotal:       24687732 kB\nMemFree:        1 kB\n") == uint64_t(24687732) * 1024);
  CHECK_FALSE(mem_total_bytes("MemFree: 1 kB\n"));
  CHECK(machine_memory_bytes().value_or(0) > 0);
}
