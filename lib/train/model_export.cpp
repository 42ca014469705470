#include "train/model_export.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_reader.hpp"
#include "ckpt/checkpoint_writer.hpp"
#include "comm/control_channel.hpp"
#include "config/model_block.hpp"
#include "core/buffer.hpp"
#include "core/trainable_space.hpp"
#include "data/tokenizer_identity.hpp"
#include "hf/hf_config.hpp"
#include "hf/hf_dir.hpp"
#include "hf/peft_adapter.hpp"
#include "inference/model_source.hpp"
#include "inference/model_tokenizer.hpp"
#include "train/output_paths.hpp"
#include "train/tokenizer_shipping.hpp"

namespace zt {

namespace {

// The model directory a run started from and its config.json; `model_path_config` is model.path's
// as the run read it.
void set_source(HfOutput& out, const std::string& model_path, const nlohmann::ordered_json& model_path_config,
                const std::string& init_from) {
  out.model_dir = hf_source_directory(model_path, init_from);
  out.tokenizer_dir = out.model_dir;
  if (out.model_dir.empty()) return;
  if (out.model_dir == model_path && !model_path_config.is_null())
    out.model_config = model_path_config;
  else if (has_hf_config(out.model_dir))
    out.model_config = read_hf_config_json(out.model_dir);
}

// Reads the master weights of a range of the trainable space (collective in a running job).
using TrainedReader = std::function<void(Range compact, float* out)>;

// The values of a group of the training layout: its trained tensors from the master weights, its
// frozen ones from where the run started (`initial`; null when nothing is frozen). Every rank
// reads the same groups' trained values in the same order (read_trained); the writer then puts
// the group together (assemble).
class GroupValues {
public:
  GroupValues(const ParamLayout& layout, TrainedReader trained, const InitialWeights* initial)
      : layout_(layout), space_(layout), trained_(std::move(trained)), initial_(initial) {}

  void read_trained(size_t g) {
    const Range compact = compact_of(g);
    trained_values_.resize(compact.size());
    if (!compact.empty()) trained_(compact, trained_values_.data());
  }
  void assemble(size_t g, std::vector<float>& values) const {
    const ParamGroup& group = layout_.groups[g];
    const Range flat{group.offset, group.offset + group.size}, compact = compact_of(g);
    values.assign(group.size, 0.0f);
    if (compact.size() != group.size) {
      if (!initial_) fail("group {} has frozen tensors and nothing to read them from", group.name);
      initial_->read(values.data(), flat.begin, flat.size());
    }
    for (const TrainableSpace::Run& run : space_.in_flat(flat))
      std::copy_n(trained_values_.data() + (run.compact - compact.begin), run.size,
                  values.data() + (run.flat - flat.begin));
  }

private:
  Range compact_of(size_t g) const {
    const ParamGroup& group = layout_.groups[g];
    return {space_.compact_at(group.offset), space_.compact_at(group.offset + group.size)};
  }

  const ParamLayout& layout_;
  TrainableSpace space_;
  TrainedReader trained_;
  const InitialWeights* initial_;
  std::vector<float> trained_values_;
};

// The groups of the training layout a form needs, in the order the writer takes them: a merged
// model's adapters first (kept for the blocks they merge into), then the base groups; an adapter
// directory's adapter groups.
std::vector<size_t> saved_groups(SavedForm form, const TrainedModel& m) {
  const size_t base = make_gpt_layout(m.shape).groups.size();
  std::vector<size_t> adapters, own;
  for (size_t g = base; g < m.layout.groups.size(); ++g) adapters.push_back(g);
  for (size_t g = 0; g < base; ++g) own.push_back(g);
  if (form == SavedForm::Adapter) return adapters;
  if (m.parts.lora.enabled()) own.insert(own.begin(), adapters.begin(), adapters.end());
  return own;
}

// The writer of one form, group by group in saved_groups' order.
class SavedModelWriter {
public:
  SavedModelWriter(const std::string& out_dir, SavedForm form, const TrainedModel& m, const HfOutput& output)
      : model_(m), base_(make_gpt_layout(m.shape)) {
    if (form == SavedForm::Adapter)
      adapter_ = std::make_unique<PeftAdapterWriter>(out_dir, m.layout, m.shape, m.parts.lora, output);
    else
      hf_ = std::make_unique<HfModelWriter>(out_dir, base_, m.shape, output);
  }

  void take(size_t g, std::vector<float>& values) {
    if (adapter_) return adapter_->write_group(model_.layout.groups[g], values.data());
    if (g >= base_.groups.size()) {  // an adapter group, for the block it merges into
      adapters_[g] = values;
      return;
    }
    for (int l = 0; l < model_.shape.n_layer && model_.parts.lora.enabled(); ++l)
      if (g == size_t(gpt_block_group(l)))
        merge_lora(model_.shape, model_.parts.lora, values.data(),
                   adapters_.at(size_t(lora_group(model_.shape, l))).data());
    hf_->write_group(base_.groups[g], values.data());
  }

