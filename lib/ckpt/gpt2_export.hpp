#pragma once
// Consolidated GPT-2 weights under Hugging Face names (docs/architecture.md, "Exported weights"):
// OUT_DIR/model.safetensors + config.json, written group by group so that nothing holds the whole
// model at once. Two sources, one writer, so the same state gives the same bytes: a checkpoint's
// shard files (`zerotrain export`) and the ranks of a running job (training.save_final).
#include <memory>
#include <string>
#include <vector>

#include "ckpt/checkpoint_format.hpp"
#include "comm/communicator.hpp"
#include "core/dtype.hpp"
#include "core/param_layout.hpp"
#include "core/state_access.hpp"

namespace zt {

class SafetensorsFileWriter;

class Gpt2WeightsWriter {
public:
  // dtype F32, or BF16: every fp32 value rounded to nearest even, as the engine rounds the master
  // into the weights a bf16 model computes with. Creates out_dir.
  Gpt2WeightsWriter(std::string out_dir, const ParamLayout& layout, const ModelDims& model, DType dtype);
  ~Gpt2WeightsWriter();
  // values: the fp32 elements [g.offset, g.offset + g.size) of the flat buffer.
  void write_group(const ParamGroup& g, const float* values);
  // model.safetensors complete and renamed into place, then config.json.
  void commit();

private:
  std::string dir_;
  ModelDims model_;
  DType dtype_;
  std::unique_ptr<SafetensorsFileWriter> file_;
  std::vector<uint16_t> converted_;
};

// `zerotrain export`: checkpoint is a checkpoint root (the step its `latest` names) or a step
// directory. Every shard file's CRC32C is checked first.
void export_checkpoint(const std::string& checkpoint, const std::string& out_dir, DType dtype);

// training.save_final, collective over comm: group by group, each rank contributes the master
// weights of its piece (pieces[rank], the pieces of all ranks in rank order covering the flat
// parameters), all-gathered into a device buffer of one group; rank 0 writes. A failed write is
// reported once by rank 0 and thrown as CheckpointFailed on every rank.
void save_gathered_weights(const std::string& out_dir, const ParamLayout& layout, const ModelDims& model,
                           DType dtype, Communicator& comm, Device& device, const StateAccess& state,
                           const std::vector<Range>& pieces);

}  // namespace zt
