#include "ckpt/gpt2_export.hpp"

#include <algorithm>
#include <filesystem>
#include <spdlog/spdlog.h>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_reader.hpp"
#include "ckpt/checkpoint_writer.hpp"
#include "ckpt/safetensors.hpp"
#include "comm/control_channel.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"

namespace zt {

namespace fs = std::filesystem;

Gpt2WeightsWriter::Gpt2WeightsWriter(std::string out_dir, const ParamLayout& layout, const ModelDims& model,
                                     DType dtype)
    : dir_(std::move(out_dir)), model_(model), dtype_(dtype) {
  if (dtype != DType::F32 && dtype != DType::BF16) fail("{}: weights are exported as fp32 or bf16, not {}", dir_, dtype_name(dtype));
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) fail("{}: cannot create directory: {}", dir_, ec.message());
  const std::string path = (fs::path(dir_) / "model.safetensors").string();
  file_ = std::make_unique<SafetensorsFileWriter>(path, gpt2_safetensors_plan(path, layout, model.vocab_size, dtype));
}

Gpt2WeightsWriter::~Gpt2WeightsWriter() = default;

void Gpt2WeightsWriter::write_group(const ParamGroup& g, const float* values) {
  for (auto& t : g.tensors) {
    const float* w = values + (t.offset - g.offset);
    if (dtype_ == DType::F32) {
      file_->write(t.name, w);
      continue;
    }
    // wte.weight is exported without its padding rows: a prefix of the tensor.
    const size_t n = t.name == "wte.weight" ? size_t(model_.vocab_size) * t.shape.at(1) : t.numel();
    converted_.resize(n);
    from_f32(dtype_, w, converted_.data(), n);
    file_->write(t.name, converted_.data());
  }
}

void Gpt2WeightsWriter::commit() {
  file_->commit();
  write_gpt2_config_json(dir_, model_.n_layer, model_.n_head, model_.d_model, model_.vocab_size, model_.max_seq_len,
                         dtype_);
}

void export_checkpoint(const std::string& checkpoint, const std::string& out_dir, DType dtype) {
  const CheckpointReader ckpt(resolve_checkpoint(checkpoint));
  const CheckpointMeta& meta = ckpt.meta();
  if (!meta.layout.find("wte.weight"))  // the llama family: its exporter is still to come
    fail("{}: holds a {} model; writing it in the Hugging Face layout is not implemented yet (GPT-2 only)", checkpoint,
         meta.config.value(nlohmann::json::json_pointer("/model/model_type"), std::string("non-GPT-2")));
  for (size_t i = 0; i < meta.shards.size(); ++i) ckpt.verify(i);
  Gpt2WeightsWriter out(out_dir, meta.layout, meta.model, dtype);
  size_t largest = 0;
  for (auto& g : meta.layout.groups) largest = std::max(largest, g.size);
  Buffer<float> values(MemCategory::Buffers, largest, Init::Uninitialised);
  for (auto& g : meta.layout.groups) {
    ckpt.read(StateTensor::Master, {g.offset, g.offset + g.size}, values.data());
    out.write_group(g, values.data());
  }
  out.commit();
}

void save_gathered_weights(const std::string& out_dir, const ParamLayout& layout, const ModelDims& model,
                           DType dtype, Communicator& comm, Device& device, const StateAccess& state,
                           const std::vector<Range>& pieces) {
  const int rank = comm.rank();
  size_t largest = 0;
  for (auto& g : layout.groups) largest = std::max(largest, g.size);
  Buffer<float> gathered(device, MemSpace::Device, MemCategory::Buffers, largest, Init::Uninitialised);
  Buffer<float> host(MemCategory::Buffers, largest, Init::Uninitialised);
  std::unique_ptr<Gpt2WeightsWriter> out;
  std::string error;  // rank 0's first failure; it keeps taking part in the gathers
  auto attempt = [&](auto&& what) {
    if (!error.empty()) return;
    try {
      what();
    } catch (const std::exception& e) {
      error = e.what();
    }
  };
  if (rank == 0) attempt([&] { out = std::make_unique<Gpt2WeightsWriter>(out_dir, layout, model, dtype); });

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
    out.reset();  // an unfinished file is removed
    if (rank == 0) spdlog::error("training.save_final: {}; the partial file was removed", error);
    throw CheckpointFailed();
  }
}

}  // namespace zt
