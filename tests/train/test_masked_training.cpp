// Training on a token file with a loss mask, through the trainer on 1, 2 and 4 ranks (under mpirun)
// at every ZeRO stage, against PyTorch with ignore_index (tests/fixtures/torch/gpt2_masked, by
// scripts/make_mask_fixtures.py): a step of four windows — one with no target that counts — logs
// the sum of its token losses over its counted targets, and its gradient is that loss's, whatever
// the split into ranks and accumulation; the evaluation of the same windows gives the same loss; a
// step without any counted target logs no loss (NaN) and has a zero gradient.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "../hf/hf_directory.hpp"
#include "adamw_block.hpp"
#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "config/config.hpp"
#include "data/token_file_writer.hpp"
#include "masked_fixture.hpp"
#include "mpi_world.hpp"
#include "train/trainer.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;

namespace {

double relative_error(const float* got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); i++) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

// The fixture's tokens and mask as an llm.c file, and its weights as GPT-2 safetensors (rank 0).
struct Files {
  std::string data, weights;
};
Files write_files(const TorchFixture& fx, const fs::path& dir) {
  Files f{(dir / "masked.bin").string(), (dir / "weights" / "model.safetensors").string()};
  if (world().rank() == 0) {
    fs::create_directories(dir);
    const auto& tokens = fx.at("tokens").i32;
    std::vector<uint8_t> counted;
    for (int32_t m : fx.at("mask").i32) counted.push_back(uint8_t(m));
    TokenFileWriter writer(f.data, fx.meta_int("vocab_size"));
    writer.append(tokens, counted);
    writer.finish();
    Gpt model(fx.shape(), 1, 1);
    std::vector<float> flat(model.layout().total);
    fx.load_weights(model.layout(), flat.data());
    write_model_dir((dir / "weights").string(), fx.shape(), flat.data());
  }
  world().control().barrier();
  return f;
}

config::Config make(const TorchFixture& fx, const Files& f, int stage) {
  const int W = world().world_size();
  const nlohmann::json raw = {
      {"train_micro_batch_size_per_gpu", fx.meta_int("B")},
      {"gradient_accumulation_steps", 4 / W},
      {"gradient_clipping", 0.0},
      {"zero_optimization", {{"stage", stage}}},
      {"optimizer", adamw_block([&](const char* name) { return fx.meta_double(name); })},
      {"model",
       {{"model_type", "gpt2"},
        {"n_layer", fx.meta_int("n_layer")},
        {"n_head", fx.meta_int("n_head")},
        {"d_model", fx.meta_int("d_model")},
        {"vocab_size", fx.meta_int("vocab_size")},
        {"max_seq_len", fx.meta_int("max_seq_len")}}},
      {"data", {{"train", f.data}, {"val", f.data}, {"seq_len", fx.meta_int("T")}, {"shuffle", false}}},
      {"training",
       {{"steps", 2},
        {"lr_scheduler_type", "constant"},
        {"eval_interval", 0},
        {"eval_batches", 4},  // windows for the whole world
        {"init_from", f.weights}}}};
  config::ResolveOptions options;
  options.world_size = W;
  return config::resolve_config(raw, options, "masked.json");
}

}  // namespace

TEST_CASE("training with a loss mask: PyTorch's ignore_index loss and gradient at any world size and stage",
          "[trainer][mask]") {
  const TorchFixture fx(masked_fixture_path());
  const Files files = write_files(fx, fs::path(ZT_BINARY_DIR) / "test-runs" /
                                          ("masked-np" + std::to_string(world().world_size())));
  const float want_loss = fx.at("loss").f32[0];
  for (int stage = 0; stage <= 3; stage++) {
    DYNAMIC_SECTION("stage " << stage) {
      Trainer trainer(make(fx, files, stage), world());
      // Before any step: the evaluation reads the same four windows as the first step.
      const double val = trainer.evaluate();
      CHECK(std::abs(val - want_loss) <= 1e-5 * want_loss);

      const TrainStepResult first = trainer.train_step(1);
      INFO("loss " << first.loss << " reference " << want_loss);
      CHECK(std::abs(first.loss - want_loss) <= 1e-5 * want_loss);
      const double want_norm = fx.at("grad_norm").f32[0];
      CHECK(std::abs(first.result.grad_norm - want_norm) <= 1e-5 * want_norm);
      // lr 1 and eps 1: the update is about the gradient itself.
      std::vector<float> master(trainer.model().layout().total);
      trainer.engine().gather_master(master.data());
      for (auto& g : trainer.model().layout().groups)
        for (auto& t : g.tensors) {
          const auto& before = fx.at(t.name).f32;
          const auto& after = fx.at("adamw." + t.name).f32;
          std::vector<float> got(after.size()), want(after.size());
          for (size_t i = 0; i < after.size(); i++) {
            got[i] = master[t.offset + i] - before[i];
            want[i] = after[i] - before[i];
          }
          const double err = relative_error(got.data(), want);
          INFO(t.name << ": relative error of the update " << err);
          CHECK(err <= 1e-4);
        }

      // The second step's windows have no target that counts.
      const TrainStepResult second = trainer.train_step(2);
      CHECK(std::isnan(second.loss));
      CHECK(second.result.grad_norm == 0.0);
    }
  }
}
