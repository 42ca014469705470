// The weights of Hugging Face model directories that transformers' save_pretrained wrote
// (tests/fixtures/hf/*_dir_*, scripts/make_hf_dir_fixtures.py): sharded fp32 and bf16 read into the
// flat layout, each range reading the bytes of its own elements and nothing else, and every way a
// directory can be broken named by tensor and file before anything is read.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hf/hf_weights.hpp"
#include "config/config.hpp"
#include "config/model_block.hpp"
#include "core/error.hpp"
#include "model/gpt_layout.hpp"

using namespace zt;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(ZT_SOURCE_DIR) / "tests" / "fixtures" / "hf";

GptShape shape_of_dir(const fs::path& dir) { return config::resolve_model_argument(dir.string()).shape; }

// Every tensor of the directory's shards by name, read straight from its file.
std::map<std::string, std::vector<float>> tensors_in(const fs::path& dir) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".safetensors") continue;
    SafetensorsReader file(entry.path().string());
    for (const SafetensorsEntry& e : file.tensors()) {
      std::vector<float> v(e.numel());
      file.read_f32(e, v.data());
      out[e.name] = std::move(v);
    }
  }
  return out;
}

// The fixture copied to a fresh directory, to be broken.
fs::path copy_of(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("zt_hf_weights_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  fs::copy(kFixtures / name, dir);
  return dir;
}

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(std::ifstream(p)); }
void write_json(const fs::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(2); }

std::string error_opening(const fs::path& dir, const GptShape& shape) {
  try {
    HfWeights w(dir.string(), hf_tensors(shape));
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected an error opening " << dir);
  return "";
}

}  // namespace

TEST_CASE("a sharded directory reads as its tensors, each range reading only its own bytes", "[hf]") {
  for (const char* name : {"llama3_dir_fp32", "qwen2_dir_bf16"}) {
    DYNAMIC_SECTION(name) {
      const fs::path dir = kFixtures / name;
      const GptShape shape = shape_of_dir(dir);
      const std::vector<HfTensor> tensors = hf_tensors(shape);
      const HfWeights all(dir.string(), tensors);
      REQUIRE(all.files().size() > 2);
      REQUIRE(all.numel() == make_gpt_layout(shape).total);
      std::vector<float> flat(all.numel());
      all.read(flat.data(), 0, flat.size());

      // Each tensor where the layout puts it, the padded vocabulary rows zero.
      const auto want = tensors_in(dir);
      const size_t elem = std::string(name).find("bf16") != std::string::npos ? 2 : 4;
      uint64_t bytes = 0;
      for (const HfTensor& t : tensors) {
        INFO(t.name);
        REQUIRE(want.count(t.name));
        const std::vector<float>& w = want.at(t.name);
        CHECK(std::equal(w.begin(), w.end(), flat.begin() + long(t.offset)));
        CHECK(std::all_of(flat.begin() + long(t.offset + w.size()),
                          flat.begin() + long(t.offset + w.size() + t.padding), [](float x) { return x == 0.0f; }));
        bytes += w.size() * elem;
      }
      CHECK(all.bytes_read() == bytes);

      // Split as ZeRO stage 3 splits the parameters among 2 and 3 ranks, read in the engine's
      // chunks: the same values, and together each byte once.
      for (size_t ranks : {2, 3}) {
        uint64_t together = 0;
        for (size_t r = 0; r < ranks; ++r) {
          const size_t begin = flat.size() * r / ranks, end = flat.size() * (r + 1) / ranks;
          const HfWeights shard(dir.string(), tensors);
          std::vector<float> got(end - begin);
          for (size_t done = 0; done < got.size(); done += 1000)
            shard.read(got.data() + done, begin + done, std::min<size_t>(1000, got.size() - done));
          CHECK(std::equal(got.begin(), got.end(), flat.begin() + long(begin)));
          // Only the bytes of its own elements (the padding rows read nothing).
          uint64_t own = 0;
          for (const HfTensor& t : tensors) {
            const size_t real_end = t.offset + want.at(t.name).size();
            if (std::min(end, real_end) > std::max(begin, t.offset))
              own += (std::min(end, real_end) - std::max(begin, t.offset)) * elem;
          }
          CHECK(shard.bytes_read() == own);
          together += shard.bytes_read();
        }
        CHECK(together == bytes);
      }
    }
  }
}