  void commit() {
    if (adapter_) adapter_->commit();
    if (hf_) hf_->commit();
  }

private:
  const TrainedModel& model_;
  ParamLayout base_;
  std::unique_ptr<HfModelWriter> hf_;
  std::unique_ptr<PeftAdapterWriter> adapter_;
  std::map<size_t, std::vector<float>> adapters_;
};

size_t largest_group(const ParamLayout& layout) {
  size_t largest = 0;
  for (auto& g : layout.groups) largest = std::max(largest, g.size);
  return largest;
}

// What of a model a checkpoint's run trained, from its recorded config (config::to_json's lora
// block and training.freeze), checked against its recorded layout.
TrainedModel recorded_model(const CheckpointMeta& meta, const config::RecordedRun& run, const std::string& meta_path) {
  TrainedModel m{config::read_recorded_model(meta.model, meta_path).shape, run.parts, {}};
  m.layout = make_training_layout(m.shape, m.parts);
  bool same = m.layout.total == meta.layout.total;
  for (auto& g : meta.layout.groups)
    for (auto& t : g.tensors) {
      const TensorSpec* mine = m.layout.find(t.name);
      same = same && mine && mine->offset == t.offset && mine->trainable == t.trainable;
    }
  if (!same)
    fail("{}: the parameter layout differs from the one its config's model, lora block and training.freeze give",
         meta_path);
  return m;
}

// What `zerotrain export -o` must leave alone: the checkpoint, the model directory the run started
// from, and where its frozen tensors come from.
std::vector<InputFile> export_inputs(const std::string& checkpoint, const HfOutput& output,
                                     const WeightSources& from) {
  std::vector<InputFile> inputs = {{"the checkpoint", checkpoint}};
  if (!output.model_dir.empty())
    inputs.push_back(model_directory_input("the model directory it started from", output.model_dir));
  if (!output.tokenizer_dir.empty() && output.tokenizer_dir != output.model_dir)
    inputs.push_back(model_directory_input("the tokenizer that ships with it", output.tokenizer_dir));
  add_start_inputs(inputs, from.init_from, from.lora_init_from, output.model_dir, "the weights it started from",
                   "the adapters it started from");
  return inputs;
}

}  // namespace

HfOutput final_weights_output(const config::Config& c, const std::optional<TokenizerIdentity>& data_tokenizer) {
  HfOutput out(c.training.save_dtype);
  set_source(out, c.model.path, c.model.hf_config, c.training.random_init() ? "" : c.training.init_from);
  choose_shipped_tokenizer(out, data_tokenizer,
                           c.data.tokenizer_mismatch,
                           "training.save_final", "--set data.tokenizer_mismatch=warn");
  return out;
}

SavedForm final_form(const config::Config& c) {
  return c.lora.enabled && !c.lora.save_merged ? SavedForm::Adapter : SavedForm::Model;
}

void export_checkpoint(const std::string& checkpoint, const std::string& out_dir, HfOutput output, bool merge,
                       std::optional<TokenizerMismatch> tokenizer_mismatch, bool overwrite) {
  const CheckpointReader ckpt(resolve_checkpoint(checkpoint));
  const CheckpointMeta& meta = ckpt.meta();
  const std::string meta_path = ckpt.dir() + "/" + std::string(kMetaFile);
  const config::RecordedRun run = config::read_recorded_run(meta.config, meta_path);
  const TrainedModel model = recorded_model(meta, run, meta_path);
  const SavedForm form = model.parts.lora.enabled() && !merge ? SavedForm::Adapter : SavedForm::Model;
  if (merge && !model.parts.lora.enabled())
    spdlog::info("--merge: {} holds no LoRA adapters; the model is exported as it trained", ckpt.dir());
  if (output.model_dir.empty() && output.tokenizer_dir.empty()) {
    // The run's model directory, where it is still there to give its tokenizer and config.json.
    const bool gone = !run.model_path.empty() && !has_hf_config(run.model_path);
    set_source(output, gone ? "" : run.model_path, nullptr, run.init_from);
    const TokenizerMismatch policy = tokenizer_mismatch.value_or(run.tokenizer_mismatch);
    choose_shipped_tokenizer(output, recorded_data_tokenizer(meta, ckpt.dir()), policy, ckpt.dir(),
                             "--tokenizer-mismatch warn");
  }
  // Frozen tensors come from where the run started: opened before the output is created.
  const WeightSources sources =
      model.layout.has_frozen() ? recorded_weight_sources(run, model.layout) : WeightSources{};
  std::unique_ptr<InitialWeights> initial;
  if (model.layout.has_frozen())
    initial = std::make_unique<InitialWeights>(model.shape, model.parts, model.layout, sources);
  // Every input the run recorded is guarded, read here or not (trained adapters come from the
  // checkpoint, yet the directory they started from is the user's).
  WeightSources guarded = sources;
  guarded.init_from = run.init_from;
  guarded.lora_init_from = run.lora_init_from;
  check_output_against(model_directory_output("-o", out_dir, form == SavedForm::Adapter),
                       export_inputs(checkpoint, output, guarded), overwrite);
  SavedModelWriter out(out_dir, form, model, output);  // the output can be written: before the long reads
  for (size_t i = 0; i < meta.shards.size(); ++i) ckpt.verify(i);
  GroupValues values(model.layout, [&](Range r, float* to) { ckpt.read(StateTensor::Master, r, to); },
                     initial.get());
  std::vector<float> group;
  for (size_t g : saved_groups(form, model)) {
    values.read_trained(g);
    values.assemble(g, group);
    out.take(g, group);
  }
  out.commit();
}

void export_adapter(const std::string& adapter_dir, const std::string& out_dir, HfOutput output, bool merge,
                    bool overwrite) {
  const AdapterOnBase a = read_adapter_on_base(adapter_dir);
  const TrainedModel model{a.model.shape, a.parts, a.layout};
  const SavedForm form = merge ? SavedForm::Model : SavedForm::Adapter;
  // The tokenizer files the adapter directory ships (else the base's); the base's config.json.
  output.tokenizer_dir = has_tokenizer_files(adapter_dir) ? adapter_dir : a.base;
  output.model_config = read_hf_config_json(a.base);
  output.model_dir = a.base;
  check_output_against(model_directory_output("-o", out_dir, form == SavedForm::Adapter),
                       {{"the adapter", adapter_dir, {std::string(kPeftConfigFile), std::string(kPeftWeightsFile)}},
                        model_directory_input("its base model", a.base)},
                       overwrite);
  SavedModelWriter out(out_dir, form, model, output);
  std::vector<float> group;
  for (size_t g : saved_groups(form, model)) {
    const ParamGroup& pg = model.layout.groups[g];
    group.assign(a.values.begin() + ptrdiff_t(pg.offset), a.values.begin() + ptrdiff_t(pg.offset + pg.size));
    out.take(g, group);
  }
  out.commit();
}

void save_gathered_weights(const std::string& out_dir, SavedForm form, const TrainedModel& model,
                           const HfOutput& output, Communicator& comm, Device& device, const StateAccess& state,
                           const std::vector<Range>& pieces, const InitialWeights& initial) {
  const int rank = comm.rank();
  const size_t largest = largest_group(model.layout);
  Buffer<float> gathered(device, MemSpace::Device, MemCategory::Buffers, largest, Init::Uninitialised);
  Buffer<float> host(MemCategory::Buffers, largest, Init::Uninitialised);
  std::unique_ptr<SavedModelWriter> out;
  std::string error;  // rank 0's first failure; it keeps taking part in the gathers
  auto attempt = [&](auto&& what) {
    if (!error.empty()) return;
    try {
      what();
    } catch (const std::exception& e) {
      error = e.what();
    }
  };
  if (rank == 0) attempt([&] { out = std::make_unique<SavedModelWriter>(out_dir, form, model, output); });

  // Each rank's piece of a range of the trainable space, all-gathered in rank order.
  std::vector<size_t> counts(pieces.size());
  auto gather = [&](Range range, float* to) {
    for (size_t r = 0; r < pieces.size(); ++r) counts[r] = pieces[r].intersect(range).size();
    const Range mine = pieces[size_t(rank)].intersect(range);
    size_t before = 0;  // this rank's piece follows the lower ranks' pieces
    for (int r = 0; r < rank; ++r) before += counts[size_t(r)];
    float* place = gathered.data() + before;
    if (!mine.empty()) {
      state.read_state(StateTensor::Master, mine, host.data());
      device.copy(place, host.data(), mine.size() * sizeof(float), device.compute());
      device.synchronize(device.compute());
    }
    comm.all_gather(place, gathered.data(), counts, DType::F32)->wait();
    if (rank != 0) return;
    device.copy(to, gathered.data(), range.size() * sizeof(float), device.compute());
    device.synchronize(device.compute());
  };
  GroupValues values(model.layout, gather, &initial);
  std::vector<float> group;
  for (size_t g : saved_groups(form, model)) {
    values.read_trained(g);  // collective: every rank, whatever happened
    if (rank == 0)
      attempt([&] {
        values.assemble(g, group);
        out->take(g, group);
      });
  }
  if (rank == 0) attempt([&] { out->commit(); });
  if (comm.control().first_failure(!error.empty()) >= 0) {
    out.reset();  // unfinished files are removed
    if (rank == 0) spdlog::error("training.save_final: {}; the partial files were removed", error);
    throw CheckpointFailed();
  }
}

}  // namespace zt
