#pragma once
// Reads tests/fixtures/torch/*.safetensors (written by scripts/make_torch_fixtures.py): an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, __metadata__},
// then the raw little-endian tensors. F32 and I32 only.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/param_hooks.hpp"
#include "model/gpt.hpp"

namespace zt::test {

struct FixtureTensor {
  std::vector<size_t> shape;
  std::vector<float> f32;    // dtype F32
  std::vector<int32_t> i32;  // dtype I32
};

class TorchFixture {
public:
  explicit TorchFixture(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open the fixture (run scripts/make_torch_fixtures.py)", path);
    uint64_t header_len = 0;
    in.read(reinterpret_cast<char*>(&header_len), 8);
    if (!in || header_len > (1u << 20)) fail("{}: bad header length", path);
    std::string header(header_len, '\0');
    in.read(header.data(), std::streamsize(header_len));
    if (!in) fail("{}: truncated header", path);
    std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto j = nlohmann::json::parse(header);
    for (auto& [name, v] : j.items()) {
      if (name == "__metadata__") {
        for (auto& [k, s] : v.items()) metadata[k] = s.get<std::string>();
        continue;
      }
      FixtureTensor t;
      t.shape = v.at("shape").get<std::vector<size_t>>();
      const size_t begin = v.at("data_offsets")[0], end = v.at("data_offsets")[1];
      if (end > data.size() || begin > end || (end - begin) % 4 != 0) fail("{}: {} has bad data_offsets", path, name);
      const size_t n = (end - begin) / 4;
      const std::string dtype = v.at("dtype");
      if (dtype == "F32") {
        t.f32.resize(n);
        std::memcpy(t.f32.data(), data.data() + begin, end - begin);
      } else if (dtype == "I32") {
        t.i32.resize(n);
        std::memcpy(t.i32.data(), data.data() + begin, end - begin);
      } else {
        fail("{}: {} has unsupported dtype {}", path, name, dtype);
      }
      tensors[name] = std::move(t);
    }
  }

  const FixtureTensor& at(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) fail("fixture has no tensor {}", name);
    return it->second;
  }
  int meta_int(const std::string& key) const { return std::stoi(metadata.at(key)); }
  double meta_double(const std::string& key) const { return std::stod(metadata.at(key)); }

  GptShape shape() const {
    return GptShape{meta_int("n_layer"), meta_int("n_head"), meta_int("d_model"), meta_int("vocab_size"),
                    meta_int("max_seq_len")};
  }

  // Copies the fixture's weights (unpadded vocabulary) into a flat parameter buffer laid out by
  // the model; the padded vocabulary rows are set to zero.
  void load_weights(const ParamLayout& layout, float* params) const {
    for (auto& g : layout.groups)
      for (auto& t : g.tensors) {
        const auto& src = at(t.name).f32;
        if (src.size() > t.numel()) fail("fixture tensor {} is larger than the model's", t.name);
        std::memcpy(params + t.offset, src.data(), src.size() * sizeof(float));
        std::memset(params + t.offset + src.size(), 0, (t.numel() - src.size()) * sizeof(float));
      }
  }

  std::map<std::string, FixtureTensor> tensors;
  std::map<std::string, std::string> metadata;
};

inline std::string torch_fixture_path() {
  return std::string(ZT_SOURCE_DIR) + "/tests/fixtures/torch/gpt2_tiny.safetensors";
}

// A fixture's model at the fixture's batch shape (B, T), with the fixture's weights resident.
struct LoadedFixture {
  explicit LoadedFixture(const std::string& path)
      : fx(path), B(fx.meta_int("B")), T(fx.meta_int("T")), model(fx.shape(), B, T), params(model.layout()) {
    fx.load_weights(model.layout(), params.params.data());
  }
  const TorchFixture fx;
  const int B, T;
  Gpt model;
  ResidentParams params;
};

}  // namespace zt::test
