#include "train/model_export.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "ckpt/checkpoint_writer.hpp"
#include "comm/control_channel.hpp"
#include "core/buffer.hpp"
#include "data/data_tokenizer.hpp"
#include "data/tokenizer_identity.hpp"
#include "hf/hf_config.hpp"
#include "hf/hf_dir.hpp"
#include "hf/peft_adapter.hpp"
#include "inference/model_source.hpp"
#include "inference/model_tokenizer.hpp"
#include "train/output_paths.hpp"

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

// The tokenizer that ships (model_export.hpp): `output.tokenizer_dir` holds the model directory the
// run started from ("" without one) and becomes the directory whose tokenizer files ship. `what`
// names the source for messages ("training.save_final", the checkpoint exported), `override` the
// setting that turns a refusal into a warning.
void choose_shipped_tokenizer(HfOutput& output, const std::optional<TokenizerIdentity>& data_tokenizer,
                              TokenizerMismatch policy, const std::string& what, const std::string& override) {
  if (!data_tokenizer) return;  // data of llm.c's scripts or an older zerotrain: the model directory's, as before
  const std::optional<TokenizerReference> model =
      output.tokenizer_dir.empty() ? std::nullopt : tokenizer_of_model_directory(output.tokenizer_dir).reference;
  const bool model_has_one = model.has_value();
  if (model_has_one) {
    if (same_tokenizer(*data_tokenizer, model->identity)) return;
    const TokenizerJudgement judgement{what, override, policy, true};
    judge_data_tokenizer({data_tokenizer, "the run's data", {}}, *model, judgement);  // refuses under error
  }
  if (!tokenizer_files_unchanged(*data_tokenizer)) {
    spdlog::warn("{}: the tokenizer the run's data was made with, {}, is no longer there as it was: {}", what,
                 describe(*data_tokenizer),
                 model_has_one ? "the model directory's ships instead" : "no tokenizer ships with the model");
    return;
  }
  output.tokenizer_dir = tokenizer_directory(*data_tokenizer);
}

// The writer of one form, group by group in ModelGroups' order.
class SavedModelWriter {
public:
  SavedModelWriter(const std::string& out_dir, SavedForm form, const TrainedModel& m, const HfOutput& output)
      : model_(m), base_(make_gpt_layout(m.shape)) {
    if (form == SavedForm::Adapter)
      adapter_ = std::make_unique<PeftAdapterWriter>(out_dir, m.layout, m.shape, m.parts.lora, output);
    else
      hf_ = std::make_unique<HfModelWriter>(out_dir, base_, m.shape, output);
  }

  void take(size_t g, const std::vector<float>& values) {
    if (adapter_) return adapter_->write_group(model_.layout.groups[g], values.data());
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
};

// Every group of `values` through `out`, then the output committed.
void write_groups(ModelGroups values, SavedModelWriter& out) {
  values.read_all([&](size_t g, const std::vector<float>& group) { out.take(g, group); });
  out.commit();
}

size_t largest_group(const ParamLayout& layout) {
  size_t largest = 0;
  for (auto& g : layout.groups) largest = std::max(largest, g.size);
  return largest;
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
  const RunReadBack back(checkpoint);  // frozen tensors' sources opened before the output is created
  const std::string& dir = back.checkpoint().dir();
  const config::RecordedRun& run = back.run();
  const TrainedModel& model = back.model();
  const SavedForm form = model.parts.lora.enabled() && !merge ? SavedForm::Adapter : SavedForm::Model;
  if (merge && !model.parts.lora.enabled())
    spdlog::info("--merge: {} holds no LoRA adapters; the model is exported as it trained", dir);
  if (output.model_dir.empty() && output.tokenizer_dir.empty()) {
    // The run's model directory, where it is still there to give its tokenizer and config.json.
    const bool gone = !run.model_path.empty() && !has_hf_config(run.model_path);
    set_source(output, gone ? "" : run.model_path, nullptr, run.init_from);
    const TokenizerMismatch policy = tokenizer_mismatch.value_or(run.tokenizer_mismatch);
    choose_shipped_tokenizer(output, recorded_data_tokenizer(back.checkpoint().meta(), dir), policy, dir,
                             "--tokenizer-mismatch warn");
  }
  // Every input the run recorded is guarded, read here or not (trained adapters come from the
  // checkpoint, yet the directory they started from is the user's).
  WeightSources guarded = back.frozen_from();
  guarded.init_from = run.init_from;
  guarded.lora_init_from = run.lora_init_from;
  check_output_against(model_directory_output("-o", out_dir, form == SavedForm::Adapter),
                       export_inputs(checkpoint, output, guarded), overwrite);
  SavedModelWriter out(out_dir, form, model, output);  // the output can be written: before the long reads
  back.verify();
  write_groups(back.groups(form), out);
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
  write_groups(ModelGroups::of_values(model, form, a.values.data()), out);
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
  ModelGroups values(model, form, gather, [&](Range r, float* to) { initial.read(to, r.begin, r.size()); });
  std::vector<float> group;
  for (size_t g : values.order()) {
    values.read_trained(g);  // collective: every rank, whatever happened
    if (rank == 0)
      attempt([&] {
        if (values.assemble(g, group)) out->take(g, group);
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
