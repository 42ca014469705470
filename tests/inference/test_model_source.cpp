// Where a trained model comes from: GPT-2 weights with their config.json round-trip into the
// shape and flat weights; a path that holds no model, weights without config.json, a Hugging
// Face directory of another family and a missing tokenizer each get one message naming the path.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "../hf/hf_directory.hpp"
#include "inference/model_source.hpp"
#include "inference/text_codec.hpp"
#include "model/gpt.hpp"

using namespace zt;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("zt_model_source_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("GPT-2 safetensors and config.json load as the model they hold", "[inference][model_source]") {
  const fs::path dir = fresh("gpt2");
  const GptShape shape(2, 2, 32, 300, 40);
  Gpt model(shape, 1, 1);
  std::vector<float> w(model.layout().total);
  model.init_params(w.data(), 0, w.size(), 3);
  test::write_model_dir(dir.string(), shape, w.data());
  for (const fs::path& path : {dir, dir / "model.safetensors"}) {
    INFO(path);
    const LoadedModel m = load_model(path.string());
    CHECK(m.shape == shape.resolved());
    REQUIRE(m.weights.size() == w.size());
    CHECK(std::equal(w.begin(), w.end(), m.weights.data()));
    CHECK(m.tokenizer.empty());
  }
  fs::remove(dir / "config.json");
  CHECK_THROWS_WITH(load_model(dir.string()), Contains("no config.json beside it"));
  CHECK_THROWS_WITH(load_model((dir / "model.safetensors").string()), Contains("no config.json beside it"));
  fs::remove_all(dir);
}

TEST_CASE("paths that hold no model are refused, naming them", "[inference][model_source]") {
  const fs::path dir = fresh("bad");
  CHECK_THROWS_WITH(load_model((dir / "nowhere").string()), Contains("nowhere: no such file or directory"));
  CHECK_THROWS_WITH(load_model(dir.string()), Contains(dir.string() + ": holds no checkpoint"));
  std::ofstream(dir / "config.json") << R"({"model_type": "llama", "hidden_size": 64})";
  CHECK_THROWS_WITH(load_model(dir.string()),
                    Contains(dir.string() + ": holds neither model.safetensors nor model.safetensors.index.json"));
  fs::remove_all(dir);
}

TEST_CASE("a model of more than 256 tokens needs its tokenizer", "[inference][model_source]") {
  CHECK_THROWS_WITH(TextCodec::for_model("", 50257, "--tokenizer"),
                    Contains("the model's 50257 tokens need the tokenizer") && Contains("give --tokenizer"));
  CHECK(TextCodec::for_model("", 256, "--tokenizer").name() == "bytes");
  CHECK_THROWS_WITH(TextCodec::for_model("/nonexistent/tokenizer", 50257, "--tokenizer"),
                    Contains("/nonexistent/tokenizer"));
}
