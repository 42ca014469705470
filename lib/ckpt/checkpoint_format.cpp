#include "ckpt/checkpoint_format.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/crc32c.hpp"
#include "core/error.hpp"
#include "core/quoted_bytes.hpp"

namespace zt {

using json = nlohmann::json;

std::string_view zerotrain_version() { return ZT_VERSION; }

std::string_view state_tensor_name(StateTensor t) {
  constexpr std::string_view kNames[] = {"master", "exp_avg", "exp_avg_sq"};  // in kStateTensors' order
  return kNames[size_t(t)];
}

std::string step_dir_name(int64_t step) { return fmt::format("step_{:08d}", step); }

std::string shard_file_name(int rank, int world_size) {
  return fmt::format("shard-{:05d}-of-{:05d}.safetensors", rank, world_size);
}

int64_t step_of_dir_name(std::string_view name) {
  constexpr std::string_view prefix = "step_";
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return -1;
  const std::string_view digits = name.substr(prefix.size());
  int64_t step = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size() || step < 0) return -1;
  return step;
}

namespace {

constexpr std::string_view kMetaChecksumKey = "\"meta_crc32c\"";

// A JSON value from the file, as a message shows it: ASCII, cut short.
std::string json_excerpt(const json& v) { return quoted_bytes(v.dump(-1, ' ', true)); }

nlohmann::ordered_json layout_json(const ParamLayout& layout) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (auto& g : layout.groups) {
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (auto& t : g.tensors) {
      tensors.push_back({{"name", t.name}, {"offset", t.offset}, {"shape", t.shape}});
      if (!t.trainable) tensors.back()["trainable"] = false;  // (absent: trainable, as before freezing existed)
    }
    groups.push_back({{"name", g.name}, {"offset", g.offset}, {"size", g.size}, {"tensors", tensors}});
  }
  return {{"total", layout.total}, {"groups", groups}};
}

// Reads values out of meta.json, naming the file and the key path in every error.
class Fields {
public:
  Fields(const json& j, std::string path, std::string where = "")
      : j_(j), path_(std::move(path)), where_(std::move(where)) {
    if (!j_.is_object()) fail("{}: {} is not an object", path_, where_.empty() ? "the file" : where_);
  }
  bool has(const char* key) const { return j_.contains(key); }
  const json& at(const char* key) const {
    if (!j_.contains(key)) fail("{}: missing key \"{}\"", path_, name(key));
    return j_.at(key);
  }
  template <typename T>
  T get(const char* key) const {
    const json& v = at(key);
    try {
      return v.get<T>();
    } catch (const json::exception&) {
      fail("{}: \"{}\" has the value {}, of the wrong type", path_, name(key), json_excerpt(v));
    }
  }
  Fields object(const char* key) const { return Fields(at(key), path_, name(key)); }
  const json& array(const char* key) const {
    const json& v = at(key);
    if (!v.is_array()) fail("{}: \"{}\" is not an array", path_, name(key));
    return v;
  }
  std::string name(std::string_view key) const {
    return where_.empty() ? std::string(key) : where_ + "." + std::string(key);
  }
  const std::string& path() const { return path_; }

private:
  const json& j_;
  std::string path_, where_;
};

ParamLayout layout_from(const Fields& f) {
  ParamLayout layout;
  layout.total = f.get<size_t>("total");
  const json& groups = f.array("groups");
  for (size_t i = 0; i < groups.size(); ++i) {
    Fields g(groups[i], f.path(), f.name(fmt::format("groups[{}]", i)));
    ParamGroup group{g.get<std::string>("name"), g.get<size_t>("offset"), g.get<size_t>("size"), {}};
    const json& tensors = g.array("tensors");
    for (size_t k = 0; k < tensors.size(); ++k) {
      Fields t(tensors[k], f.path(), g.name(fmt::format("tensors[{}]", k)));
      TensorSpec spec;
      spec.name = t.get<std::string>("name");
      spec.offset = t.get<size_t>("offset");
      spec.shape = t.get<std::vector<size_t>>("shape");
      spec.weight_decay = spec.shape.size() >= 2;
      spec.trainable = !t.has("trainable") || t.get<bool>("trainable");
      group.tensors.push_back(std::move(spec));
    }
    layout.groups.push_back(std::move(group));
  }
  return layout;
}

