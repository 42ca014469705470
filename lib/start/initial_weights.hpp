#pragma once
// Where a run's parameters start, for any flat range of its training layout (model/lora.hpp): a
// model's weights for the base model (training.init_from's directory or file), a PEFT adapter for
// the LoRA adapters (lora.init_from), the seeded initialisation (Gpt::init_params) for the rest.
// The frozen parameters keep these values all run long, so a resume and an export take them from
// here again: a checkpoint holds the trainable state alone.
#include <cstdint>
#include <memory>
#include <string>

#include "config/recorded_run.hpp"
#include "core/param_layout.hpp"
#include "hf/hf_weights.hpp"
#include "model/lora.hpp"

namespace zt {

struct WeightSources {
  std::string init_from;       // training.init_from: a model directory or safetensors file ("": seeded)
  std::string lora_init_from;  // lora.init_from: a PEFT adapter directory ("": PEFT's initialisation)
  uint64_t seed = 0;           // training.seed
  std::string base_key = "training.init_from";  // the key that errors about init_from's weights name
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
  std::string base_key_;
  size_t base_end_;  // the base model's elements: [0, base_end_)
  std::unique_ptr<HfWeights> own_base_, adapters_;
  const HfWeights* base_;
};

}  // namespace zt
