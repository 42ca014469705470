// One single-process training step of a model: zero grads, forward, backward, global-norm clip,
// AdamW; fp32. Prints the median step time over the measured steps and where the time goes
// (per phase, per kernel kind, per parameter group). Not a test: nothing here passes or fails.
//
//   OMP_NUM_THREADS=2 bench_step                      # GPT-2 124M, B=4, T=64
//   OMP_NUM_THREADS=2 bench_step --model llama-125m   # a Llama of 125M parameters, B=4, T=256
//   OMP_NUM_THREADS=2 bench_step --model toy --batch 8 --seq 128 --steps 10
//   OMP_NUM_THREADS=1 bench_step --model DIR          # a Hugging Face directory's config.json
//   OMP_NUM_THREADS=1 bench_step --model DIR --cpu-time   # times by CPU time, on a machine others share
#include <CLI/CLI.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/clock.hpp"
#include "core/param_hooks.hpp"
#include "core/rng.hpp"
#include "config/model_block.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/kernel_profile.hpp"
#include "model/gpt.hpp"
#include "optim/adamw.hpp"
#include "optim/grad_clip.hpp"

using namespace zt;
using cpu::KernelProfile;

namespace {

// Resident parameters that also time the model's work per parameter group: each hook call
// charges the time since the previous one to its group (the softmax + cross-entropy, which runs
// after the last forward hook and before the first backward one, goes to the embeddings).
class TimedHooks : public ResidentParams {
public:
  explicit TimedHooks(const ParamLayout& layout) : ResidentParams(layout), group_seconds(layout.groups.size(), 0.0) {}
  void mark() { last_ = KernelProfile::now(); }
  void charge(int g) {
    const double now = KernelProfile::now();
    group_seconds[g] += now - last_;
    last_ = now;
  }
  ConstView fetch(int g) override {
    charge(g);
    return ResidentParams::fetch(g);
  }
  void release(int g) override { charge(g); }
  void grads_ready(int g) override { charge(g); }
  std::vector<double> group_seconds;

private:
  double last_ = KernelProfile::now();
};

// A Llama 2-style model of GPT-2 124M's size, for comparing the two families: 12 layers, d_model
// 768, 12 query heads sharing 4 key/value heads of 64, d_ff 2048 (8/3 of d_model, Llama's rule),
// Llama 2's vocabulary of 32,000 and its untied LM head: 124,651,264 parameters.
GptShape llama_125m() {
  GptShape s{12, 12, 768, 32000, 1024};
  s.model_type = ModelType::Llama;
  s.n_kv_head = 4;
  s.d_ff = 2048;
  s.tied_head = false;
  return s;
}

// A shape of the library's presets, or one of this benchmark's own, with the B and T it runs at
// unless told otherwise.
struct BenchModel {
  GptShape shape;
  int batch = 4, seq = 64;
};

std::optional<BenchModel> bench_model(const std::string& name) {
  if (name == "llama-125m") return BenchModel{llama_125m(), 4, 256};
  if (auto shape = gpt_preset(name)) return BenchModel{*shape};
  if (config::model_file(name)) return BenchModel{config::resolve_model_argument(name).shape};
  return std::nullopt;
}

// Multiply-adds ·2 of the matmuls in one forward: per block the q/k/v, output, MLP-in and MLP-out
// projections (a sparse block: the router, and top_k experts' and the shared expert's), then the LM head.
double matmul_forward_flops(const GptShape& s, double tokens) {
  const BlockRecipe r = s.recipe();
  const double C = s.d_model, F = s.ff_width(), fc_out = r.swiglu ? 2 * F : F;
  const double attention = C * s.qkv_width() + s.q_width() * C;
  const double experts = C * s.moe.num_experts + 3 * C * (double(s.moe.top_k) * s.expert_width() + s.moe.d_shared) +
                         (s.moe.d_shared > 0 ? C : 0);
  double blocks = 0;
  for (int l = 0; l < s.n_layer; ++l) blocks += attention + (s.sparse(l) ? experts : C * fc_out + F * C);
  return 2.0 * tokens * (blocks + C * s.padded_vocab());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One training step (forward + backward + clip + AdamW) of a model, fp32, one process"};
  std::string preset = "gpt2-124m";
  int B = 0, T = 0, steps = 5, warmup = 1;
  bool recompute = false, cpu_time = false;
  app.add_option("--model", preset, "model preset, llama-125m, or a Hugging Face directory or model file")
      ->capture_default_str();
  app.add_option("--batch", B, "micro-batch size B (default: 4)");
  app.add_option("--seq", T, "sequence length T (default: 64, 256 for llama-125m)");
  app.add_option("--steps", steps, "measured steps")->capture_default_str();
  app.add_option("--warmup", warmup, "steps run before measuring")->capture_default_str();
  app.add_flag("--recompute", recompute, "recompute each block's forward in backward");
  app.add_flag("--cpu-time", cpu_time,
               "time steps, phases and kernels by the main thread's CPU time instead of the wall clock (with "
               "OMP_NUM_THREADS=1, the step's whole CPU time: what to compare on a machine other jobs share)");
  CLI11_PARSE(app, argc, argv);
  KernelProfile::use_thread_cpu_time(cpu_time);

  std::optional<BenchModel> bench;
  try {
    bench = bench_model(preset);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_step: %s\n", e.what());
    return 2;
  }
  if (!bench) {
    std::fprintf(stderr, "unknown model preset %s\n", preset.c_str());
    return 2;
  }
  const GptShape* shape = &bench->shape;
  if (B == 0) B = bench->batch;
  if (T == 0) T = bench->seq;
  try {
    Gpt model(*shape, B, T, recompute);
    const ParamLayout& layout = model.layout();
    TimedHooks hooks(layout);
    auto t_init = SteadyClock::now();
    model.init_params(hooks.params.data(), 0, layout.total, 1234);
    const double init_s = seconds_since(t_init);
    Buffer<float> m(MemCategory::Optimizer, layout.total), v(MemCategory::Optimizer, layout.total);
    AdamWHyper hyper{};
    hyper.lr = 6e-4f;
    hyper.beta1 = 0.9f;
    hyper.beta2 = 0.95f;
    hyper.eps = 1e-8f;
    hyper.weight_decay = 0.1f;

    std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    Rng rng(7);
    for (size_t i = 0; i < inputs.size(); i++) {
      inputs[i] = int32_t(rng.below(uint64_t(shape->vocab_size)));
      targets[i] = int32_t(rng.below(uint64_t(shape->vocab_size)));
    }

    std::printf("bench_step: %s (%s; %zu parameters, flat buffer %zu), B=%d T=%d, fp32, %d OpenMP threads%s%s\n",
                preset.c_str(), describe(*shape).c_str(), model.num_params(), layout.total, B, T, omp_get_max_threads(),
                recompute ? ", recompute" : "", cpu_time ? "; times are the main thread's CPU time" : "");
    std::printf("load average before: %s; init %.2f s\n", load_average().c_str(), init_s);

    enum Phase { ZeroGrad, Forward, Backward, Clip, AdamW, PhaseCount };
    const char* phase_names[PhaseCount] = {"zero grads", "forward", "backward", "grad norm + clip", "AdamW"};
    // Everything measured about one step; the breakdown printed is that of the median step, so
    // a step slowed by other processes on the machine does not blur it.
    struct StepRecord {
      double total = 0;
      double phase[PhaseCount] = {};
      cpu::KernelTotals kernels;
      std::vector<double> groups;
    };
    std::vector<StepRecord> records;
    VectorOps& vector = cpu_backend().vector;
    for (int s = 0; s < warmup + steps; s++) {
      const bool measured = s >= warmup;
      StepRecord rec;
      cpu::KernelProfile::reset();
      cpu::KernelProfile::enable(measured);
      std::fill(hooks.group_seconds.begin(), hooks.group_seconds.end(), 0.0);
      const double step0 = KernelProfile::now();
      double t0 = step0;
      auto since = [](double t) { return KernelProfile::now() - t; };
      hooks.zero_grads();
      rec.phase[ZeroGrad] = since(t0);
      t0 = KernelProfile::now();
      hooks.mark();
      const float loss = model.forward(inputs.data(), targets.data(), B, T, hooks);
      hooks.charge(0);
      rec.phase[Forward] = since(t0);
      t0 = KernelProfile::now();
      hooks.mark();
      model.backward(hooks, 1.0f);
      rec.phase[Backward] = since(t0);
      t0 = KernelProfile::now();
      const double norm =
          std::sqrt(vector.sum_of_squares({hooks.grad.data(), DType::F32, MemSpace::Host}, layout.total, 1.0f));
      const float clip = float(clip_coefficient(norm, 1.0));
      float* grad = hooks.grad.data();
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < layout.total; ++i) grad[i] *= clip;
      rec.phase[Clip] = since(t0);
      t0 = KernelProfile::now();
      for (auto& g : layout.groups)
        for (auto& ts : g.tensors)
          adamw_update(hooks.params.data() + ts.offset, hooks.grad.data() + ts.offset, m.data() + ts.offset,
                       v.data() + ts.offset, ts.numel(), hyper, s + 1, ts.weight_decay);
      rec.phase[AdamW] = since(t0);
      rec.total = since(step0);
      rec.kernels = cpu::KernelProfile::totals();
      rec.groups = hooks.group_seconds;
      std::printf("  step %d%s: %.1f ms  loss %.4f  grad norm %.3f\n", s + 1, measured ? "" : " (warm-up)",
                  rec.total * 1e3, loss, norm);
      if (measured) records.push_back(std::move(rec));
    }
    cpu::KernelProfile::enable(false);

    std::vector<double> step_ms;
    for (auto& r : records) step_ms.push_back(r.total * 1e3);
    const double med = median(step_ms);
    std::sort(records.begin(), records.end(), [](auto& a, auto& b) { return a.total < b.total; });
    const StepRecord& mid = records[(records.size() - 1) / 2];
    const double tokens = double(B) * T;
    std::printf(
        "\nmedian step: %.1f ms over %d steps (min %.1f, max %.1f); %.0f tokens/s; %.1f GFLOP/s by 6N+attention\n", med,
        steps, records.front().total * 1e3, records.back().total * 1e3, tokens / (med * 1e-3),
        double(model.flops_per_token()) * tokens / (med * 1e-3) / 1e9);

    std::printf("\nbreakdown of the median step (%.1f ms), per phase:\n", mid.total * 1e3);
    for (int p = 0; p < PhaseCount; p++) std::printf("  %-18s %8.1f ms\n", phase_names[p], mid.phase[p] * 1e3);

    const double matmul_flops = 3.0 * matmul_forward_flops(*shape, tokens);  // backward: twice the forward
    double kernel_sum = 0;
    std::printf("per kernel kind:\n");
    for (int k = 0; k < cpu::kKernelKinds; k++) {
      const double sec = mid.kernels.seconds[k];
      kernel_sum += sec;
      if (mid.kernels.calls[k] == 0) continue;
      std::printf("  %-18s %8.1f ms  %5ld calls\n", std::string(cpu::kernel_kind_name(cpu::KernelKind(k))).c_str(),
                  sec * 1e3, mid.kernels.calls[k]);
    }
    std::printf("  %-18s %8.1f ms  (forward + backward outside the kernels: buffer zeroing, hooks)\n", "other",
                (mid.phase[Forward] + mid.phase[Backward] - kernel_sum) * 1e3);
    const double matmul_s = mid.kernels.seconds[int(cpu::KernelKind::MatmulForward)] +
                            mid.kernels.seconds[int(cpu::KernelKind::MatmulBackward)];
    std::printf("  matmuls: %.1f GFLOP per step at %.1f GFLOP/s\n", matmul_flops / 1e9, matmul_flops / matmul_s / 1e9);

    std::printf("per parameter group, forward + backward:\n");
    double blocks = 0;
    for (int l = 0; l < shape->n_layer; l++) blocks += mid.groups[size_t(gpt_block_group(l))];
    const int head = gpt_head_group(*shape);
    std::printf("  %-18s %8.1f ms  (embedding lookup%s, softmax + cross-entropy)\n", "embeddings",
                mid.groups[0] * 1e3, head == kEmbeddingsGroup ? ", LM head" : "");
    std::printf("  %-18s %8.1f ms  (%d blocks)\n", "transformer blocks", blocks * 1e3, shape->n_layer);
    std::printf("  %-18s %8.1f ms\n", "final norm", mid.groups[size_t(gpt_ln_f_group(*shape))] * 1e3);
    if (head != kEmbeddingsGroup) std::printf("  %-18s %8.1f ms\n", "LM head", mid.groups[size_t(head)] * 1e3);
    std::printf("load average after: %s\n", load_average().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
