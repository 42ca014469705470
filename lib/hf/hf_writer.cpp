#include "hf/hf_writer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "ckpt/safetensors_writer.hpp"
#include "ckpt/staged_directory.hpp"
#include "ckpt/synced_file.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"
#include "hf/hf_config.hpp"
#include "hf/hf_dir.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

// Every value fits fp16 (finite values from 65520 on round to infinity).
void check_f16_range(const std::string& name, const float* w, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(w[i]) && std::abs(w[i]) >= 65520.0f)
      fail("tensor {} element {} is {}, beyond fp16's range (largest 65504): save it as bf16 or fp32", name, i, w[i]);
}

}  // namespace

uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  std::string unit = text.substr(digits);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  struct Unit {
    const char* name;
    double bytes;
  };
  constexpr Unit kUnits[] = {{"", 1},          {"B", 1},          {"KB", 1e3},          {"MB", 1e6},
                             {"GB", 1e9},      {"TB", 1e12},      {"KIB", 1024.0},      {"MIB", 1048576.0},
                             {"GIB", 1073741824.0}, {"TIB", 1099511627776.0}};
  double number = 0;
  bool parsed = digits > 0;
  try {
    size_t used = 0;
    if (parsed) number = std::stod(text.substr(0, digits), &used);
    parsed = parsed && used == digits;
  } catch (const std::exception&) {
    parsed = false;
  }
  for (const Unit& u : kUnits)
    if (parsed && unit == u.name && number * u.bytes >= 1 && number * u.bytes < 1.8e19)
      return uint64_t(number * u.bytes);
  fail("{}: \"{}\" is not a size (expected a positive number of bytes, or one with a unit: 5GB, 500MB, 2GiB)", what,
       text);
}

HfModelWriter::HfModelWriter(std::string out_dir, const ParamLayout& layout, const GptShape& shape, HfOutput output)
    : dir_(std::move(out_dir)), shape_(shape), output_(std::move(output)) {
  tensors_ = hf_tensors(shape_);
  const std::string_view type = kModelTypeNames.name(shape_.model_type);
  // The layout is the one the names table describes: a checkpoint whose meta.json pairs another
  // model with its layout is not exported under wrong names.
  size_t in_layout = 0;
  for (auto& g : layout.groups) in_layout += g.tensors.size();
  for (const HfTensor& t : tensors_) {
    const TensorSpec* spec = layout.find(t.name);
    if (!spec || spec->offset != t.offset || spec->numel() != numel_of(t.shape) + t.padding)
      fail("{}: the parameter layout does not hold tensor {} where a {} model of these model keys has it", dir_,
           t.name, type);
  }
  if (in_layout != tensors_.size())
    fail("{}: the parameter layout holds {} tensors, a {} model of these model keys {}", dir_, in_layout, type,
         tensors_.size());
  if (output_.max_shard_bytes == 0) fail("{}: a shard size limit of 0 bytes", dir_);

  // transformers' rule: tensors in order, a new file when the next one would pass the limit (a
  // tensor larger than the limit has a file of its own).
  std::vector<std::vector<SafetensorsSpec>> shards(1);
  uint64_t in_shard = 0;
  for (const HfTensor& t : tensors_) {
    SafetensorsSpec spec{t.name, output_.dtype, std::vector<uint64_t>(t.shape.begin(), t.shape.end())};
    if (!shards.back().empty() && in_shard + spec.bytes() > output_.max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    in_shard += spec.bytes();
    total_bytes_ += spec.bytes();
    file_of_.push_back(shards.size() - 1);
    shards.back().push_back(std::move(spec));
  }
  const nlohmann::ordered_json& source = output_.model_config;
  if (source.is_object() && source.value("model_type", std::string()) != type)
    spdlog::info("{}: describes another model_type than {}; config.json is written from the model keys alone",
                 hf_file(output_.model_dir, kHfConfigFile), type);
  config_json_ = hf_config_json(shape_, output_.dtype, source);

  staged_ = std::make_unique<StagedDirectory>(dir_);
  for (size_t i = 0; i < shards.size(); ++i) {
    file_names_.push_back(shards.size() == 1 ? std::string(kHfWeightsFile)
                                             : hf_shard_file_name(int(i) + 1, int(shards.size())));
    const std::string path = hf_file(staged_->staging(), file_names_.back());
    files_.push_back(std::make_unique<SafetensorsFileWriter>(
        path, SafetensorsPlan(std::move(shards[i]), {{"format", "pt"}}, path)));
  }
}

HfModelWriter::~HfModelWriter() = default;

void HfModelWriter::write_group(const ParamGroup& g, const float* values) {
  for (const TensorSpec& spec : g.tensors) {
    const auto it =
        std::find_if(tensors_.begin(), tensors_.end(), [&](const HfTensor& t) { return t.name == spec.name; });
    if (it == tensors_.end()) fail("{}: tensor {} is not one of the model's", dir_, spec.name);
    SafetensorsFileWriter& file = *files_[file_of_[size_t(it - tensors_.begin())]];
    const float* w = values + (spec.offset - g.offset);
    const size_t n = numel_of(it->shape);  // the padded vocabulary's rows are the last: a prefix
    if (output_.dtype == DType::F32) {
      file.write(spec.name, w);
      continue;
    }
    if (output_.dtype == DType::F16) check_f16_range(spec.name, w, n);
    converted_.resize(n);
    from_f32(output_.dtype, w, converted_.data(), n);
    file.write(spec.name, converted_.data());
  }
}

void HfModelWriter::commit() {
  for (auto& f : files_) f->commit();
  if (files_.size() > 1) {
    nlohmann::json weight_map = nlohmann::json::object();  // sorted by name, as transformers writes it
    for (size_t i = 0; i < tensors_.size(); ++i) weight_map[tensors_[i].name] = file_names_[file_of_[i]];
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total_bytes_}}}, {"weight_map", weight_map}};
    write_file_durably(hf_file(staged_->staging(), kHfIndexFile), index.dump(2) + "\n");
  }
  copy_source_files();
  write_file_durably(hf_file(staged_->staging(), kHfConfigFile), config_json_.dump(2) + "\n");
  // Weight files of an earlier save that this one does not write go (transformers reads
  // model.safetensors before an index), and an adapter's; everything else in the directory stays.
  std::vector<std::string> stale;
  staged_->install(
      [&](const std::string& name) {
        const bool weights = is_hf_weights_file(name) || is_peft_adapter_file(name);
        if (weights) stale.push_back(name);
        return !weights;
      },
      std::string(kHfConfigFile));
  std::sort(stale.begin(), stale.end());
  if (!stale.empty())
    spdlog::info("{}: removed {} weight or adapter file(s) of an earlier save ({}{})", dir_, stale.size(),
                 stale.front(), stale.size() > 1 ? ", ..." : "");
}

void HfModelWriter::copy_source_files() const {
  if (output_.tokenizer_dir.empty()) return;
  std::error_code ec;
  if (fs::equivalent(output_.tokenizer_dir, dir_, ec)) return;
  for (const std::string& name : hf_tokenizer_files()) {
    const fs::path from = fs::path(output_.tokenizer_dir) / name;
    if (!fs::is_regular_file(from, ec)) continue;
    write_file_durably(hf_file(staged_->staging(), name), read_text_file(from.string()));
  }
}

}  // namespace zt
