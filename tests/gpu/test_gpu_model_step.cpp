// The model's forward and backward on the GPU wait for the device nowhere once the losses are kept
// on it, for every model family: the tokens go through pinned staging buffers, the loss into a sum
// on the device that the trainer takes once per step. Counted on the emulated device (every
// synchronising call of the CUDA runtime, and allocations, before the last device work), which also
// makes no cuBLASLt object after the first step; on a GPU, the kept losses equal
// the losses returned one by one. Packed rows (samples side by side, attention inside each) train
// as their samples one by one, wait for nothing either, and a graph replays the segments of each
// step from their pinned table; and record data made into rows by the sampler gives each sample
// its loss alone. A model with experts (its routing, grouping and grouped GEMMs all on the device)
// waits for nothing either, replays as a graph with padded rows, and gives the CPU's loss,
// load-balancing loss and gradients. The LM head on the rows whose target counts gives
// the full head's losses and gradients, and a graph replays each micro-batch's rows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/device.hpp"
#include "core/dtype.hpp"
#include "core/ignored_target.hpp"
#include "core/param_hooks.hpp"
#include "config/model_block.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/backend.hpp"
#include "model/gpt.hpp"
#include "model/kv_cache.hpp"
#include "data/temp_dir.hpp"
#include "packed_rows.hpp"
#include "sample_losses.hpp"

#ifdef ZT_TEST_EMULATED
#include "emulated_device.hpp"
#endif

using namespace zt;
using namespace zt::test;

