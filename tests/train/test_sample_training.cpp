// Training on record data through the trainer on 1 and 2 ranks (under mpirun) at every ZeRO stage:
// a step of packed rows of samples (the trainer passing each micro-batch's RowSegments) logs the
// loss of its samples run one by one, the mean over all their targets that count, whatever the
// split into ranks and accumulation.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "config/config.hpp"
#include "mpi_world.hpp"
#include "sample_losses.hpp"
#include "train/trainer.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;

namespace {

constexpr int kSeq = 40, kMicro = 2, kRowsPerStep = 8, kVocab = 64;

config::Config make(const std::string& data, int stage) {
  const int W = world().world_size();
  const nlohmann::json raw = {
      {"train_micro_batch_size_per_gpu", kMicro},
      {"gradient_accumulation_steps", kRowsPerStep / kMicro / W},
      {"zero_optimization", {{"stage", stage}}},
      {"model",
       {{"model_type", "llama"},
        {"n_layer", 2},
        {"n_head", 4},
        {"n_kv_head", 2},
        {"d_model", 32},
        {"d_ff", 64},
        {"vocab_size", kVocab},
        {"max_seq_len", kSeq}}},
      {"data",
       {{"train", data}, {"val", ""}, {"seq_len", kSeq}, {"shuffle", false}, {"packing", "pack"}}},
      {"training", {{"steps", 1}, {"lr_scheduler_type", "constant"}, {"eval_interval", 0}, {"init_from", "random"}}}};
  config::ResolveOptions options;
  options.world_size = W;
  return config::resolve_config(raw, options, "samples.json");
}

// The mean loss over the counted targets of the samples step 1 reads, each run alone with `weights`.
double samples_one_by_one(const TokenDataset& data, const GptShape& shape, const std::vector<float>& weights) {
  const SampleSampler sampler(data, {Packing::Pack, Padding::Longest, Truncation::Truncate, kSeq}, kMicro, 1, 0,
                              kRowsPerStep / kMicro, false, 0);
  Gpt model(shape, 1, kSeq);
  ResidentParams params(model.layout());
  std::copy(weights.begin(), weights.end(), params.params.data());
  double sum = 0, counted = 0;
  const SampleRows& rows = sampler.rows();
  for (int64_t i = 0; i < kRowsPerStep; ++i) {
    const int64_t row = sampler.row_of(i);
    for (int64_t e = rows.row_begin[size_t(row)]; e < rows.row_begin[size_t(row) + 1]; ++e) {
      const AloneSample s = sample_alone(data, rows.sample[size_t(e)], kSeq);
      if (s.counted == 0) continue;
      sum += double(model.forward(s.inputs.data(), s.targets.data(), 1, int(s.inputs.size()), params)) * s.counted;
      counted += s.counted;
    }
  }
  return sum / counted;
}

}  // namespace

TEST_CASE("a step of packed samples trains on the loss of its samples one by one, at any world size and stage",
          "[trainer][samples]") {
  const fs::path dir = fs::path(ZT_BINARY_DIR) / "test-runs" / ("samples-np" + std::to_string(world().world_size()));
  const std::string path = (dir / "chat.bin").string();
  if (world().rank() == 0) {
    fs::create_directories(dir);
    write_record_data(path, {30, 7, 12, 40, 3, 25, 18, 9, 33, 5, 21, 14, 2, 38, 11, 26, 8, 17}, kVocab, 9);
  }
  world().control().barrier();
  const auto data = open_dataset(path, TokenFormat::LlmC);
  for (int stage = 0; stage <= 3; stage++) {
    DYNAMIC_SECTION("stage " << stage) {
      const config::Config config = make(path, stage);  // the trainer keeps a reference
      Trainer trainer(config, world());
      std::vector<float> weights(trainer.model().layout().total);
      trainer.engine().gather_master(weights.data());
      const double want = samples_one_by_one(*data, trainer.model().shape(), weights);
      const TrainStepResult first = trainer.train_step(1);
      INFO("loss " << first.loss << ", the samples one by one " << want);
      CHECK(std::abs(first.loss - want) <= 1e-5 * want);
      CHECK(first.tokens.row_tokens > first.tokens.tokens);  // padding to the longest row
    }
  }
}
