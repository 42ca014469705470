#pragma once
// A run's weights outside the engine, whole: where they start, and the trained model read back
// from its trained values and those.
//
// Where a run's parameters start, for any flat range of its training layout (model/lora.hpp): a
// model's weights for the base model (training.init_from's directory or file), a PEFT adapter for
// the LoRA adapters (lora.init_from), the seeded initialisation (Gpt::init_params) for the rest.
// The frozen parameters keep these values all run long, so a resume and every reader of what a
// run trained take them from here again: a checkpoint holds the trainable state alone.
//
// The trained model read back whole, group by group, for every reader of what a run trained
// (generate, eval, `zerotrain export`, training.save_final): its trained tensors from the master
// weights (of the trainable space, core/trainable_space.hpp), its frozen ones from where the run
// started, a LoRA run's adapters merged into the blocks they adapt (model/lora.hpp `merge_lora`)
// or kept as adapters. `RunReadBack` is a checkpoint read back as the model its run trained: the
// recorded config (config/recorded_run.hpp), the shape its meta.json records, and the training
// layout they give, checked against the checkpoint's.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/checkpoint_reader.hpp"
#include "config/recorded_run.hpp"
#include "core/param_layout.hpp"
#include "core/range.hpp"
#include "core/trainable_space.hpp"
#include "hf/hf_weights.hpp"
#include "model/lora.hpp"

namespace zt {

struct WeightSources {
  std::string init_from;       // training.init_from: a model directory or safetensors file ("": seeded)
  std::string lora_init_from;  // lora.init_from: a PEFT adapter directory ("": PEFT's initialisation)
  uint64_t seed = 0;           // training.seed
};

// Where the frozen tensors of `layout` came from in the run `run` (what a checkpoint recorded):
// lora.init_from only when an adapter is frozen (a checkpoint holds the trained ones; the directory
// they started from may be gone).
WeightSources recorded_weight_sources(const config::RecordedRun& run, const ParamLayout& layout);

class InitialWeights {
public:
  // Opens the sources (headers only), checking every tensor they must give; errors name the key
  // (training.init_from, lora.init_from) and the file. `base`: training.init_from's weights when
  // the caller opened them already (RunStart), else null to open them here.
  InitialWeights(const GptShape& shape, const TrainedParts& parts, const ParamLayout& layout,
                 const WeightSources& sources, const HfWeights* base = nullptr);
  ~InitialWeights();
  // fp32 values of flat elements [begin, begin + count) (zeros past the layout: padding). A failed
  // read is an error naming the key and the file.
  void read(float* dst, size_t begin, size_t count) const;

private:
  GptShape shape_;
  ParamLayout layout_;
  uint64_t seed_;
  size_t base_end_;  // the base model's elements: [0, base_end_)
  std::unique_ptr<HfWeights> own_base_, adapters_;
  const HfWeights* base_;
};

// What a saved model holds: every tensor under the base model's names (a LoRA run's adapters
// merged into the weights they adapt, as PEFT's merge_and_unload), or a LoRA run's adapters alone.
enum class SavedForm { Model, Adapter };

// A model as it trained: its architecture, what of it trained, and its training layout.
struct TrainedModel {
  GptShape shape;
  TrainedParts parts;
  ParamLayout layout;  // make_training_layout(shape, parts)
};

// Reads the master weights of a range of the trainable space (collective in a running job).
using TrainedReader = std::function<void(Range compact, float* out)>;
// Reads the values of a flat range of the training layout the run started from.
using StartReader = std::function<void(Range flat, float* out)>;

// The groups of a model as `form` saves them. Every rank of a running job calls read_trained for
// every group of order() in that order (the trained values may be gathered); the rank that writes
// then calls assemble.
class ModelGroups {
public:
  // `start`: where the frozen tensors come from; empty when nothing is frozen.
  ModelGroups(const TrainedModel& model, SavedForm form, TrainedReader trained, StartReader start);
  // Over the values of the whole training layout in memory (`flat`, layout.total elements).
  static ModelGroups of_values(const TrainedModel& model, SavedForm form, const float* flat);

  // The groups of the training layout, in the order they are read: a merged model's adapter groups
  // first (kept for the blocks they merge into), then the base groups; an adapter form's adapter
  // groups.
  const std::vector<size_t>& order() const { return order_; }
  void read_trained(size_t g);
  // The values of group g as saved (a block merged with its adapters), true; false for an adapter
  // group a merged model keeps for its block.
  bool assemble(size_t g, std::vector<float>& values);
  // Every group of order() read, assembled and given to `take` when saved.
  void read_all(const std::function<void(size_t g, const std::vector<float>& values)>& take);
  // read_all into the base model's flat values [0, make_gpt_layout(shape).total) (Model form).
  void read_model(float* base_flat);

private:
  Range compact_of(size_t g) const;

  const TrainedModel& model_;
  SavedForm form_;
  size_t base_groups_;  // the base model's groups come first in the training layout
  TrainableSpace space_;
  TrainedReader trained_;
  StartReader start_;
  std::vector<size_t> order_;
  std::vector<float> trained_values_;
  std::map<size_t, std::vector<float>> adapters_;  // a merged model's adapter groups, by group
};

// A checkpoint (a root, the step its `latest` names, or a step directory) read back as the model
// its run trained. Errors name the meta.json: a layout other than the recorded config's (the lora
// block, training.freeze) gives, a source of frozen tensors that is not there.
class RunReadBack {
public:
  explicit RunReadBack(const std::string& checkpoint);

  const CheckpointReader& checkpoint() const { return ckpt_; }
  const config::RecordedRun& run() const { return run_; }
  const TrainedModel& model() const { return model_; }
  // Where the frozen tensors come from (all empty when nothing is frozen).
  const WeightSources& frozen_from() const { return sources_; }
  // Every shard file's CRC32C checked.
  void verify() const;
  // The groups of the model from the checkpoint's master weights and where the run started.
  ModelGroups groups(SavedForm form) const;

private:
  CheckpointReader ckpt_;
  config::RecordedRun run_;
  TrainedModel model_;
  WeightSources sources_;
  std::unique_ptr<InitialWeights> initial_;  // opened when something is frozen
};

}  // namespace zt