namespace {

// The model's parameters and gradients in device memory, in the model's dtype.
class DeviceParams final : public ParamHooks {
public:
  DeviceParams(const Gpt& model, Device& device)
      : layout_(model.layout()),
        dtype_(model.dtype()),
        params_(device, MemSpace::Device, MemCategory::Params, layout_.total * dtype_size(dtype_)),
        grads_(device, MemSpace::Device, MemCategory::Grads, layout_.total * dtype_size(dtype_)) {
    std::vector<float> values(layout_.total);
    model.init_params(values.data(), 0, values.size(), 42);
    std::vector<uint8_t> bytes(values.size() * dtype_size(dtype_));
    from_f32(dtype_, values.data(), bytes.data(), values.size());
    device.copy(params_.data(), bytes.data(), bytes.size(), device.compute());
  }
  ConstView fetch(int g) override { return {at(params_, g), dtype_, MemSpace::Device}; }
  void release(int) override {}
  View grads(int g) override { return {at(grads_, g), dtype_, MemSpace::Device}; }
  void grads_ready(int) override {}
  void zero_grads(Device& device) { device.fill_zero(grads_.data(), grads_.bytes(), device.compute()); }
  std::vector<float> grad_values(Device& device) const {
    std::vector<uint8_t> raw(grads_.size());
    device.copy(raw.data(), grads_.data(), raw.size(), device.compute());
    device.synchronize(device.compute());
    std::vector<float> out(layout_.total);
    to_f32(dtype_, raw.data(), out.data(), out.size());
    return out;
  }
  // params += grads, elementwise: each step then starts from other parameters.
  void update(VectorOps& vector) {
    vector.add({grads_.data(), dtype_, MemSpace::Device}, {params_.data(), dtype_, MemSpace::Device}, layout_.total);
  }
  std::vector<uint8_t> bytes(Device& device, bool grads) const {
    std::vector<uint8_t> out(params_.size());
    device.copy(out.data(), (grads ? grads_ : params_).data(), out.size(), device.compute());
    return out;
  }

private:
  uint8_t* at(Buffer<uint8_t>& b, int g) const {
    return b.data() + layout_.groups[size_t(g)].offset * dtype_size(dtype_);
  }
  const ParamLayout& layout_;
  DType dtype_;
  Buffer<uint8_t> params_, grads_;
};

// A preset, or a transformers-made directory of tests/fixtures/hf (the models with experts).
GptShape model_shape(const std::string& name) {
  if (auto preset = gpt_preset(name)) return *preset;
  return config::resolve_model_argument(std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/" + name).shape;
}

// A micro-step run eagerly (the first step always: it sizes the operators' buffers), or as a graph
// captured from it once and replayed.
void eager_or_replayed(Device& device, Graph& graph, bool replay, const std::function<void()>& micro_step) {
  if (!replay) return micro_step();
  if (!graph.handle) graph = device.capture(micro_step);
  device.launch(graph);
}

#ifdef ZT_TEST_EMULATED
// What the emulated runtime saw before the traced region's last device work: the calls that waited
// for the device or allocated ("" when none), and the cuBLASLt objects made.
struct Traced {
  std::string stalls;
  uint64_t cublaslt_made = 0;
};
template <typename F>
Traced traced(F&& region) {
  const uint64_t made = emu::cublaslt_creations();
  emu::start_trace();
  region();
  const emu::Stalls stalls = emu::stalls_of(emu::stop_trace());
  Traced t;
  t.cublaslt_made = emu::cublaslt_creations() - made;
  for (const std::string& c : stalls.before_last_work) t.stalls += c + "; ";
  return t;
}
#else
struct Traced {
  std::string stalls;
  uint64_t cublaslt_made = 0;
};
template <typename F>
Traced traced(F&& region) {  // a GPU counts nothing: the losses alone are checked there
  region();
  return {};
}
#endif

}  // namespace

TEST_CASE("a GPU micro-step waits for the device nowhere; the kept losses are the returned ones",
          "[gpu][model][smoke]") {
  // GPT-2's operators (toy), the llama family's (llama-tiny), the q/k norms (qwen3-tiny), and
  // experts with the load-balancing loss (Qwen3-MoE). Packed rows (once: the same copy of their
  // segments for every family) from a pinned table.
  const auto [preset, packed] = GENERATE(table<std::string, bool>({{"toy", false},
                                                                   {"llama-tiny", false},
                                                                   {"qwen3-tiny", false},
                                                                   {"qwen3_moe_aux_fp32", false},
                                                                   {"llama-tiny", true}}));
  INFO(preset << (packed ? ", packed rows" : ""));
  Backend& backend = cuda::backend(0, DType::BF16);
  const GptShape shape = model_shape(preset);
  const int B = 2, T = 32;
  Gpt model(shape, B, T, false, backend);
  DeviceParams params(model, backend.device);
  std::vector<int32_t> tokens(size_t(B) * (T + 1));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7919) % size_t(shape.vocab_size));
  const RowSegments segments = PackedRows{B, T, {{0, 5, 20}, {0, 17}}}.segments(backend.device, MemSpace::Pinned);
  auto step = [&] {
    const float loss = model.forward(tokens.data(), tokens.data() + 1, B, T, params, packed ? &segments : nullptr);
    model.backward(params, 1.0f);
    return loss;
  };
  std::vector<float> returned;
  for (int s = 0; s < 3; ++s) returned.push_back(step());  // the first also sizes the operators' buffers

  backend.model.keep_losses(true);
  const double weights[3] = {0.25, 0.0, 3.0};  // a micro-batch without counted targets weighs 0
  const Traced region = traced([&] {
    for (int s = 0; s < 3; ++s) {
      backend.model.kept_loss_weight(weights[s]);
      CHECK(std::isnan(step()));
    }
  });
  CHECK(region.stalls == "");
  CHECK(region.cublaslt_made == 0);  // each shape's cuBLASLt objects were made in the first step
  const double kept = backend.model.take_losses();
  // The same parameters (no update in between), so the same losses, weighted and summed in order
  // in double as a host would.
  double sum = 0.0;
  for (int s = 0; s < 3; ++s)
    if (weights[s] != 0.0) sum += double(returned[size_t(s)]) * weights[s];
  CHECK(kept == sum);
  CHECK(backend.model.take_losses() == 0.0);
  backend.model.kept_loss_weight(1.0);
  step();
  double into = -1.0;
  backend.model.take_losses_into(&into);  // queued: there once the compute stream has run it
  backend.device.synchronize(backend.device.compute());
  CHECK(into == double(returned[0]));
  backend.model.keep_losses(false);
}

