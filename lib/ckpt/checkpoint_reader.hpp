#pragma once
// Reading a checkpoint at any world size and stage: a rank reads, from the shard files whose
// ranges intersect the elements it holds now, exactly those elements. Nothing is converted.
//
// Opening checks what every rank can check cheaply (meta.json and its checksum, and every shard
// file present with the size meta.json records); verify() reads a whole file, checks its CRC32C
// and that its header records meta.json's range, step and layout; read() takes any flat range of
// one tensor from the files that hold it. Errors (zt::Error) name the file.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/checkpoint_format.hpp"
#include "ckpt/safetensors.hpp"
#include "core/state_access.hpp"

namespace zt {

class CheckpointReader {
public:
  explicit CheckpointReader(std::string step_dir);
  ~CheckpointReader();

  const std::string& dir() const { return dir_; }
  const CheckpointMeta& meta() const { return meta_; }
  std::string shard_path(size_t shard) const;

  // Refuses a model of another shape, naming the first tensor that differs and both shapes.
  void check_layout(const ParamLayout& layout) const;
  // The shards whose ranges intersect r.
  std::vector<size_t> shards_in(Range r) const;
  // Reads the whole file and compares its CRC32C with meta.json's; checks its header.
  void verify(size_t shard) const;
  // Elements r (within [0, flat_params)) of tensor t.
  void read(StateTensor t, Range r, float* out) const;

private:
  const SafetensorsReader& open(size_t shard) const;  // the header checked against meta.json

  std::string dir_;
  CheckpointMeta meta_;
  uint32_t layout_crc32c_ = 0;  // of meta_.layout, as each shard header records it
  mutable std::map<size_t, std::unique_ptr<SafetensorsReader>> open_;
};

// Copies the checkpoint's state of the elements `state` holds into it: master, m and v, or the
// master alone (weights_only). Every file read from is verified first, and so is every file i with
// i % world == rank, so that the ranks together check them all.
void load_state(const CheckpointReader& checkpoint, StateAccess& state, bool weights_only, int rank, int world);

}  // namespace zt
