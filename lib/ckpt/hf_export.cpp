#include "ckpt/hf_export.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_reader.hpp"
#include "ckpt/checkpoint_writer.hpp"
#include "ckpt/synced_file.hpp"
#include "ckpt/hf_config_writer.hpp"
#include "ckpt/safetensors.hpp"
#include "comm/control_channel.hpp"
#include "config/model_block.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";
constexpr const char* kConfigFile = "config.json";

uint64_t numel(const std::vector<size_t>& shape) {
  uint64_t n = 1;
  for (size_t d : shape) n *= d;
  return n;
}

// model-00001-of-00003.safetensors and the like, of any count.
bool is_shard_file_name(const std::string& name) {
  constexpr std::string_view suffix = ".safetensors";
  return name.rfind(kHfShardPrefix, 0) == 0 && name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         name.find("-of-") != std::string::npos;
}

std::string read_whole_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("{}: cannot read: {}", path.string(), std::strerror(errno));
  return text.str();
}

// The source directory's config.json, when it describes the same family; else null.
nlohmann::ordered_json source_config(const std::string& source_dir, const std::string& model_type) {
  if (source_dir.empty()) return nullptr;
  const fs::path path = fs::path(source_dir) / kConfigFile;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return nullptr;
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(read_whole_file(path));
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: not valid JSON at byte {}: {}", path.string(), e.byte, e.what());
  }
  if (!j.is_object() || j.value("model_type", std::string()) != model_type) {
    spdlog::info("{}: describes another model_type than {}; config.json is written from the model keys alone",
                 path.string(), model_type);
    return nullptr;
  }
  return j;
}

// Every value fits fp16 (finite values from 65520 on round to infinity).
void check_f16_range(const std::string& name, const float* w, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(w[i]) && std::abs(w[i]) >= 65520.0f)
      fail("tensor {} element {} is {}, beyond fp16's range (largest 65504): save it as bf16 or fp32", name, i, w[i]);
}

}  // namespace

const std::vector<std::string>& hf_tokenizer_files() {
  static const std::vector<std::string> files = {
      "tokenizer.json",     "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
      "vocab.json",         "merges.txt",            "tokenizer.model",         "vocab.txt",
      "chat_template.jinja", "chat_template.json",   "generation_config.json"};
  return files;
}

std::vector<std::string> hf_directory_files() {
  std::vector<std::string> names = {kSingleFile, kIndexFile, kConfigFile};
  for (const auto& f : hf_tokenizer_files()) names.push_back(f);
  const size_t n = names.size();
  for (size_t i = 0; i < n; ++i) names.push_back(names[i] + ".tmp");
  return names;
}

std::string hf_shard_file_name(int shard, int shards) {
  return fmt::format("{}{:05d}-of-{:05d}.safetensors", kHfShardPrefix, shard, shards);
}

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

std::string hf_source_directory(const nlohmann::json& resolved_config) {
  for (const char* pointer : {"/model/path", "/training/init_from"}) {
    const nlohmann::json::json_pointer p(pointer);
    if (!resolved_config.contains(p) || !resolved_config.at(p).is_string()) continue;
    const std::string dir = resolved_config.at(p).get<std::string>();
    std::error_code ec;
    if (!dir.empty() && fs::is_regular_file(fs::path(dir) / kConfigFile, ec)) return dir;
  }
  return "";
}

HfModelWriter::HfModelWriter(std::string out_dir, const ParamLayout& layout, const config::ModelConfig& model,
                             HfOutput output)
    : dir_(std::move(out_dir)), model_(model), output_(std::move(output)) {
  tensors_ = hf_tensors(config::shape_of(model_));
  // The layout is the one the names table describes: a checkpoint whose meta.json pairs another
  // model with its layout is not exported under wrong names.
  size_t in_layout = 0;
  for (auto& g : layout.groups) in_layout += g.tensors.size();
  for (const HfTensor& t : tensors_) {
    const TensorSpec* spec = layout.find(t.name);
    if (!spec || spec->offset != t.offset || spec->numel() != numel(t.shape) + t.padding)
      fail("{}: the parameter layout does not hold tensor {} where a {} model of these model keys has it", dir_,
           t.name, model_.model_type);
  }
  if (in_layout != tensors_.size())
    fail("{}: the parameter layout holds {} tensors, a {} model of these model keys {}", dir_, in_layout,
         model_.model_type, tensors_.size());
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
  config_json_ = hf_config_json(model_, output_.dtype, source_config(output_.source_dir, model_.model_type));

  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) fail("{}: cannot create directory: {}", dir_, ec.message());
  for (size_t i = 0; i < shards.size(); ++i) {
    file_names_.push_back(shards.size() == 1 ? kSingleFile : hf_shard_file_name(int(i) + 1, int(shards.size())));
    const std::string path = (fs::path(dir_) / file_names_.back()).string();
    files_.push_back(std::make_unique<SafetensorsFileWriter>(
        path, SafetensorsPlan(std::move(shards[i]), {{"format", "pt"}}, path)));
  }
}

HfModelWriter::~HfModelWriter() = default;