TEST_CASE("a micro-step captured as a graph and replayed gives the eager bits, step after step",
          "[gpu][model][graph]") {
  // Packed rows: the samples move at every step, and a replay reads them from the pinned table.
  // Experts (Qwen3-MoE with the load-balancing loss): the second row's end is padding, which moves
  // too, left out of the aux loss and its gradient as the replay reads it.
  const auto [preset, packed] = GENERATE(table<std::string, bool>(
      {{"toy", false}, {"llama-tiny", false}, {"llama-tiny", true}, {"qwen3_moe_aux_fp32", true}}));
  INFO(preset << (packed ? ", packed rows" : ""));
  Backend& backend = cuda::backend(0, DType::BF16);
  Device& device = backend.device;
  REQUIRE(device.has_graphs());
  const GptShape shape = model_shape(preset);
  const bool padded = shape.moe.enabled();
  const int B = 2, T = 32;
  // Pinned: a graph's copy reads the tokens (and the rows' segments) there at each launch.
  Buffer<int32_t> tokens(device, MemSpace::Pinned, MemCategory::Buffers, size_t(B) * (T + 1));
  RowSegments segments(device, MemSpace::Pinned, B, T);
  struct Run {
    std::vector<double> losses;
    std::vector<uint8_t> params, grads;
  };
  auto run = [&](bool graphs) {
    Gpt model(shape, B, T, false, backend);
    DeviceParams params(model, device);
    auto micro_step = [&] {
      model.forward(tokens.data(), tokens.data() + 1, B, T, params, packed ? &segments : nullptr);
      model.backward(params, 1.0f);
    };
    Graph graph;
    Run r;
    backend.model.keep_losses(true);
    for (int s = 0; s < 4; ++s) {
      for (size_t i = 0; i < tokens.size(); ++i)
        tokens[i] = int32_t((i * 7919 + size_t(s) * 131) % size_t(shape.vocab_size));
      segments.set_row(0, std::vector<int32_t>{0, 3 + s, 20 - s});
      segments.set_row(1, std::vector<int32_t>{0, 30 - 4 * s}, padded);
      eager_or_replayed(device, graph, graphs && s > 0, micro_step);
      params.update(backend.vector);
      r.losses.push_back(backend.model.take_losses());  // waits: the tokens may be written again
    }
    backend.model.keep_losses(false);
    device.destroy_graph(graph);
    if (padded) {  // generation after padded rows: one sequence of its own, the padding forgotten
      KvCache cache(shape, 1, 3, backend);
      CHECK_NOTHROW(model.forward_cached(tokens.data(), 1, 3, cache, params));
    }
    r.params = params.bytes(device, false);
    r.grads = params.bytes(device, true);
    return r;
  };
  const Run eager = run(false), replayed = run(true);
  CHECK(eager.losses[2] != eager.losses[3]);  // other tokens and parameters at every step
  CHECK(replayed.losses == eager.losses);
  CHECK(replayed.params == eager.params);
  CHECK(replayed.grads == eager.grads);
}

TEST_CASE("the LM head on the rows that count on the GPU gives the full head's losses and gradients; a graph "
          "replays each micro-batch's rows",
          "[gpu][model][head]") {
  // Rows of a prompt (ignored targets) and an answer; the prompts move at every step, their rows in
  // all staying 24, so that one captured graph replays every step with rows it finds on the device.
  const DType dt = GENERATE(DType::F32, DType::BF16);
  INFO(dtype_name(dt));
  Backend& backend = cuda::backend(0, dt);
  Device& device = backend.device;
  const GptShape shape = *gpt_preset("llama-tiny");
  const int B = 2, T = 32, N = B * T;
  Buffer<int32_t> tokens(device, MemSpace::Pinned, MemCategory::Buffers, size_t(N));
  Buffer<int32_t> targets(device, MemSpace::Pinned, MemCategory::Buffers, size_t(N));
  struct Run {
    std::vector<double> losses;
    std::vector<float> grads;  // the last step's
    int head_rows = 0;
  };
  auto run = [&](bool counted_rows_only, bool graphs) {
    Gpt model(shape, B, T, false, backend);
    model.set_head_on_counted_rows(counted_rows_only);
    DeviceParams params(model, device);
    auto micro_step = [&] {
      model.forward(tokens.data(), targets.data(), B, T, params);
      model.backward(params, 1.0f);
    };
    Graph graph;
    Run r;
    backend.model.keep_losses(true);
    for (int s = 0; s < 4; ++s) {
      for (int i = 0; i < N; ++i) {
        const int t = i % T, prompt = i < T ? 10 + s : 14 - s;
        tokens[size_t(i)] = int32_t((i * 7919 + s * 131) % 256);
        targets[size_t(i)] = t < prompt ? kIgnoredTarget : int32_t((i * 31 + s) % 256);
      }
      params.zero_grads(device);
      eager_or_replayed(device, graph, graphs && s > 0, micro_step);
      r.head_rows = model.head_rows();
      r.grads = params.grad_values(device);
      params.update(backend.vector);
      r.losses.push_back(backend.model.take_losses());  // waits: the tokens may be written again
    }
    device.destroy_graph(graph);
    backend.model.keep_losses(false);
    return r;
  };
  const Run full = run(false, false), counted = run(true, false), replayed = run(true, true);
  CHECK(full.head_rows == N);
  CHECK(counted.head_rows == N - 24);
  CHECK(replayed.losses == counted.losses);
  CHECK(replayed.grads == counted.grads);  // the last step's, after three updates
  // The same rows' logits and losses; the head's weight gradient sums fewer zero products. bf16:
  // the gradients rounded as they are added, and each step's update moves the next step's inputs.
  const double loss_rtol = dt == DType::F32 ? 1e-6 : 1e-3, grad_rtol = dt == DType::F32 ? 1e-5 : 2e-2;
  for (size_t s = 0; s < full.losses.size(); ++s)
    CHECK(std::abs(counted.losses[s] - full.losses[s]) <= loss_rtol * std::abs(full.losses[s]));
  double num = 0, den = 0;
  for (size_t i = 0; i < full.grads.size(); ++i) {
    num += (double(counted.grads[i]) - full.grads[i]) * (double(counted.grads[i]) - full.grads[i]);
    den += double(full.grads[i]) * full.grads[i];
  }
  CHECK(std::sqrt(num / den) <= grad_rtol);
}