uint32_t crc_from_hex(const Fields& f, const char* key) {
  const std::string text = f.get<std::string>(key);
  uint32_t crc = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), crc, 16);
  if (text.size() != 8 || ec != std::errc() || end != text.data() + text.size())
    fail("{}: \"{}\" is {} (expected 8 hexadecimal digits)", f.path(), f.name(key), quoted_bytes(text));
  return crc;
}

void check_shards_cover(const CheckpointMeta& m, const std::string& path) {
  if (m.shards.size() != size_t(m.world_size))
    fail("{}: {} shard(s) listed for world_size {}", path, m.shards.size(), m.world_size);
  uint64_t next = 0;
  for (size_t r = 0; r < m.shards.size(); ++r) {
    const ShardRecord& s = m.shards[r];
    if (s.rank != int(r) || s.range.begin != next || s.range.end < s.range.begin)
      fail("{}: shards[{}] (rank {}, elements [{}, {})) does not continue the shards before it (expected rank {} "
           "from element {})",
           path, r, s.rank, s.range.begin, s.range.end, r, next);
    next = s.range.end;
  }
  if (next != m.flat_params)
    fail("{}: the shards cover elements [0, {}) but flat_params is {}", path, next, m.flat_params);
}

// The format version, refused unless this build reads it.
int readable_format_version(const json& j, const std::string& path) {
  const int version = Fields(j, path).get<int>("format_version");
  if (version < kOldestReadableFormatVersion || version > kCheckpointFormatVersion)
    fail("{}: format_version {} is not known to this zerotrain (it reads versions {} to {}; written by zerotrain {})",
         path, version, kOldestReadableFormatVersion, kCheckpointFormatVersion,
         j.contains("zerotrain_version") ? json_excerpt(j["zerotrain_version"]) : "of unknown version");
  return version;
}

// meta.json's own checksum: the CRC32C of its bytes before the key "meta_crc32c", its last member.
void check_meta_checksum(const json& j, std::string_view text, const std::string& path) {
  const uint32_t recorded = crc_from_hex(Fields(j, path), "meta_crc32c");
  const size_t at = text.rfind(kMetaChecksumKey);
  const uint32_t found = crc32c(text.data(), at == std::string_view::npos ? text.size() : at);
  if (found != recorded)
    fail("{}: checksum mismatch: CRC32C {:08x} of the bytes before \"meta_crc32c\", which records {:08x} (the file "
         "was damaged or edited)",
         path, found, recorded);
}

// meta.json's model block. Checkpoints written before it recorded the architecture hold the
// sizes alone: the config's model block then has it, or, older still, the model is GPT-2.
json model_block(const Fields& f, const json& meta) {
  Fields model = f.object("model");
  for (const char* key : {"n_layer", "n_head", "d_model", "vocab_size", "max_seq_len"}) model.get<int>(key);
  json block = f.at("model");
  if (block.contains("model_type")) {
    model.get<std::string>("model_type");
    return block;
  }
  const json::json_pointer config_model("/config/model");
  if (meta.contains(config_model) && meta.at(config_model).is_object() && meta.at(config_model).contains("model_type"))
    return meta.at(config_model);
  block["model_type"] = "gpt2";
  return block;
}

}  // namespace

uint32_t layout_crc32c(const ParamLayout& layout) {
  const std::string text = layout_json(layout).dump();
  return crc32c(text.data(), text.size());
}

std::string meta_file_text(const CheckpointMeta& meta) {
  std::string text = meta_to_json(meta).dump(1);  // "{\n ...\n}"
  text.resize(text.size() - 2);                   // the closing "\n}"
  text += ",\n ";
  const uint32_t crc = crc32c(text.data(), text.size());
  return text + fmt::format("{}: \"{:08x}\"\n}}\n", kMetaChecksumKey, crc);
}

