// Multi-rank (under mpirun on 1, 2, 3 and 4 ranks): the evaluation of the same weights gives the
// same loss at any world size, over the same windows of data.val: training.eval_batches counts the
// windows of the whole world (0: every window of the file), split across the ranks (some get one
// fewer), and the loss is the mean over every target that counts (a loss mask honoured). The
// reference is computed here in one process, window by window, from the file and the seed's
// initial weights, without the trainer, the sampler or the engine.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/ignored_target.hpp"
#include "config/config.hpp"
#include "config/model_block.hpp"
#include "data/dataset.hpp"
#include "data/token_file_writer.hpp"
#include "inference/device_weights.hpp"
#include "mpi_world.hpp"
#include "train/trainer.hpp"

using namespace zt;
using zt::test::world;
namespace fs = std::filesystem;

namespace {

constexpr int kB = 2, kT = 8, kVocab = 64;
constexpr int64_t kWindows = 11;  // not a multiple of 2, 3 or 4: the last round leaves ranks without a window

// Tokens of a fixed pseudo-random sequence with a loss mask that drops every third target.
std::string write_val(const fs::path& dir) {
  const std::string path = (dir / "val.bin").string();
  if (world().rank() == 0) {
    fs::create_directories(dir);
    std::vector<int32_t> tokens(kWindows * kB * kT + 5);
    std::vector<uint8_t> counted(tokens.size());
    uint64_t x = 12345;
    for (size_t i = 0; i < tokens.size(); ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      tokens[i] = int32_t((x >> 33) % kVocab);
      counted[i] = uint8_t(i % 3 != 0);
    }
    TokenFileWriter writer(path, kVocab);
    writer.append(tokens, counted);
    writer.finish();
  }
  world().control().barrier();
  return path;
}

nlohmann::json raw_config(const std::string& val, int stage, std::optional<int64_t> eval_batches) {
  nlohmann::json training = {{"steps", 1}, {"eval_interval", 0}, {"seed", 77}, {"lr_scheduler_type", "constant"}};
  if (eval_batches) training["eval_batches"] = *eval_batches;
  return {{"train_micro_batch_size_per_gpu", kB},
          {"gradient_accumulation_steps", 1},
          {"zero_optimization", {{"stage", stage}}},
          {"bf16", {{"enabled", false}}},
          {"model", {{"n_layer", 2}, {"n_head", 2}, {"d_model", 16}, {"vocab_size", kVocab}, {"max_seq_len", kT}}},
          {"data", {{"train", val}, {"val", val}, {"seq_len", kT}, {"shuffle", false}}},
          {"training", training}};
}

// The mean loss over the targets that count in windows [0, windows) of the file, one process.
double reference_loss(const config::Config& c, const std::string& val, int64_t windows) {
  Gpt model(c.model.shape, kB, kT);
  std::vector<float> flat(model.layout().total);
  model.init_params(flat.data(), 0, flat.size(), c.training.seed);
  DeviceWeights weights(model.layout(), flat.data(), cpu_backend());
  const auto data = open_dataset(val, "llmc");
  const int64_t n = int64_t(kB) * kT;
  std::vector<int32_t> inputs(static_cast<size_t>(n)), targets(static_cast<size_t>(n));
  std::vector<uint8_t> counts(static_cast<size_t>(n));
  double sum = 0, counted = 0;
  for (int64_t w = 0; w < windows; ++w) {
    data->read(w * n, n, inputs.data());
    data->read(w * n + 1, n, targets.data());
    data->read_loss_mask(w * n + 1, n, counts.data());
    int64_t in_window = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!counts[size_t(i)]) targets[size_t(i)] = kIgnoredTarget;
      in_window += counts[size_t(i)];
    }
    const float loss = model.forward(inputs.data(), targets.data(), kB, kT, weights);
    REQUIRE(model.counted_targets() == in_window);
    sum += double(loss) * double(in_window);
    counted += double(in_window);
  }
  return sum / counted;
}

}  // namespace

TEST_CASE("the val loss of the same weights is the same at any world size", "[trainer][eval]") {
  const int W = world().world_size();
  const std::string val = write_val(fs::path(ZT_BINARY_DIR) / "test-runs" / ("eval-np" + std::to_string(W)));
  config::ResolveOptions options;
  options.world_size = W;
  // 0 (the default) reads every window; a count is a count for the whole world; more than the file
  // holds reads the file once.
  for (auto [given, windows] : {std::pair<std::optional<int64_t>, int64_t>{std::nullopt, kWindows}, {7, 7}, {1, 1},
                                {500, kWindows}}) {
    for (int stage : {0, 3}) {
      DYNAMIC_SECTION("eval_batches " << (given ? std::to_string(*given) : "default") << ", stage " << stage) {
        const config::Config c = config::resolve_config(raw_config(val, stage, given), options, "eval.json");
        const double want = reference_loss(c, val, windows);
        Trainer trainer(c, world());
        const double got = trainer.evaluate();
        INFO(W << " ranks: " << got << ", reference " << want);
        CHECK(std::abs(got - want) <= 1e-6 * want);
        CHECK(trainer.evaluate() == got);  // evaluating changes nothing
      }
    }
  }
}