TEST_CASE("packed and padded rows on the GPU train as their samples one by one", "[gpu][model][packed]") {
  // GPT-2's learned positions and the llama family's rotary ones with grouped-query attention and
  // q/k norms in fp32, and the tensor cores' attention in bf16; a sliding-window layer beside a full
  // one in both.
  const auto [preset, dt] = GENERATE(table<std::string, DType>({{"toy", DType::F32},
                                                                {"qwen3-tiny", DType::F32},
                                                                {"qwen3-tiny+window", DType::F32},
                                                                {"qwen3-tiny+window", DType::BF16}}));
  INFO(preset << ", " << dtype_name(dt));
  Backend& backend = cuda::backend(0, dt);
  const GptShape shape = model_test_shape(preset);
  Gpt model(shape, 6, kSampleRow, false, backend);
  DeviceParams params(model, backend.device);
  const std::vector<TokenSample> samples = model_test_samples(shape.vocab_size);
  Device& device = backend.device;
  params.zero_grads(device);
  const LossAndGrads want = train_one_by_one(model, params, samples, [&] { return params.grad_values(device); });
  // fp32: the CPU's tolerance (3.7e-7 measured on the gradients). bf16: each sample's gradient is
  // rounded to bf16 as it is added, and the probabilities in tiles that start elsewhere (4e-3
  // measured on the gradients, 3e-7 relative on the loss).
  const double loss_rtol = dt == DType::F32 ? 1e-6 : 1e-4, grad_rtol = dt == DType::F32 ? 1e-6 : 1e-2;
  for (bool padded : {false, true}) {
    INFO((padded ? "padded" : "packed"));
    const PackedBatch batch = padded ? padded_layout(samples) : packed_layout(samples);
    // Pinned, as a trainer keeps the table.
    const RowSegments segments = batch.rows.segments(device, MemSpace::Pinned);
    params.zero_grads(device);
    const LossAndGrads got = train_at_once(model, params, batch, segments, [&] { return params.grad_values(device); });
    require_same_training(model.layout(), got, want, loss_rtol, grad_rtol);
  }
}

