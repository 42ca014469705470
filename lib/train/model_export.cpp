#include "train/model_export.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_reader.hpp"
#include "ckpt/checkpoint_writer.hpp"
#include "comm/control_channel.hpp"
#include "config/model_block.hpp"
#include "core/buffer.hpp"
#include "hf/hf_config.hpp"
#include "hf/hf_dir.hpp"
#include "train/output_paths.hpp"
#include "inference/model_tokenizer.hpp"
#include "train/tokenizer_shipping.hpp"

namespace zt {

namespace {

// The model directory a run started from and its config.json; `model_path_config` is model.path's
// as the run read it.
void set_source(HfOutput& out, const std::string& model_path, const nlohmann::ordered_json& model_path_config,
                const std::string& init_from) {
  out.source_dir = hf_source_directory(model_path, init_from);
  if (out.source_dir.empty()) return;
  if (out.source_dir == model_path && !model_path_config.is_null())
    out.source_config = model_path_config;
  else if (has_hf_config(out.source_dir))
    out.source_config = read_hf_config_json(out.source_dir);
}

size_t largest_group(const ParamLayout& layout) {
  size_t largest = 0;
  for (auto& g : layout.groups) largest = std::max(largest, g.size);
  return largest;
}

std::string recorded_string(const nlohmann::json& config, const char* pointer) {
  const nlohmann::json::json_pointer p(pointer);
  return config.contains(p) && config.at(p).is_string() ? config.at(p).get<std::string>() : "";
}

}  // namespace

HfOutput final_weights_output(const config::Config& c, const std::optional<TokenizerIdentity>& data_tokenizer) {
  HfOutput out(dtype_from_name(c.training.save_dtype));
  set_source(out, c.model.path, c.model.hf_config, c.training.random_init() ? "" : c.training.init_from);
  choose_shipped_tokenizer(out, data_tokenizer,
                           tokenizer_mismatch_from_name(c.data.tokenizer_mismatch, "data.tokenizer_mismatch"),
                           "training.save_final", "--set data.tokenizer_mismatch=warn");
  return out;
}

void export_checkpoint(const std::string& checkpoint, const std::string& out_dir, HfOutput output,
                       std::optional<TokenizerMismatch> tokenizer_mismatch, bool overwrite) {
  const CheckpointReader ckpt(resolve_checkpoint(checkpoint));
  const CheckpointMeta& meta = ckpt.meta();
  const std::string meta_path = ckpt.dir() + "/" + std::string(kMetaFile);
  const GptShape shape = config::read_recorded_model(meta.model, meta_path).shape;
  if (output.source_dir.empty()) {
    // The run's model directory, where it is still there to give its tokenizer and config.json.
    const std::string model_path = recorded_string(meta.config, "/model/path");
    std::string init_from = recorded_string(meta.config, "/training/init_from");
    if (init_from == config::kRandomInit) init_from.clear();
    const bool gone = !model_path.empty() && !has_hf_config(model_path);
    set_source(output, gone ? "" : model_path, nullptr, init_from);
    const std::string recorded = recorded_string(meta.config, "/data/tokenizer_mismatch");
    const TokenizerMismatch policy = tokenizer_mismatch.value_or(
        tokenizer_mismatch_from_name(recorded.empty() ? "error" : recorded, meta_path + " data.tokenizer_mismatch"));
    choose_shipped_tokenizer(output, recorded_data_tokenizer(meta, ckpt.dir()), policy, ckpt.dir(),
                             "--tokenizer-mismatch warn");
  }
  std::vector<InputFile> inputs = {{"the checkpoint", checkpoint}};
  if (!output.source_dir.empty()) inputs.push_back(model_directory_input("the model directory it started from", output.source_dir));
  check_output_against(model_directory_output("-o", out_dir), inputs, overwrite);
  HfModelWriter out(out_dir, meta.layout, shape, output);  // the output can be written: before the long reads
  for (size_t i = 0; i < meta.shards.size(); ++i) ckpt.verify(i);
  Buffer<float> values(MemCategory::Buffers, largest_group(meta.layout), Init::Uninitialised);
  for (auto& g : meta.layout.groups) {
    ckpt.read(StateTensor::Master, {g.offset, g.offset + g.size}, values.data());
    out.write_group(g, values.data());
  }
  out.commit();
}

void save_gathered_weights(const std::string& out_dir, const ParamLayout& layout, const GptShape& shape,
                           const HfOutput& output, Communicator& comm, Device& device, const StateAccess& state,
                           const std::vector<Range>& pieces) {
  const int rank = comm.rank();
  const size_t largest = largest_group(layout);
  Buffer<float> gathered(device, MemSpace::Device, MemCategory::Buffers, largest, Init::Uninitialised);
  Buffer<float> host(MemCategory::Buffers, largest, Init::Uninitialised);
  std::unique_ptr<HfModelWriter> out;
  std::string error;  // rank 0's first failure; it keeps taking part in the gathers
  auto attempt = [&](auto&& what) {
    if (!error.empty()) return;
    try {
      what();
    } catch (const std::exception& e) {
      error = e.what();
    }
  };
  if (rank == 0) attempt([&] { out = std::make_unique<HfModelWriter>(out_dir, layout, shape, output); });

  std::vector<size_t> counts(pieces.size());
  for (auto& g : layout.groups) {
    const Range group{g.offset, g.offset + g.size};
    for (size_t r = 0; r < pieces.size(); ++r) counts[r] = pieces[r].intersect(group).size();
    const Range mine = pieces[size_t(rank)].intersect(group);
    size_t before = 0;  // this rank's piece follows the lower ranks' pieces
    for (int r = 0; r < rank; ++r) before += counts[size_t(r)];
    float* place = gathered.data() + before;
    if (!mine.empty()) {
      state.read_state(StateTensor::Master, mine, host.data());
      device.copy(place, host.data(), mine.size() * sizeof(float), device.compute());
      device.synchronize(device.compute());
    }
    comm.all_gather(place, gathered.data(), counts, DType::F32)->wait();
    if (rank != 0) continue;
    device.copy(host.data(), gathered.data(), g.size * sizeof(float), device.compute());
    device.synchronize(device.compute());
    attempt([&] { out->write_group(g, host.data()); });
  }
  if (rank == 0) attempt([&] { out->commit(); });
  if (comm.control().first_failure(!error.empty()) >= 0) {
    out.reset();  // unfinished files are removed
    if (rank == 0) spdlog::error("training.save_final: {}; the partial files were removed", error);
    throw CheckpointFailed();
  }
}

}  // namespace zt
