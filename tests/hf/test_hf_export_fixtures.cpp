// What zerotrain writes as a Hugging Face model directory computes, in transformers, the model
// zerotrain trained (tests/fixtures/hf_export, written by scripts/check_hf_export.py: directories
// written by `zerotrain export` that transformers' from_pretrained loaded, and the logits
// transformers computed from them). zerotrain's forward on the weights read back from each
// directory gives transformers' logits, and zerotrain's writer still writes those exact files, so
// transformers still reads what it reads today.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "../data/temp_dir.hpp"
#include "../model/torch_fixture.hpp"
#include "hf/hf_writer.hpp"
#include "config/model_block.hpp"
#include "core/param_hooks.hpp"
#include "hf_directory.hpp"
#include "model/gpt.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;

namespace {

std::string fixture_dir(const std::string& name) {
  return std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf_export/" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("directories zerotrain wrote compute transformers' logits, and are still written the same",
          "[hf][fixture]") {
  for (const char* name : {"llama3", "qwen2", "qwen3"}) {
    INFO(name);
    const std::string dir = fixture_dir(name);
    const TorchFixture fx(dir + "/transformers_logits.safetensors");
    const config::ModelConfig model = config::read_model_block(nlohmann::json::parse(fx.metadata.at("model")), name);
    const GptShape shape = model.shape;
    const DType dtype = dtype_from_name(fx.metadata.at("dtype"));
    const char* tag = dtype == DType::F32 ? "F32" : dtype == DType::BF16 ? "BF16" : "F16";
    const std::vector<float> flat = read_hf_weights(dir, shape, tag);

    // zerotrain's forward from those weights against transformers' (computed in float64).
    const auto& inputs = fx.at("inputs");
    const int B = int(inputs.shape.at(0)), T = int(inputs.shape.at(1)), V = shape.vocab_size;
    Gpt gpt(shape, B, T);
    ResidentParams params(gpt.layout());
    std::copy(flat.begin(), flat.end(), params.params.data());
    gpt.forward(inputs.i32.data(), inputs.i32.data(), B, T, params);
    const std::vector<float>& want = fx.at("logits").f32;
    REQUIRE(want.size() == size_t(B) * T * V);
    double num = 0, den = 0;
    for (int r = 0; r < B * T; ++r)
      for (int v = 0; v < V; ++v) {
        const double d = double(gpt.logits()[size_t(r) * gpt.padded_vocab() + v]) - want[size_t(r) * V + v];
        num += d * d;
        den += double(want[size_t(r) * V + v]) * want[size_t(r) * V + v];
      }
    INFO("relative error of the logits " << std::sqrt(num / den));
    CHECK(std::sqrt(num / den) <= 1e-5);

    // The same weights written today: the same files, byte for byte.
    TempDir tmp;
    HfOutput output(dtype);
    output.max_shard_bytes = parse_byte_size(fx.metadata.at("max_shard_size"), "max_shard_size");
    HfModelWriter out(tmp.file("again"), gpt.layout(), shape, output);
    for (const ParamGroup& g : gpt.layout().groups) out.write_group(g, flat.data() + g.offset);
    out.commit();
    size_t files = 0;
    for (auto& e : fs::directory_iterator(tmp.file("again"))) {
      const std::string file = e.path().filename().string();
      INFO(file);
      CHECK(slurp(e.path().string()) == slurp(dir + "/" + file));
      ++files;
    }
    size_t fixture_files = 0;
    for (auto& e : fs::directory_iterator(dir))
      fixture_files += e.path().filename() != "transformers_logits.safetensors";
    CHECK(files == fixture_files);
    CHECK(files >= 2);
  }
}