TEST_CASE("packed and padded rows of record data on the GPU give each sample its loss alone",
          "[gpu][model][packed][samples]") {
  // Record data from its file through the sampler's rows (tests/model/test_sample_losses.cpp on the
  // CPU), here with rotary positions, grouped-query attention and q/k norms in fp32, a full layer
  // and a sliding-window one.
  Backend& backend = cuda::backend(0, DType::F32);
  const GptShape shape = model_test_shape("qwen3-tiny+window");
  constexpr int kSeq = 72, kBatch = 3;
  TempDir dir;
  const auto data = write_record_data(dir.file("chat.bin"), {9, 30, 1, 64, 80, 17}, shape.vocab_size, 3);
  Gpt model(shape, kBatch, kSeq, false, backend);
  DeviceParams params(model, backend.device);
  const ForwardLoss forward = [&](const int32_t* inputs, const int32_t* targets, int B, int T,
                                  const RowSegments* segments) {
    return model.forward(inputs, targets, B, T, params, segments);
  };
  for (Packing packing : {Packing::None, Packing::Pack}) {
    const SampleSampler sampler(*data, {packing, Padding::Longest, Truncation::Truncate, kSeq}, kBatch, 1, 0, 1,
                                false, 1);
    INFO(sampler.describe());
    const SampleLosses got =
        losses_in_micro_batches(sampler, shape.vocab_size, backend.device, MemSpace::Pinned, forward);
    require_losses_of_samples_alone(*data, got, kSeq, 1e-6, forward);
  }
}

TEST_CASE("a GPU micro-step of a model with experts gives the CPU's loss, aux loss and gradients",
          "[gpu][model][moe]") {
  // The architectures of transformers-made directories: Qwen3-MoE (renormalised top-2 of 4, the
  // load-balancing loss) and Qwen2-MoE (top-2 of 4 as they come, a gated shared expert), each token
  // through the router's fp32 softmax and top-k, the grouping by expert, one GEMM pair per expert, the
  // weighted combination, and back; OLMoE (top-2 of 4 as they come, its q/k norms over the whole q
  // and k). The same parameters on both backends; fp32, and bf16 against the CPU's fp32 within
  // bf16's rounding.
  const auto [name, dt] = GENERATE(table<std::string, DType>({{"qwen3_moe_aux_fp32", DType::F32},
                                                              {"qwen2_moe_fp32", DType::F32},
                                                              {"olmoe_fp32", DType::F32},
                                                              {"qwen3_moe_aux_fp32", DType::BF16},
                                                              {"qwen2_moe_fp32", DType::BF16},
                                                              {"olmoe_fp32", DType::BF16}}));
  INFO(name << ", " << dtype_name(dt));
  const GptShape shape =
      config::resolve_model_argument(std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/" + name).shape;
  REQUIRE(shape.moe.enabled());
  const int B = 2, T = 16;
  std::vector<int32_t> tokens(size_t(B) * (T + 1));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7919) % size_t(shape.vocab_size));
  struct Step {
    float loss;
    double aux;
    std::vector<float> grads;
    ParamLayout layout;
  };
  auto step = [&](Backend& backend) {
    Gpt model(shape, B, T, false, backend);
    DeviceParams params(model, backend.device);
    params.zero_grads(backend.device);
    const float loss = model.forward(tokens.data(), tokens.data() + 1, B, T, params, nullptr);
    model.backward(params, 1.0f);
    return Step{loss, model.aux_loss(), params.grad_values(backend.device), model.layout()};
  };
  const Step cpu = step(cpu_backend()), gpu = step(cuda::backend(0, dt));
  const double tolerance = dt == DType::F32 ? 1e-5 : 1e-2;
  INFO("loss cpu " << cpu.loss << " gpu " << gpu.loss << "; aux cpu " << cpu.aux << " gpu " << gpu.aux);
  CHECK(std::abs(gpu.loss - cpu.loss) <= tolerance * std::abs(cpu.loss));
  CHECK(std::abs(gpu.aux - cpu.aux) <= tolerance * std::abs(cpu.aux));
  // Norm-wise over each tensor (the router, each expert, the shared expert and its gate among them).
  double worst = 0;
  for (const ParamGroup& g : cpu.layout.groups)
    for (const TensorSpec& t : g.tensors) {
      double diff = 0, norm = 0;
      for (size_t i = t.offset; i < t.offset + t.numel(); ++i) {
        diff += std::pow(double(gpu.grads[i]) - double(cpu.grads[i]), 2);
        norm += std::pow(double(cpu.grads[i]), 2);
      }
      const double relative = std::sqrt(diff / std::max(norm, 1e-30));
      worst = std::max(worst, relative);
      INFO(t.name << ": relative difference " << relative);
      CHECK(relative <= (dt == DType::F32 ? 1e-4 : 5e-2));
    }
  std::printf("%s %s: largest relative gradient difference GPU - CPU over the tensors: %.3g\n", name.c_str(),
              std::string(dtype_name(dt)).c_str(), worst);
}
