#include "ckpt/checkpoint_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "ckpt/shard_file.hpp"
#include "core/error.hpp"
#include "core/quoted_bytes.hpp"

namespace zt {

namespace fs = std::filesystem;

CheckpointReader::CheckpointReader(std::string step_dir)
    : dir_(std::move(step_dir)), meta_(read_meta(dir_)), layout_crc32c_(layout_crc32c(meta_.layout)) {
  for (size_t i = 0; i < meta_.shards.size(); ++i) {
    const ShardRecord& s = meta_.shards[i];
    const std::string path = shard_path(i);
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      fail("{}: missing (the shard of rank {} of {}, elements [{}, {}))", path, s.rank, meta_.world_size,
           s.range.begin, s.range.end);
    const uint64_t size = fs::file_size(path, ec);
    if (ec) fail("{}: cannot read its size: {}", path, ec.message());
    if (size != s.bytes)
      fail("{}: {}: {} bytes, {} records {}", path, size < s.bytes ? "truncated" : "wrong size", size, kMetaFile,
           s.bytes);
  }
  // One header read here catches a meta.json of another step or model on every rank at once;
  // verify() checks the header of each file it reads.
  if (!meta_.shards.empty()) open(0);
}

CheckpointReader::~CheckpointReader() = default;

std::string CheckpointReader::shard_path(size_t shard) const {
  return (fs::path(dir_) / meta_.shards.at(shard).file).string();
}

void CheckpointReader::check_layout(const ParamLayout& layout) const {
  const std::string what = fmt::format("{}: saved from a model of another shape", dir_);
  for (auto& g : layout.groups)
    for (auto& t : g.tensors) {
      const TensorSpec* saved = meta_.layout.find(t.name);
      if (!saved) fail("{}: this model's tensor {} {} is not in the checkpoint", what, t.name, shape_text(t.shape));
      if (saved->shape != t.shape)
        fail("{}: tensor {} is {} in the checkpoint and {} in this model", what, t.name, shape_text(saved->shape),
             shape_text(t.shape));
      if (saved->offset != t.offset)
        fail("{}: tensor {} starts at flat element {} in the checkpoint and {} in this model", what, t.name,
             saved->offset, t.offset);
      if (saved->trainable != t.trainable)
        fail("{}: tensor {} {} in the checkpoint and {} in this run (training.freeze and the lora block decide what "
             "trains: the checkpoint holds the trainable tensors alone)",
             dir_, t.name, saved->trainable ? "trains" : "is frozen", t.trainable ? "trains" : "is frozen");
    }
  for (auto& g : meta_.layout.groups)
    for (auto& t : g.tensors)
      if (!layout.find(t.name))
        fail("{}: the checkpoint's tensor {} {} is not in this model", what, t.name, shape_text(t.shape));
  if (layout.trainable_numel() != meta_.flat_params)
    fail("{}: {} parameters in the checkpoint, {} in this model", what, meta_.flat_params, layout.trainable_numel());
}

std::vector<size_t> CheckpointReader::shards_in(Range r) const {
  std::vector<size_t> found;
  for (size_t i = 0; i < meta_.shards.size(); ++i)
    if (!meta_.shards[i].range.intersect(r).empty()) found.push_back(i);
  return found;
}

void CheckpointReader::verify(size_t shard) const {
  const ShardRecord& s = meta_.shards.at(shard);
  const std::string path = shard_path(shard);
  const ShardWritten found = checksum_file(path);
  if (found.bytes != s.bytes)
    fail("{}: {}: {} bytes, {} records {}", path, found.bytes < s.bytes ? "truncated" : "wrong size", found.bytes,
         kMetaFile, s.bytes);
  if (found.crc32c != s.crc32c)
    fail("{}: checksum mismatch: CRC32C {:08x}, {} records {:08x} (the file is corrupt)", path, found.crc32c,
         kMetaFile, s.crc32c);
  open(shard);
}

const SafetensorsReader& CheckpointReader::open(size_t shard) const {
  auto& slot = open_[shard];
  if (slot) return *slot;
  const ShardRecord& s = meta_.shards.at(shard);
  auto file = std::make_unique<SafetensorsReader>(shard_path(shard));
  auto recorded = [&](const char* key) -> std::optional<std::string> {
    auto it = file->metadata().find(key);
    if (it == file->metadata().end()) return std::nullopt;
    return it->second;
  };
  auto shown = [&](const char* key) {
    const auto value = recorded(key);
    return value ? quoted_bytes(*value) : std::string("(none)");
  };
  const std::string meta_path = (fs::path(dir_) / kMetaFile).string();
  if (recorded("begin") != std::to_string(s.range.begin) || recorded("end") != std::to_string(s.range.end))
    fail("{}: holds elements [{}, {}), {} records [{}, {})", file->path(), shown("begin"), shown("end"), meta_path,
         s.range.begin, s.range.end);
  // From version 2 on, each header also names the step and layout it was written for: a meta.json
  // of another checkpoint (or an edited one whose checksum was recomputed) does not pass.
  if (meta_.format_version >= 2) {
    if (recorded("step") != std::to_string(meta_.step))
      fail("{}: written at step {}, but {} records step {} (meta.json belongs to another checkpoint, or was edited)",
           file->path(), shown("step"), meta_path, meta_.step);
    if (recorded("layout_crc32c") != fmt::format("{:08x}", layout_crc32c_))
      fail("{}: written for a parameter layout of CRC32C {}, but the layout {} records has CRC32C {:08x} (meta.json "
           "belongs to another model, or was edited)",
           file->path(), shown("layout_crc32c"), meta_path, layout_crc32c_);
  }
  for (StateTensor t : kStateTensors) {
    const std::string name(state_tensor_name(t));
    const SafetensorsEntry* e = file->find(name);
    if (!e || e->dtype != "F32" || e->shape != std::vector<uint64_t>{s.range.size()})
      fail("{}: expected tensor \"{}\" of F32 [{}]", file->path(), name, s.range.size());
  }
  slot = std::move(file);
  return *slot;
}

void CheckpointReader::read(StateTensor t, Range r, float* out) const {
  if (r.end > meta_.flat_params)
    fail("{}: elements [{}, {}) requested of {}", dir_, r.begin, r.end, meta_.flat_params);
  for (size_t i : shards_in(r)) {
    const Range range = meta_.shards[i].range;
    const Range piece = range.intersect(r);
    const SafetensorsReader& file = open(i);
    file.read_f32(*file.find(std::string(state_tensor_name(t))), piece.begin - range.begin, piece.size(),
                  out + (piece.begin - r.begin));
  }
}

void load_state(const CheckpointReader& checkpoint, StateAccess& state, bool weights_only, int rank, int world) {
  const Range held = state.held();
  std::set<size_t> to_verify;
  for (size_t i : checkpoint.shards_in(held)) to_verify.insert(i);
  for (size_t i = size_t(rank); i < checkpoint.meta().shards.size(); i += size_t(world)) to_verify.insert(i);
  for (size_t i : to_verify) checkpoint.verify(i);

  constexpr uint64_t kChunk = uint64_t(4) << 20;  // elements per read: 16 MiB of host memory
  std::vector<float> buffer(std::min(kChunk, held.size()));
  for (uint64_t at = held.begin; at < held.end; at += kChunk) {
    const Range chunk{at, std::min(held.end, at + kChunk)};
    for (StateTensor t : kStateTensors) {
      if (weights_only && t != StateTensor::Master) continue;
      checkpoint.read(t, chunk, buffer.data());
      state.write_state(t, chunk, buffer.data());
    }
  }
}

}  // namespace zt