nlohmann::ordered_json meta_to_json(const CheckpointMeta& m) {
  using ordered = nlohmann::ordered_json;
  ordered shards = ordered::array();
  for (auto& s : m.shards)
    shards.push_back({{"rank", s.rank},
                      {"file", s.file},
                      {"begin", s.range.begin},
                      {"end", s.range.end},
                      {"bytes", s.bytes},
                      {"crc32c", fmt::format("{:08x}", s.crc32c)}});
  const ScalerRecord& ls = m.loss_scaler;
  return {{"format", "zerotrain checkpoint"},
          {"format_version", m.format_version},
          {"zerotrain_version", m.zerotrain_version},
          {"step", m.step},
          {"world_size", m.world_size},
          {"stage", m.stage},
          {"dtype", m.dtype},
          {"flat_params", m.flat_params},
          {"padded_params", m.padded_params},
          {"model", ordered(m.model)},
          {"shards", shards},
          {"optimizer", {{"steps", m.optimizer_steps}}},
          {"schedule", {{"optimizer_steps", m.optimizer_steps}, {"next_lr", m.next_lr}}},
          {"loss_scaler",
           {{"scale", ls.scale},
            {"hysteresis_left", ls.hysteresis_left},
            {"iteration", ls.iteration},
            {"last_overflow_iteration", ls.last_overflow_iteration}}},
          {"data", ordered(m.data)},
          {"rng", ordered(m.rng)},
          {"layout", layout_json(m.layout)},
          {"config", ordered(m.config)}};
}

CheckpointMeta meta_from_json(const json& j, const std::string& path) {
  Fields f(j, path);
  CheckpointMeta m;
  m.format_version = readable_format_version(j, path);
  m.zerotrain_version = f.get<std::string>("zerotrain_version");
  m.step = f.get<int64_t>("step");
  m.world_size = f.get<int>("world_size");
  if (m.world_size < 1) fail("{}: world_size {} (expected at least 1)", path, m.world_size);
  m.stage = f.get<int>("stage");
  m.dtype = f.get<std::string>("dtype");
  m.flat_params = f.get<uint64_t>("flat_params");
  m.padded_params = f.get<uint64_t>("padded_params");
  m.model = model_block(f, j);
  const json& shards = f.array("shards");
  for (size_t i = 0; i < shards.size(); ++i) {
    Fields s(shards[i], path, fmt::format("shards[{}]", i));
    ShardRecord r;
    r.rank = s.get<int>("rank");
    r.file = s.get<std::string>("file");
    if (r.file.empty() || r.file.find('/') != std::string::npos || r.file == "." || r.file == "..")
      fail("{}: shards[{}].file {} is not a file name inside the checkpoint", path, i, quoted_bytes(r.file));
    r.range = {s.get<uint64_t>("begin"), s.get<uint64_t>("end")};
    r.bytes = s.get<uint64_t>("bytes");
    r.crc32c = crc_from_hex(s, "crc32c");
    m.shards.push_back(std::move(r));
  }
  check_shards_cover(m, path);
  m.optimizer_steps = f.object("optimizer").get<int64_t>("steps");
  m.next_lr = f.object("schedule").get<double>("next_lr");
  Fields ls = f.object("loss_scaler");
  m.loss_scaler = {ls.get<float>("scale"), ls.get<int>("hysteresis_left"), ls.get<int64_t>("iteration"),
                   ls.get<int64_t>("last_overflow_iteration")};
  m.data = f.at("data");
  m.rng = f.at("rng");
  m.layout = layout_from(f.object("layout"));
  if (m.layout.trainable_numel() != m.flat_params)
    fail("{}: the layout's trainable tensors hold {} elements, flat_params is {}", path, m.layout.trainable_numel(),
         m.flat_params);
  m.config = f.at("config");
  return m;
}

CheckpointMeta read_meta(const std::string& step_dir) {
  const std::string path = (std::filesystem::path(step_dir) / kMetaFile).string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path))
      fail("{}: missing: {} is not a complete checkpoint (meta.json is written last)", path, step_dir);
    fail("{}: cannot open: {}", path, std::strerror(errno));
  }
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  if (in.bad()) fail("{}: read failed: {}", path, std::strerror(errno));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    fail("{}: not valid JSON at byte {}: {}", path, e.byte, json_error_near(e.what(), text, e.byte));
  }
  if (readable_format_version(j, path) >= 2) check_meta_checksum(j, text, path);
  return meta_from_json(j, path);
}

}  // namespace zt
