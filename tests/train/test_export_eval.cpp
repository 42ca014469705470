// What an export holds, judged by evaluating it: the bf16 export of a bf16 run holds exactly the
// weights the model computed with, so an fp32 model started from it (init_from) reproduces the
// run's logged val loss bit for bit; the fp32 export holds the masters, which do not. A checkpoint
// as init_from gives the weights and nothing else (a fresh optimizer, step 0).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "train/model_export.hpp"
#include "config/config.hpp"
#include "self_communicator.hpp"
#include "metrics/metrics_file.hpp"
#include "train/trainer.hpp"

using namespace zt;
namespace fs = std::filesystem;

namespace {

config::Config make(const std::string& dtype, const nlohmann::json& training) {
  config::ResolveOptions options;
  nlohmann::json t = {{"steps", 4}, {"eval_interval", 4}, {"eval_batches", 2}, {"seed", 7}};
  t.update(training);
  const nlohmann::json raw = {{"train_micro_batch_size_per_gpu", 2},
                              {"bf16", {{"enabled", dtype == "bf16"}}},
                              {"model", {{"preset", "toy"}}},
                              {"data", {{"seq_len", 32}}},
                              {"training", t}};
  return config::resolve_config(raw, options, "test.json");
}

// The val loss a fresh trainer of `config` evaluates, before any step.
double evaluate(const config::Config& config) {
  test::SelfCommunicator comm;
  Trainer trainer(config, comm);
  CHECK(trainer.engine().optimizer_steps() == 0);
  CHECK(trainer.start_step() == 0);
  return trainer.evaluate();
}

double logged_val_loss(const std::string& metrics) {
  std::ifstream in(metrics);
  double val = NAN;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "eval") val = j["val_loss"].get<double>();
  }
  return val;
}

}  // namespace

TEST_CASE("export -> init_from reproduces the logged val loss; bf16 holds what the model computed with",
          "[trainer][export]") {
  const fs::path dir = fs::temp_directory_path() / ("zt_test_export_eval_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string ckpt = (dir / "ckpt").string();
  const config::Config trained = make("bf16", {{"checkpoint_dir", ckpt}, {"metrics", (dir / "m.jsonl").string()}});
  {
    test::SelfCommunicator comm;
    Trainer trainer(trained, comm);
    REQUIRE(trainer.run() == 0);
  }
  const double logged = logged_val_loss((dir / "m.jsonl").string());
  REQUIRE(std::isfinite(logged));
  export_checkpoint(ckpt, (dir / "bf16").string(), HfOutput(DType::BF16));
  export_checkpoint(ckpt, (dir / "fp32").string(), HfOutput(DType::F32));

  // The metrics file keeps 9 significant digits; so does this comparison, on both sides.
  auto same = [&](double val) { return format_float(val) == format_float(logged); };
  // An fp32 model from the bf16 export computes what the bf16 run computed with.
  CHECK(same(evaluate(make("fp32", {{"init_from", (dir / "bf16").string()}}))));
  // From the fp32 masters it does not: they were never the weights of the forward pass.
  CHECK_FALSE(same(evaluate(make("fp32", {{"init_from", (dir / "fp32" / "model.safetensors").string()}}))));
  // A bf16 model rounds the masters itself, from the export or from the checkpoint (weights only).
  CHECK(same(evaluate(make("bf16", {{"init_from", (dir / "fp32").string()}}))));
  CHECK(same(evaluate(make("bf16", {{"init_from", ckpt}}))));
  fs::remove_all(dir);
}
