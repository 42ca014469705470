#include "start/run_weights.hpp"

#include <algorithm>

#include "ckpt/checkpoint_dir.hpp"
#include "config/model_block.hpp"
#include "core/error.hpp"
#include "core/range.hpp"
#include "hf/peft_adapter.hpp"
#include "model/gpt.hpp"
#include "model/gpt_layout.hpp"

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
    : shape_(shape), layout_(layout), seed_(sources.seed), base_end_(make_gpt_layout(shape).total), base_(base) {
  if (!base_ && !sources.init_from.empty())
    own_base_ = with_key("training.init_from",
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
      with_key("training.init_from", [&] { base_->read(out, base.begin, base.size()); });
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

ModelGroups::ModelGroups(const TrainedModel& model, SavedForm form, TrainedReader trained, StartReader start)
    : model_(model),
      form_(form),
      base_groups_(make_gpt_layout(model.shape).groups.size()),
      space_(model.layout),
      trained_(std::move(trained)),
      start_(std::move(start)) {
  std::vector<size_t> adapters, own;
  for (size_t g = base_groups_; g < model.layout.groups.size(); ++g) adapters.push_back(g);
  for (size_t g = 0; g < base_groups_; ++g) own.push_back(g);
  if (form == SavedForm::Adapter)
    order_ = adapters;
  else if (model.parts.lora.enabled())
    order_.insert(order_.end(), adapters.begin(), adapters.end());
  if (form == SavedForm::Model) order_.insert(order_.end(), own.begin(), own.end());
}

ModelGroups ModelGroups::of_values(const TrainedModel& model, SavedForm form, const float* flat) {
  const auto space = std::make_shared<TrainableSpace>(model.layout);
  return ModelGroups(
      model, form,
      [space, flat](Range compact, float* out) {
        for (const TrainableSpace::Run& run : space->in_compact(compact))
          std::copy_n(flat + run.flat, run.size, out + (run.compact - compact.begin));
      },
      [flat](Range r, float* out) { std::copy_n(flat + r.begin, r.size(), out); });
}

Range ModelGroups::compact_of(size_t g) const {
  const ParamGroup& group = model_.layout.groups[g];
  return {space_.compact_at(group.offset), space_.compact_at(group.offset + group.size)};
}

void ModelGroups::read_trained(size_t g) {
  const Range compact = compact_of(g);
  trained_values_.resize(compact.size());
  if (!compact.empty()) trained_(compact, trained_values_.data());
}

bool ModelGroups::assemble(size_t g, std::vector<float>& values) {
  const ParamGroup& group = model_.layout.groups[g];
  const Range flat{group.offset, group.offset + group.size}, compact = compact_of(g);
  values.assign(group.size, 0.0f);
  if (compact.size() != group.size) {
    if (!start_) fail("group {} has frozen tensors and nothing to read them from", group.name);
    start_(flat, values.data());
  }
  for (const TrainableSpace::Run& run : space_.in_flat(flat))
    std::copy_n(trained_values_.data() + (run.compact - compact.begin), run.size,
                values.data() + (run.flat - flat.begin));
  if (form_ == SavedForm::Adapter) return true;
  if (g >= base_groups_) {  // an adapter group, for the block it merges into
    adapters_[g] = values;
    return false;
  }
  for (int l = 0; l < model_.shape.n_layer && model_.parts.lora.enabled(); ++l)
    if (g == size_t(gpt_block_group(l)))
      merge_lora(model_.shape, model_.parts.lora, values.data(),
                 adapters_.at(size_t(lora_group(model_.shape, l))).data());
  return true;
}

void ModelGroups::read_all(const std::function<void(size_t g, const std::vector<float>& values)>& take) {
  std::vector<float> values;
  for (size_t g : order_) {
    read_trained(g);
    if (assemble(g, values)) take(g, values);
  }
}

void ModelGroups::read_model(float* base_flat) {
  read_all([&](size_t g, const std::vector<float>& values) {
    std::copy_n(values.data(), values.size(), base_flat + model_.layout.groups[g].offset);
  });
}

RunReadBack::RunReadBack(const std::string& checkpoint) : ckpt_(resolve_checkpoint(checkpoint)) {
  const CheckpointMeta& meta = ckpt_.meta();
  const std::string meta_path = ckpt_.dir() + "/" + std::string(kMetaFile);
  run_ = config::read_recorded_run(meta.config, meta_path);
  model_ = {config::read_recorded_model(meta.model, meta_path).shape, run_.parts, {}};
  model_.layout = make_training_layout(model_.shape, model_.parts);
  ckpt_.check_layout(model_.layout);
  if (!model_.layout.has_frozen()) return;
  sources_ = recorded_weight_sources(run_, model_.layout);
  initial_ = std::make_unique<InitialWeights>(model_.shape, model_.parts, model_.layout, sources_);
}

void RunReadBack::verify() const {
  for (size_t i = 0; i < ckpt_.meta().shards.size(); ++i) ckpt_.verify(i);
}

ModelGroups RunReadBack::groups(SavedForm form) const {
  StartReader start;
  if (initial_) start = [this](Range r, float* out) { initial_->read(out, r.begin, r.size()); };
  return ModelGroups(
      model_, form, [this](Range r, float* out) { ckpt_.read(StateTensor::Master, r, out); }, start);
}

}  // namespace zt