TEST_CASE("a broken directory is refused before anything is read, naming the tensor and the file", "[hf]") {
  const GptShape shape = shape_of_dir(kFixtures / "llama3_dir_fp32");
  const std::string up = "model.layers.1.mlp.up_proj.weight";

  SECTION("a tensor missing from the index") {
    const fs::path dir = copy_of("llama3_dir_fp32");
    nlohmann::json index = read_json(dir / "model.safetensors.index.json");
    index["weight_map"].erase(up);
    write_json(dir / "model.safetensors.index.json", index);
    CHECK_THAT(error_opening(dir, shape), Contains((dir / "model.safetensors.index.json").string() + ": tensor " + up +
                                                   " is missing from weight_map (expected shape [64, 64])"));
  }
  SECTION("a tensor missing from the shard the index names") {
    const fs::path dir = copy_of("llama3_dir_fp32");
    nlohmann::json index = read_json(dir / "model.safetensors.index.json");
    const std::string other = index["weight_map"]["model.embed_tokens.weight"];
    REQUIRE(index["weight_map"][up] != other);
    index["weight_map"][up] = other;
    write_json(dir / "model.safetensors.index.json", index);
    CHECK_THAT(error_opening(dir, shape), Contains((dir / other).string() + ": tensor " + up + " is not in this file"));
  }
  SECTION("a tensor of another shape") {
    GptShape wider = shape;
    wider.d_ff = 96;
    const std::string message = error_opening(kFixtures / "llama3_dir_fp32", wider);
    CHECK_THAT(message, Contains("tensor model.layers.0.mlp.gate_proj.weight has shape [64, 64], expected [96, 64]") &&
                            Contains(".safetensors"));
  }
  SECTION("a truncated shard") {
    const fs::path dir = copy_of("llama3_dir_fp32");
    const std::string shard = read_json(dir / "model.safetensors.index.json")["weight_map"][up];
    fs::resize_file(dir / shard, fs::file_size(dir / shard) - 100);
    CHECK_THAT(error_opening(dir, shape), Contains((dir / shard).string() + ": tensor ") &&
                                              Contains("outside the data section"));
  }
  SECTION("a shard that is not there") {
    const fs::path dir = copy_of("llama3_dir_fp32");
    const std::string shard = read_json(dir / "model.safetensors.index.json")["weight_map"][up];
    fs::remove(dir / shard);
    CHECK_THAT(error_opening(dir, shape), Contains((dir / shard).string() + ": cannot open safetensors file"));
  }
  SECTION("an index that is not one") {
    const fs::path dir = copy_of("llama3_dir_fp32");
    const fs::path index = dir / "model.safetensors.index.json";
    std::ofstream(index) << "{\"weight_map\": {";
    CHECK_THAT(error_opening(dir, shape), Contains(index.string() + ": not valid JSON"));
    write_json(index, {{"metadata", {{"total_size", 1}}}});
    CHECK_THAT(error_opening(dir, shape), Contains(index.string() + ": holds no \"weight_map\" object"));
    write_json(index, {{"weight_map", {{up, "../elsewhere.safetensors"}}}});
    CHECK_THAT(error_opening(dir, shape),
               Contains("weight_map." + up + ": \"../elsewhere.safetensors\" is not a file name"));
    fs::remove(index);
    CHECK_THAT(error_opening(dir, shape),
               Contains(dir.string() + ": holds neither model.safetensors nor model.safetensors.index.json"));
  }
  SECTION("a dtype that is not read, a weight that is not finite") {
    const fs::path dir = copy_of("llama3_dir_fp32");
    const std::string shard = read_json(dir / "model.safetensors.index.json")["weight_map"][up];
    const fs::path file = dir / shard;
    uint64_t data_start = 0, begin = 0;
    {
      SafetensorsReader r(file.string());
      data_start = r.data_start();
      begin = r.find(up)->begin;
    }
    // The first element of up_proj: NaN, found when its range is read.
    {
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      const float nan = std::nanf("");
      f.seekp(std::streamoff(data_start + begin));
      f.write(reinterpret_cast<const char*>(&nan), 4);
    }
    const HfWeights weights(dir.string(), hf_tensors(shape));
    std::vector<float> flat(weights.numel());
    CHECK_THROWS_WITH(weights.read(flat.data(), 0, flat.size()),
                      Contains(file.string() + ": tensor " + up + " element 0 is nan"));
    // F32 spelled I32 in the header: the same bytes, not floating point.
    std::string bytes;
    {
      std::ifstream in(file, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    const size_t at = bytes.find("\"F32\"");
    REQUIRE(at != std::string::npos);
    bytes.replace(at, 5, "\"I32\"");
    std::ofstream(file, std::ios::binary) << bytes;
    CHECK_THAT(error_opening(dir, shape), Contains(file.string() + ": tensor ") &&
                                              Contains("has dtype I32, which is not read (expected F32, BF16 or F16)"));
  }
  fs::remove_all(fs::temp_directory_path() / ("zt_hf_weights_" + std::to_string(::getpid())));
}
