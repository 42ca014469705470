#pragma once
// Writes a Hugging Face model directory of a flat buffer's weights with zerotrain's writer, for the
// tests that need one as input; and reads one back with zerotrain's own safetensors reader, tensor by
// tensor: each tensor of hf_tensors(shape) from the file model.safetensors.index.json names (or
// model.safetensors), converted to fp32 into a flat buffer of the model's layout, padded
// vocabulary rows zero. The directory must hold exactly those tensors, in `dtype` ("F32", "BF16",
// "F16"), each in the shape transformers gives it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/safetensors.hpp"
#include "hf/hf_writer.hpp"
#include "model/gpt_layout.hpp"

namespace zt::test {

// tensor name -> weight file, from the index, or model.safetensors for all.
inline std::map<std::string, std::string> hf_weight_map(const std::string& dir, const GptShape& shape) {
  std::map<std::string, std::string> map;
  const std::filesystem::path index = std::filesystem::path(dir) / "model.safetensors.index.json";
  if (std::filesystem::exists(index)) {
    REQUIRE_FALSE(std::filesystem::exists(std::filesystem::path(dir) / "model.safetensors"));
    std::ifstream in(index);
    const auto j = nlohmann::json::parse(in);
    for (auto& [name, file] : j.at("weight_map").items()) map[name] = file.get<std::string>();
  } else {
    for (const HfTensor& t : hf_tensors(shape)) map[t.name] = "model.safetensors";
  }
  return map;
}

inline std::vector<float> read_hf_weights(const std::string& dir, const GptShape& shape, const std::string& dtype) {
  const std::map<std::string, std::string> map = hf_weight_map(dir, shape);
  std::map<std::string, std::unique_ptr<SafetensorsReader>> files;
  size_t in_files = 0;
  for (auto& [name, file] : map)
    if (!files.count(file)) {
      files[file] = std::make_unique<SafetensorsReader>((std::filesystem::path(dir) / file).string());
      in_files += files[file]->tensors().size();
    }
  const std::vector<HfTensor> tensors = hf_tensors(shape);
  CHECK(in_files == tensors.size());
  CHECK(map.size() == tensors.size());
  std::vector<float> flat(make_gpt_layout(shape).total, 0.0f);
  for (const HfTensor& t : tensors) {
    INFO(dir << ": " << t.name);
    REQUIRE(map.count(t.name));
    const SafetensorsReader& file = *files.at(map.at(t.name));
    const SafetensorsEntry* e = file.find(t.name);
    REQUIRE(e);
    CHECK(e->dtype == dtype);
    REQUIRE(e->shape == std::vector<uint64_t>(t.shape.begin(), t.shape.end()));
    file.read_f32(*e, flat.data() + t.offset);
  }
  return flat;
}

// DIR/config.json and DIR/model.safetensors of `shape` holding `flat` (the layout's fp32 elements).
inline void write_model_dir(const std::string& dir, const GptShape& shape, const float* flat) {
  const ParamLayout layout = make_gpt_layout(shape);
  HfModelWriter out(dir, layout, shape, HfOutput());
  for (const ParamGroup& g : layout.groups) out.write_group(g, flat + g.offset);
  out.commit();
}

}  // namespace zt::test
