#include "start/initial_weights.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/range.hpp"
#include "hf/peft_adapter.hpp"
#include "model/gpt.hpp"

namespace zt {

WeightSources recorded_weight_sources(const config::RecordedRun& run, const ParamLayout& layout) {
  bool frozen_adapter = false;
  for (const ParamGroup& g : layout.groups)
    for (const TensorSpec& t : g.tensors)
      frozen_adapter = frozen_adapter || (!t.trainable && lora_part(t.name) != LoraPart::None);
  return {run.init_from, frozen_adapter ? run.lora_init_from : "", run.seed};
}

InitialWeights::InitialWeights(const GptShape& shape, const TrainedParts& parts, const ParamLayout& layout,
                               const WeightSources& sources, const HfWeights* base)
    : shape_(shape),
      layout_(layout),
      seed_(sources.seed),
      base_key_(sources.base_key),
      base_end_(make_gpt_layout(shape).total),
      base_(base) {
  if (!base_ && !sources.init_from.empty())
    own_base_ = with_key(sources.base_key.c_str(),
                         [&] { return std::make_unique<HfWeights>(sources.init_from, hf_tensors(shape)); });
  if (own_base_) base_ = own_base_.get();
  if (!sources.lora_init_from.empty() && parts.lora.enabled())
    adapters_ = with_key("lora.init_from", [&] {
      const std::string file = check_peft_adapter(sources.lora_init_from, shape, parts.lora);
      return std::make_unique<HfWeights>(file, peft_tensors(shape, layout));
    });
}

InitialWeights::~InitialWeights() = default;

void InitialWeights::read(float* dst, size_t begin, size_t count) const {
  const size_t end = begin + count;
  // The base model's elements, then the adapters' (model/lora.hpp puts them after).
  const Range base = Range{begin, end}.intersect({0, base_end_});
  const Range rest = Range{begin, end}.intersect({base_end_, std::max(base_end_, end)});
  if (!base.empty()) {
    float* out = dst + (base.begin - begin);
    if (base_)
      with_key(base_key_.c_str(), [&] { base_->read(out, base.begin, base.size()); });
    else
      init_gpt_params(shape_, layout_, out, base.begin, base.size(), seed_);
  }
  if (!rest.empty()) {
    float* out = dst + (rest.begin - begin);
    if (adapters_)  // (zeros past the adapters: padding)
      with_key("lora.init_from", [&] { adapters_->read(out, rest.begin, rest.size()); });
    else
      init_gpt_params(shape_, layout_, out, rest.begin, rest.size(), seed_);
  }
}

}  // namespace zt
