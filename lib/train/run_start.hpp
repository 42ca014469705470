#pragma once
// Where a run starts: training.resume (a checkpoint's whole state: weights, Adam's moments, the
// step, the schedule position, the loss scaler and the data position) or training.init_from
// (weights only: a Hugging Face model directory, a safetensors file, or a checkpoint).
// Decided on every rank before the engine exists, checked as far as that is possible without it,
// and applied once it exists.
#include <memory>
#include <string>

#include "ckpt/checkpoint_reader.hpp"
#include "hf/hf_weights.hpp"
#include "config/config.hpp"
#include "core/param_layout.hpp"
#include "data/data_sampler.hpp"
#include "train/whole_state.hpp"
#include "zero/engine.hpp"

namespace zt {

class RunStart {
public:
  // Resolves the two keys and, for a checkpoint, reads meta.json, checks that every shard file is
  // there with its recorded size and that the model has the checkpoint's shape. Errors name the
  // key and the file. rank 0 says what was found.
  RunStart(const config::Config& config, const ParamLayout& layout, int rank);
  ~RunStart();

  // The weights of a model directory or safetensors file to initialise the parameters from, their
  // tensors checked (names, shapes, dtypes) and nothing read yet; null when there are none.
  const HfWeights* weights() const { return weights_.get(); }
  // The engine's state (all of it, or its weights) comes from a checkpoint: the initial values of
  // what trains do not matter (frozen parameters still take theirs: a checkpoint does not hold them).
  bool from_checkpoint() const { return checkpoint_ != nullptr; }
  // The checkpoint the run resumes or takes its weights from, or null.
  const CheckpointReader* checkpoint() const { return checkpoint_.get(); }
  // The step directory a resume reads, or "".
  std::string resumed_from() const { return checkpoint_ && !weights_only_ ? checkpoint_->dir() : ""; }

  // Copies the checkpoint's state of this rank's elements into the engine (through `state`: the
  // whole layout's, whatever the expert parallelism), checking the CRC32C of the files it reads. Local: the ranks agree
  // that every read succeeded before apply().
  void read_into(const WholeState& state) const;
  // Collective: the weights read become the parameters everywhere; a resume also restores the
  // counters (optimizer steps, loss scaler) and the data position. Returns the last step done
  // (0 when the run starts fresh).
  int64_t apply(Engine& engine, DataSampler& sampler) const;

private:
  // The step directory to resume from, or "" (training.resume none, or auto with no checkpoint).
  std::string find_resume(const config::TrainingConfig& t, int rank) const;
  // A checkpoint step directory to take the weights from, or "" (weights_ is opened instead).
  std::string find_init(const config::Config& config, int rank);
  void open_checkpoint(const std::string& step_dir, const ParamLayout& layout, const config::Config& config, int rank);

  std::unique_ptr<HfWeights> weights_;
  std::unique_ptr<CheckpointReader> checkpoint_;
  bool weights_only_ = false;  // init_from a checkpoint
  bool same_dtype_ = true;     // the loss scaler's state carries over
  SamplerState saved_data_;
};

}  // namespace zt
