// zerotrain eval's computation against PyTorch's cross-entropy with ignore_index (the masked fixture
// of tests/fixtures/torch, scripts/make_mask_fixtures.py): its four windows of a token file with a
// loss mask give the sum of their token losses over the targets that count, one window holding
// none; a file too short for a window is refused, naming it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../hf/hf_directory.hpp"
#include "comm/world.hpp"
#include "data/token_file_writer.hpp"
#include "inference/evaluation.hpp"
#include "masked_fixture.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;

namespace {

World& world() {
  static int argc = 1;
  static char name[] = "test_inference";
  static char* args[] = {name, nullptr};
  static char** argv = args;
  static World w(argc, argv);
  return w;
}

}  // namespace

TEST_CASE("eval of a masked token file gives PyTorch's ignore_index loss", "[inference][eval][mask]") {
  const TorchFixture fx(masked_fixture_path());
  const fs::path dir = fs::temp_directory_path() / ("zt_eval_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const GptShape shape = fx.shape();
  Gpt model(shape, 1, 1);
  std::vector<float> w(model.layout().total);
  fx.load_weights(model.layout(), w.data());
  test::write_model_dir(dir.string(), shape, w.data());
  std::vector<uint8_t> counted;
  for (int32_t m : fx.at("mask").i32) counted.push_back(uint8_t(m));
  {
    TokenFileWriter writer((dir / "masked.bin").string(), shape.vocab_size);
    writer.append(fx.at("tokens").i32, counted);
    writer.finish();
  }
  REQUIRE(fs::exists(dir / "masked.mask"));

  EvalOptions o;
  o.model = dir.string();
  o.data = (dir / "masked.bin").string();
  o.seq_len = fx.meta_int("T");
  o.batch_size = fx.meta_int("B");
  o.max_windows = 4;
  const EvalResult r = evaluate_file(o, world());
  const double want = fx.at("loss").f32[0];
  CHECK(std::abs(r.loss - want) <= 1e-5 * want);
  CHECK(r.counted == fx.meta_int("counted"));
  CHECK(r.windows == 4);
  CHECK(r.targets == 4 * o.batch_size * o.seq_len);

  o.max_windows = 0;  // all 8: the second four count nothing, the loss stays
  const EvalResult all = evaluate_file(o, world());
  CHECK(all.windows == 8);
  CHECK(all.counted == r.counted);
  CHECK(std::abs(all.loss - r.loss) <= 1e-6 * want);

  o.seq_len = 0;  // the default: the model's 16 positions
  o.batch_size = 300;  // more sequences than the file holds
  CHECK_THROWS_WITH(evaluate_file(o, world()), Catch::Contains("masked.bin: 257 tokens hold no window of 300"));
  fs::remove_all(dir);
}

TEST_CASE("eval of a save_pretrained directory gives transformers' loss", "[inference][eval][hf]") {
  // tests/fixtures/hf/*_dir_* and their references (scripts/make_hf_dir_fixtures.py): sharded
  // safetensors in fp32 and bf16, read through lib/hf/hf_weights.
  const fs::path fixtures = fs::path(ZT_SOURCE_DIR) / "tests" / "fixtures" / "hf";
  const fs::path tmp = fs::temp_directory_path() / ("zt_eval_hf_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  for (const char* name : {"llama3_dir_fp32", "qwen2_dir_bf16"}) {
    INFO(name);
    const nlohmann::json ref = nlohmann::json::parse(std::ifstream(fixtures / (std::string(name) + ".reference.json")));
    const int vocab = nlohmann::json::parse(std::ifstream(fixtures / name / "config.json")).at("vocab_size");
    const std::string data = (tmp / (std::string(name) + ".bin")).string();
    {
      TokenFileWriter writer(data, vocab);
      writer.append(ref.at("tokens").get<std::vector<int32_t>>(), {});
      writer.finish();
    }
    EvalOptions o;
    o.model = (fixtures / name).string();
    o.data = data;
    o.seq_len = ref.at("T");
    o.batch_size = ref.at("B");
    const EvalResult r = evaluate_file(o, world());
    CHECK(r.windows == 2);
    const double want = ref.at("loss");
    CHECK(std::abs(r.loss - want) <= 1e-5 * want);
  }
  fs::remove_all(tmp);
}
