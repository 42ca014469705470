#include "hf/hf_weights.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "hf/hf_dir.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

// The names a tensor may have in a checkpoint: its own, and GPT2LMHeadModel's "transformer." one.
std::vector<std::string> names_of(const std::string& name) { return {name, "transformer." + name}; }

// model.safetensors.index.json: {"metadata": {...}, "weight_map": {tensor: file}}.
std::map<std::string, std::string> read_weight_map(const fs::path& index) {
  std::ifstream in(index);
  if (!in) fail("{}: cannot be read", index.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", index.string(), e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j.at("weight_map").is_object())
    fail("{}: holds no \"weight_map\" object (expected {{\"weight_map\": {{tensor name: shard file}}}})",
         index.string());
  std::map<std::string, std::string> map;
  for (const auto& [name, file] : j.at("weight_map").items()) {
    // A shard is a file of the directory: a path elsewhere would read what the model does not own.
    if (!file.is_string() || file.get<std::string>().empty() ||
        file.get<std::string>().find('/') != std::string::npos || file == "." || file == "..")
      fail("{}: weight_map.{}: {} is not a file name of the directory", index.string(), name, file.dump());
    map[name] = file.get<std::string>();
  }
  return map;
}

}  // namespace

HfWeights::HfWeights(const std::string& path, std::vector<HfTensor> tensors) : tensors_(std::move(tensors)) {
  std::sort(tensors_.begin(), tensors_.end(), [](const HfTensor& a, const HfTensor& b) { return a.offset < b.offset; });
  for (const HfTensor& t : tensors_) numel_ = std::max(numel_, t.offset + numel_of(t.shape) + t.padding);
  open(path);
}

HfWeights::~HfWeights() = default;

void HfWeights::open(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("{}: no such file or directory", path);
  std::map<std::string, std::string> weight_map;  // empty: one file holds every tensor
  std::string index;
  std::string single = path;
  if (fs::is_directory(path, ec)) {
    single = hf_file(path, kHfWeightsFile);
    index = hf_file(path, kHfIndexFile);
    if (fs::exists(single, ec)) {
      index.clear();  // transformers reads model.safetensors first, too
    } else if (fs::exists(index, ec)) {
      weight_map = read_weight_map(index);
    } else {
      fail("{}: holds neither {} nor {} (expected the safetensors weights of a Hugging Face model; "
           "pytorch_model.bin is not read)",
           path, kHfWeightsFile, kHfIndexFile);
    }
  }
  std::map<std::string, const SafetensorsReader*> opened;
  auto reader = [&](const std::string& file) {
    auto it = opened.find(file);
    if (it != opened.end()) return it->second;
    readers_.push_back(std::make_unique<SafetensorsReader>(file));
    file_names_.push_back(file);
    return opened[file] = readers_.back().get();
  };
  for (const HfTensor& t : tensors_) {
    const std::vector<uint64_t> expected(t.shape.begin(), t.shape.end());
    Source src;
    if (index.empty()) {
      src.file = reader(single);
      for (const std::string& n : names_of(t.name))
        if (!src.entry) src.entry = src.file->find(n);
      if (!src.entry) fail("{}: tensor {} is missing (expected shape {})", single, t.name, shape_text(expected));
    } else {
      std::string name, shard;
      for (const std::string& n : names_of(t.name))
        if (name.empty() && weight_map.count(n)) name = n, shard = weight_map.at(n);
      if (name.empty())
        fail("{}: tensor {} is missing from weight_map (expected shape {})", index, t.name, shape_text(expected));
      src.file = reader((fs::path(path) / shard).string());
      src.entry = src.file->find(name);
      if (!src.entry)
        fail("{}: tensor {} is not in this file, where {} places it", src.file->path(), name, kHfIndexFile);
    }
    const SafetensorsEntry& e = *src.entry;
    if (e.shape != expected)
      fail("{}: tensor {} has shape {}, expected {}", src.file->path(), e.name, shape_text(e.shape),
           shape_text(expected));
    if (e.dtype != "F32" && e.dtype != "BF16" && e.dtype != "F16")
      fail("{}: tensor {} has dtype {}, which is not read (expected F32, BF16 or F16)", src.file->path(), e.name,
           e.dtype);
    sources_.push_back(src);
  }
}

void HfWeights::read(float* dst, size_t begin, size_t count) const {
  const size_t end = begin + count;
  std::fill(dst, dst + count, 0.0f);  // padded vocabulary rows, and anything past the tensors
  // The first tensor that ends after `begin`.
  auto it = std::upper_bound(tensors_.begin(), tensors_.end(), begin, [](size_t b, const HfTensor& t) {
    return b < t.offset + numel_of(t.shape) + t.padding;
  });
  for (; it != tensors_.end() && it->offset < end; ++it) {
    const HfTensor& t = *it;
    const Source& src = sources_[size_t(it - tensors_.begin())];
    const size_t real_end = t.offset + numel_of(t.shape);
    const size_t from = std::max(begin, t.offset), to = std::min(end, real_end);
    if (from >= to) continue;  // only padding rows of this tensor are asked for
    float* out = dst + (from - begin);
    src.file->read_f32(*src.entry, from - t.offset, to - from, out);
    bytes_read_ += (to - from) * safetensors_dtype_size(src.entry->dtype);
    // A non-finite weight would make every step's gradient non-finite and every step skipped.
    for (size_t i = 0; i < to - from; ++i)
      if (!std::isfinite(out[i]))
        fail("{}: tensor {} element {} is {} (expected finite weights)", src.file->path(), src.entry->name,
             from - t.offset + i, out[i]);
  }
}

std::string HfWeights::describe() const {
  uint64_t bytes = 0;
  std::map<std::string, int> dtypes;
  for (const Source& s : sources_) {
    bytes += s.entry->end - s.entry->begin;
    dtypes[s.entry->dtype]++;
  }
  std::string kinds;
  for (const auto& [d, n] : dtypes) kinds += (kinds.empty() ? "" : "+") + d;
  return fmt::format("{} safetensors file{}, {:.3g} MB of {}", file_names_.size(), file_names_.size() == 1 ? "" : "s",
                     double(bytes) / 1e6, kinds);
}

}  // namespace zt