void HfModelWriter::write_group(const ParamGroup& g, const float* values) {
  for (const TensorSpec& spec : g.tensors) {
    const auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const HfTensor& t) { return t.name == spec.name; });
    if (it == tensors_.end()) fail("{}: tensor {} is not one of the model's", dir_, spec.name);
    SafetensorsFileWriter& file = *files_[file_of_[size_t(it - tensors_.begin())]];
    const float* w = values + (spec.offset - g.offset);
    const size_t n = numel(it->shape);  // the padded vocabulary's rows are the last: a prefix
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
    write_file_durably((fs::path(dir_) / kIndexFile).string(), index.dump(2) + "\n");
  }
  remove_stale_weight_files();
  copy_source_files();
  write_file_durably((fs::path(dir_) / kConfigFile).string(), config_json_.dump(2) + "\n");
}

void HfModelWriter::remove_stale_weight_files() const {
  std::vector<std::string> stale;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    const bool ours = std::find(file_names_.begin(), file_names_.end(), name) != file_names_.end();
    const bool weights = name == kSingleFile || name == kIndexFile || is_shard_file_name(name);
    const bool index_in_use = name == kIndexFile && files_.size() > 1;
    if (weights && !ours && !index_in_use) stale.push_back(name);
  }
  if (ec) fail("{}: cannot list the directory: {}", dir_, ec.message());
  std::sort(stale.begin(), stale.end());
  for (const auto& name : stale) {
    fs::remove(fs::path(dir_) / name, ec);
    if (ec) fail("{}: cannot remove {} of an earlier save: {}", dir_, name, ec.message());
  }
  if (!stale.empty())
    spdlog::info("{}: removed {} weight file(s) of an earlier save ({}{})", dir_, stale.size(), stale.front(),
                 stale.size() > 1 ? ", ..." : "");
}

void HfModelWriter::copy_source_files() const {
  if (output_.source_dir.empty()) return;
  std::error_code ec;
  if (fs::equivalent(output_.source_dir, dir_, ec)) return;
  for (const std::string& name : hf_tokenizer_files()) {
    const fs::path from = fs::path(output_.source_dir) / name;
    if (!fs::is_regular_file(from, ec)) continue;
    write_file_durably((fs::path(dir_) / name).string(), read_whole_file(from));
  }
}

void export_checkpoint(const std::string& checkpoint, const std::string& out_dir, const HfOutput& output) {
  const CheckpointReader ckpt(resolve_checkpoint(checkpoint));
  const CheckpointMeta& meta = ckpt.meta();
  const std::string meta_path = (fs::path(ckpt.dir()) / kMetaFile).string();
  const config::ModelConfig model = config::read_model_block(meta.model, meta_path);
  HfOutput out_options = output;
  if (out_options.source_dir.empty()) out_options.source_dir = hf_source_directory(meta.config);
  HfModelWriter out(out_dir, meta.layout, model, out_options);  // the output can be written: before the long reads
  for (size_t i = 0; i < meta.shards.size(); ++i) ckpt.verify(i);
  size_t largest = 0;
  for (auto& g : meta.layout.groups) largest = std::max(largest, g.size);
  Buffer<float> values(MemCategory::Buffers, largest, Init::Uninitialised);
  for (auto& g : meta.layout.groups) {
    ckpt.read(StateTensor::Master, {g.offset, g.offset + g.size}, values.data());
    out.write_group(g, values.data());
  }
  out.commit();
}

void save_gathered_weights(const std::string& out_dir, const ParamLayout& layout, const config::ModelConfig& model,
                           const HfOutput& output, Communicator& comm, Device& device, const StateAccess& state,
                           const std::vector<Range>& pieces) {
  const int rank = comm.rank();
  size_t largest = 0;
  for (auto& g : layout.groups) largest = std::max(largest, g.size);
  Buffer<float> gathered(device, MemSpace::Device, MemCategory::Buffers, largest, Init::Uninitialised);
  Buffer<float> host(MemCategory::Buffers, largest, Init::Uninitialised);
  std::unique_ptr<HfModelWriter> out;
  std::string error;  // rank 0's first failure; it keeps taking part in the gathers
  auto attempt = [&](auto&& what) {
    if (!error.empty()) return;
    try {
      what();
    } catch (const std::exception& e) {
      error = e.what();
    }
  };
  if (rank == 0) attempt([&] { out = std::make_unique<HfModelWriter>(out_dir, layout, model, output); });

  std::vector<size_t> counts(pieces.size());
  for (auto& g : layout.groups) {
    const Range group{g.offset, g.offset + g.size};
    for (size_t r = 0; r < pieces.size(); ++r) counts[r] = pieces[r].intersect(group).size();
    const Range mine = pieces[size_t(rank)].intersect(group);
    size_t before = 0;  // this rank's piece follows the lower ranks' pieces
    for (int r = 0; r < rank; ++r) before += counts[size_t(r)];
    float* place = gathered.data() + before;
    if (!mine.empty()) {
      state.read_state(StateTensor::Master, mine, host.data());
      device.copy(place, host.data(), mine.size() * sizeof(float), device.compute());
      device.synchronize(device.compute());
    }
    comm.all_gather(place, gathered.data(), counts, DType::F32)->wait();
    if (rank != 0) continue;
    device.copy(host.data(), gathered.data(), g.size * sizeof(float), device.compute());
    device.synchronize(device.compute());
    attempt([&] { out->write_group(g, host.data()); });
  }
  if (rank == 0) attempt([&] { out->commit(); });
  if (comm.control().first_failure(!error.empty()) >= 0) {
    out.reset();  // unfinished files are removed
    if (rank == 0) spdlog::error("training.save_final: {}; the partial files were removed", error);
    throw CheckpointFailed();
  }
}

}  // namespace zt
