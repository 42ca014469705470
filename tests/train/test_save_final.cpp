// training.save_final: the consolidated weights are written at the end, and the full-size buffer
// they are gathered into is counted in the memory ledger like every other large allocation.
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "ckpt/safetensors.hpp"
#include "config/config.hpp"
#include "core/ledger.hpp"
#include "self_communicator.hpp"
#include "train/trainer.hpp"

using namespace zt;

namespace {

// Notes the ledger's buffer bytes at the moment a message containing `marker` is logged.
class LedgerAtMessage : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit LedgerAtMessage(std::string marker) : marker_(std::move(marker)) {}
  std::optional<size_t> buffers;

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (std::string_view(msg.payload.data(), msg.payload.size()).find(marker_) != std::string_view::npos)
      buffers = MemoryLedger::instance().stats().cur(MemCategory::Buffers);
  }
  void flush_() override {}

private:
  std::string marker_;
};

}  // namespace

TEST_CASE("save_final writes the trained weights, gathered into a ledger-counted buffer", "[trainer]") {
  const auto dir = std::filesystem::temp_directory_path() / ("zt_test_save_final_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  config::ResolveOptions options;
  options.world_size = 1;
  const nlohmann::json raw = {{"train_micro_batch_size_per_gpu", 1},
                              {"model", {{"preset", "toy"}}},
                              {"training", {{"steps", 1}, {"save_final", dir.string()}}}};
  const config::Config config = config::resolve_config(raw, options, "test.json");

  auto sink = std::make_shared<LedgerAtMessage>("saved final weights");
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  size_t after = 0, total = 0;
  std::vector<float> trained, loaded;
  {
    test::SelfCommunicator comm;
    Trainer trainer(config, comm);
    total = trainer.model().layout().total;
    CHECK(trainer.run() == 0);
    after = MemoryLedger::instance().stats().cur(MemCategory::Buffers);  // the engine's buffers remain
    trained.resize(total);
    trainer.engine().gather_master(trained.data());
    loaded.assign(total, 0.0f);
    load_gpt2_safetensors((dir / "model.safetensors").string(), trainer.model().layout(), loaded.data(),
                          config.model.vocab_size);
  }
  spdlog::set_default_logger(previous);

  // While the weights were written, exactly the full fp32 parameter vector was held on top.
  REQUIRE(sink->buffers);
  CHECK(*sink->buffers - after == total * sizeof(float));
  // The file holds the trained weights, bit for bit (the toy vocabulary, 256, needs no padding rows).
  CHECK(loaded == trained);
  CHECK(std::filesystem::exists(dir / "config.json"));
  std::filesystem::remove_all(dir);
}
