// The CUDA kernels of one training step at GPT-2 124M shapes (C = 768, 12 heads, Vp = 50304) or at
// Llama 3.2 1B's (C = 2048, 32 query heads over 8 key/value heads of 64, d_ff 8192, Vp = 128256):
// each op's mean time over timed repetitions (CUDA events, after warm-up runs) and its rate, TFLOP/s
// for the matmuls and attention, GB/s of compulsory traffic for the memory-bound ops. Not a test.
//
//   bench_kernels                         # GPT-2 124M, bf16, B = 8, T = 1024
//   bench_kernels --dtype fp32 --batch 16
//   bench_kernels --model llama-3.2-1b    # the llama family's kernels (RMSNorm, RoPE, SwiGLU, GQA)
//   bench_kernels_emulated --model toy --batch 1 --seq 16 --iters 1   # the emulated GPU's run of it
//   bench_kernels --moe qwen3-30b-a3b --batch 4 --seq 1024   # one sparse layer's experts: one cuBLASLt
//                                                           # GEMM per expert against the grouped GEMM
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/rng.hpp"
#include "kernels/cuda/cuda_adamw.hpp"
#include "kernels/cuda/cuda_attention.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/classifier.hpp"
#include "kernels/cuda/cuda_embedding.hpp"
#include "kernels/cuda/cuda_gelu.hpp"
#include "kernels/cuda/cuda_layernorm.hpp"
#include "kernels/cuda/cuda_matmul.hpp"
#include "kernels/cuda/cuda_moe.hpp"
#include "kernels/cuda/cuda_moe_gemm.hpp"
#include "kernels/cuda/cuda_rmsnorm.hpp"
#include "kernels/cuda/cuda_rope.hpp"
#include "kernels/cuda/cuda_swiglu.hpp"
#include "kernels/cuda/cuda_vector_ops.hpp"

using namespace zt;

namespace {

// A device allocation filled with N(0, scale²) values of type dt (a random block, repeated).
struct Buffer {
  Buffer(size_t n, DType dt, float scale = 1.0f) : bytes(n * dtype_size(dt)) {
    ZT_CUDA_CHECK(cudaMalloc(&ptr, bytes ? bytes : 1));
    constexpr size_t kBlock = 1 << 20;
    std::vector<float> values(std::min(n, kBlock));
    Rng rng(uint64_t(n) + 7);
    for (auto& v : values) v = float(rng.normal()) * scale;
    std::vector<unsigned char> block(values.size() * dtype_size(dt));
    from_f32(dt, values.data(), block.data(), values.size());
    for (size_t at = 0; at < bytes; at += block.size())
      ZT_CUDA_CHECK(cudaMemcpy(static_cast<char*>(ptr) + at, block.data(), std::min(block.size(), bytes - at),
                               cudaMemcpyHostToDevice));
  }
  ~Buffer() { cudaFree(ptr); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  template <typename T>
  T* as() const { return static_cast<T*>(ptr); }
  void* ptr = nullptr;
  size_t bytes;
};

// Mean milliseconds of op() over `iters` runs after 3 warm-up runs.
double time_ms(const std::function<void()>& op, int iters) {
  for (int i = 0; i < 3; i++) op();
  cudaEvent_t start, stop;
  ZT_CUDA_CHECK(cudaEventCreate(&start));
  ZT_CUDA_CHECK(cudaEventCreate(&stop));
  ZT_CUDA_CHECK(cudaEventRecord(start, nullptr));
  for (int i = 0; i < iters; i++) op();
  ZT_CUDA_CHECK(cudaEventRecord(stop, nullptr));
  ZT_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  ZT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return double(ms) / iters;
}

void report_flops(const char* name, double ms, double flops) {
  std::printf("%-34s %9.3f ms %9.1f TFLOP/s\n", name, ms, flops / (ms * 1e-3) / 1e12);
}

void report_bytes(const char* name, double ms, double bytes) {
  std::printf("%-34s %9.3f ms %9.1f GB/s\n", name, ms, bytes / (ms * 1e-3) / 1e9);
}

// The shapes of a model's step.
struct Model {
  const char* name;
  bool llama;          // RMSNorm, RoPE, SwiGLU, [out, in] weights without biases; else GPT-2's
  int C, NH, NKV, hd;  // width, query heads, key/value heads, head size
  int F;               // the MLP's hidden width (GPT-2: 4C; the llama family: d_ff, SwiGLU's input 2F)
  int V, Vp;           // vocabulary, padded to a multiple of 128
  size_t P;            // flat parameters (padded vocabulary), for AdamW
};

const Model kModels[] = {
    {"gpt2-124m", false, 768, 12, 12, 64, 3072, 50257, 50304, 124'475'904},
    {"llama-3.2-1b", true, 2048, 32, 8, 64, 8192, 128256, 128256, 1'235'814'400},
    // zerotrain's tiny presets, for bench_kernels_emulated (bench/gpu_rehearsal.sh).
    {"toy", false, 64, 4, 4, 16, 256, 256, 256, 124'672},
    {"llama-tiny", true, 64, 4, 2, 16, 176, 256, 256, 108'864},
};

struct Run {
  const Model& m;
  DType dt;
  size_t es;  // bytes per element
  int B, T, N, iters;
};

void bench_matmuls(const Run& r, cuda::MatmulContext& ctx) {
  struct Proj {
    std::string name;
    int in, out;
    cuda::WeightLayout layout;
    bool bias, gelu;
  };
  const Model& m = r.m;
  const int Q = m.NH * m.hd, QKV = (m.NH + 2 * m.NKV) * m.hd;
  std::vector<Proj> projs;
  if (m.llama) {  // nn.Linear weights [out, in], no biases
    const auto O = cuda::WeightLayout::OutputMajor;
    projs = {{"matmul qkv    C -> (NH+2NKV)hd", m.C, QKV, O, false, false},
             {"matmul o_proj NH·hd -> C", Q, m.C, O, false, false},
             {"matmul gate_up  C -> 2F", m.C, 2 * m.F, O, false, false},
             {"matmul down     F -> C", m.F, m.C, O, false, false}};
  } else {  // Conv1D weights [in, out] with biases
    const auto I = cuda::WeightLayout::InputMajor;
    projs = {{"matmul qkv      C -> 3C", m.C, 3 * m.C, I, true, false},
             {"matmul attn.proj C -> C", m.C, m.C, I, true, false},
             {"matmul fc       C -> 4C", m.C, m.F, I, true, true},
             {"matmul fc.proj 4C -> C", m.F, m.C, I, true, false}};
  }
  projs.push_back({"matmul lm_head  C -> Vp", m.C, m.Vp, cuda::WeightLayout::OutputMajor, false, false});
  const int N = r.N;
  for (const Proj& p : projs) {
    Buffer inp(size_t(N) * p.in, r.dt), w(size_t(p.in) * p.out, r.dt, 0.02f), b(size_t(p.out), r.dt);
    Buffer out(size_t(N) * p.out, r.dt), dinp(size_t(N) * p.in, r.dt), dw(size_t(p.in) * p.out, r.dt),
        db(size_t(p.out), r.dt);
    const double flops = 2.0 * N * p.in * p.out;
    report_flops((p.name + " fwd").c_str(), time_ms([&] {
      cuda::matmul_forward(ctx, r.dt, out.ptr, inp.ptr, w.ptr, p.bias ? b.ptr : nullptr, N, p.in, p.out, p.layout,
                           nullptr);
    }, r.iters), flops);
    report_flops((p.name + " bwd").c_str(), time_ms([&] {
      cuda::matmul_backward(ctx, r.dt, dinp.ptr, dw.ptr, p.bias ? db.ptr : nullptr, out.ptr, inp.ptr, w.ptr, N, p.in,
                            p.out, p.layout, nullptr, GradInto::Overwrite);
    }, r.iters), 2 * flops);
    if (p.gelu) {
      Buffer pre(size_t(N) * p.out, r.dt);
      report_flops((p.name + " fwd+gelu").c_str(), time_ms([&] {
        cuda::matmul_forward(ctx, r.dt, out.ptr, inp.ptr, w.ptr, b.ptr, N, p.in, p.out, p.layout, nullptr, pre.ptr);
      }, r.iters), flops);
    }
  }
}

// Causal attention; FLOPs as FlashAttention counts them: causal halves the square, backward 2.5x.
void bench_attention(const Run& r) {
  const Model& m = r.m;
  const cuda::AttentionShape shape{r.B, r.T, m.NH, m.NKV, m.hd};
  const size_t width = size_t(m.NH + 2 * m.NKV) * m.hd, Q = size_t(m.NH) * m.hd;
  Buffer qkv(size_t(r.N) * width, r.dt), out(size_t(r.N) * Q, r.dt), dout(size_t(r.N) * Q, r.dt);
  Buffer dqkv(size_t(r.N) * width, r.dt), lse(size_t(r.B) * m.NH * r.T, DType::F32);
  Buffer scratch(cuda::attention_backward_scratch_floats(r.B, r.T, m.NH), DType::F32);
  const double flops = 4.0 * r.B * double(r.T) * r.T * double(Q) / 2;
  const std::string kind = m.NKV < m.NH ? "attention (GQA)" : "attention";
  report_flops((kind + " fwd").c_str(), time_ms([&] {
    cuda::attention_forward(r.dt, out.ptr, lse.as<float>(), qkv.ptr, shape, nullptr);
  }, r.iters), flops);
  report_flops((kind + " bwd").c_str(), time_ms([&] {
    cuda::attention_backward(r.dt, dqkv.ptr, scratch.as<float>(), dout.ptr, qkv.ptr, out.ptr, lse.as<float>(), shape,
                             nullptr, GradInto::Overwrite);
  }, r.iters), 2.5 * flops);
}

// GPT-2's LayerNorm and GELU: forward reads x, writes y; backward reads x, dy and dx, writes dx.
void bench_gpt2_elementwise(const Run& r) {
  const int N = r.N, C = r.m.C;
  Buffer x(size_t(N) * C, r.dt), y(size_t(N) * C, r.dt), w(C, r.dt), b(C, r.dt), dw(C, r.dt), db(C, r.dt);
  Buffer mean(N, DType::F32), rstd(N, DType::F32), dx(size_t(N) * C, r.dt);
  Buffer scratch(cuda::layernorm_backward_scratch_floats(N, C), DType::F32);
  const double tensor = double(N) * C * r.es;
  report_bytes("layernorm fwd", time_ms([&] {
    cuda::layernorm_forward(r.dt, y.ptr, mean.as<float>(), rstd.as<float>(), x.ptr, w.ptr, b.ptr, N, C, nullptr);
  }, r.iters), 2 * tensor);
  report_bytes("layernorm bwd", time_ms([&] {
    cuda::layernorm_backward(r.dt, dx.ptr, dw.ptr, db.ptr, scratch.as<float>(), y.ptr, x.ptr, w.ptr, mean.as<float>(),
                             rstd.as<float>(), N, C, nullptr);
  }, r.iters), 4 * tensor);
  report_bytes("gelu fwd (4C)", time_ms([&] { cuda::gelu_forward(r.dt, dx.ptr, x.ptr, size_t(N) * C, nullptr); },
                                        r.iters), 2 * tensor);
}

// The llama family's RMSNorm (the block's, and the residual fused into the second), RoPE on the q
// and k heads, SwiGLU: bytes of the tensors each reads and writes once.
void bench_llama_elementwise(const Run& r) {
  const Model& m = r.m;
  const int N = r.N, C = m.C, F = m.F;
  {
    Buffer x(size_t(N) * C, r.dt), a(size_t(N) * C, r.dt), y(size_t(N) * C, r.dt), w(C, r.dt), dw(C, r.dt);
    Buffer rstd(N, DType::F32), dx(size_t(N) * C, r.dt);
    Buffer scratch(cuda::rmsnorm_backward_scratch_floats(N, C), DType::F32);
    const double tensor = double(N) * C * r.es;
    report_bytes("rmsnorm fwd", time_ms([&] {
      cuda::rmsnorm_forward(r.dt, y.ptr, rstd.as<float>(), x.ptr, w.ptr, N, C, 1e-5f, nullptr);
    }, r.iters), 2 * tensor);
    report_bytes("residual + rmsnorm fwd", time_ms([&] {
      cuda::residual_rmsnorm_forward(r.dt, dx.ptr, y.ptr, rstd.as<float>(), x.ptr, a.ptr, w.ptr, N, C, 1e-5f, nullptr);
    }, r.iters), 4 * tensor);
    report_bytes("rmsnorm bwd (dx +=, dweight)", time_ms([&] {
      cuda::rmsnorm_backward(r.dt, dx.ptr, dw.ptr, scratch.as<float>(), y.ptr, x.ptr, w.ptr, rstd.as<float>(), N, C,
                             nullptr);
    }, r.iters), 4 * tensor);
  }
  {
    const size_t width = size_t(m.NH + 2 * m.NKV) * m.hd, rotated = size_t(N) * (m.NH + m.NKV) * m.hd;
    Buffer qkv(size_t(N) * width, r.dt), cos(size_t(r.T) * m.hd / 2, DType::F32),
        sin(size_t(r.T) * m.hd / 2, DType::F32);
    report_bytes("rope fwd (q, k in place)", time_ms([&] {
      cuda::rope_forward(r.dt, qkv.ptr, cos.as<float>(), sin.as<float>(), r.B, r.T, m.NH, m.NKV, m.hd, nullptr);
    }, r.iters), 2.0 * rotated * r.es);
    report_bytes("rope bwd", time_ms([&] {
      cuda::rope_backward(r.dt, qkv.ptr, cos.as<float>(), sin.as<float>(), r.B, r.T, m.NH, m.NKV, m.hd, nullptr);
    }, r.iters), 2.0 * rotated * r.es);
  }
  {
    Buffer inp(size_t(N) * 2 * F, r.dt, 2.0f), out(size_t(N) * F, r.dt), dinp(size_t(N) * 2 * F, r.dt);
    const double half = double(N) * F * r.es;
    report_bytes("swiglu fwd (2F -> F)", time_ms([&] { cuda::swiglu_forward(r.dt, out.ptr, inp.ptr, N, F, nullptr); },
                                                 r.iters), 3 * half);
    report_bytes("swiglu bwd (written over)", time_ms([&] {
      cuda::swiglu_backward(r.dt, dinp.ptr, inp.ptr, out.ptr, N, F, nullptr, GradInto::Overwrite);
    }, r.iters), 5 * half);
  }
}

// The classifier: the logits read and the gradient written once each (fused reads them twice).
void bench_classifier(const Run& r) {
  const int N = r.N, V = r.m.V, Vp = r.m.Vp;
  Buffer logits(size_t(N) * Vp, r.dt), lse(N, DType::F32), losses(N, DType::F32), mean(1, DType::F32);
  std::vector<int32_t> targets(static_cast<size_t>(N));
  Rng rng(5);
  for (auto& t : targets) t = int32_t(rng.below(uint64_t(V)));
  int32_t* dtargets = nullptr;
  ZT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dtargets), targets.size() * 4));
  ZT_CUDA_CHECK(cudaMemcpy(dtargets, targets.data(), targets.size() * 4, cudaMemcpyHostToDevice));
  const double tensor = double(N) * Vp * r.es;
  report_bytes("classifier fwd", time_ms([&] {
    cuda::classifier_forward(r.dt, lse.as<float>(), losses.as<float>(), mean.as<float>(), logits.ptr, dtargets, N, V,
                             Vp, nullptr);
  }, r.iters), tensor);
  // fused and backward overwrite the logits with gradients: the values change, the work does not
  report_bytes("classifier fused fwd+bwd", time_ms([&] {
    cuda::classifier_fused(r.dt, logits.ptr, lse.as<float>(), losses.as<float>(), mean.as<float>(), dtargets, 1.0f / N,
                           N, V, Vp, nullptr);
  }, r.iters), 2 * tensor);
  cudaFree(dtargets);
}

// AdamW over the model's parameters: reads grad, master, m, v; writes master, m, v (and 16-bit params).
void bench_adamw(const Run& r) {
  const size_t P = r.m.P;
  Buffer master(P, DType::F32, 0.02f), m(P, DType::F32, 0.0f), v(P, DType::F32, 0.0f), grads(P, r.dt, 1e-3f);
  Buffer params(P, r.dt);
  const bool sixteen = r.dt != DType::F32;
  const AdamWHyper config{6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
  const double bytes = double(P) * (3 * 4 * 2 + r.es + (sixteen ? r.es : 0));
  const std::string name = "adamw (" + std::to_string((P + 500'000) / 1'000'000) + "M params)";
  report_bytes(name.c_str(), time_ms([&] {
    cuda::adamw_update(master.as<float>(), m.as<float>(), v.as<float>(), grads.ptr, r.dt, 1.0f,
                       sixteen ? params.ptr : nullptr, r.dt, P, true, config, 1, nullptr);
  }, r.iters), bytes);
}

// The experts of one sparse layer (SwiGLU experts: gate and up [2I, C], down [C, I], [out, in]).
struct MoeLayer {
  const char* name;
  int E, K, C, I;
};

const MoeLayer kMoeLayers[] = {
    {"qwen3-30b-a3b", 128, 8, 2048, 768},  // Qwen3-30B-A3B's sparse layers
    {"qwen3-moe-tiny", 8, 2, 64, 32},      // for bench_kernels_emulated
};

// The experts' four products of a layer over N tokens routed at random: one cuBLASLt GEMM per
// expert over its rows (the counts read on the host beforehand, as model/moe_block.cpp once did)
// against one grouped GEMM per product over every expert (the offsets read on the device).
void bench_moe(const MoeLayer& l, DType dt, int N, int iters) {
  const int R = N * l.K, E = l.E, C = l.C, I = l.I;
  const size_t stride = 3 * size_t(I) * C, es = dtype_size(dt);
  Buffer logits(size_t(N) * E, dt), probs(size_t(N) * E, DType::F32), weights(size_t(N) * l.K, DType::F32);
  Buffer experts(size_t(R), DType::F32), offsets(size_t(E) + 1, DType::F32), token(size_t(R), DType::F32),
      row(size_t(R), DType::F32);
  cuda::moe_route(dt, probs.as<float>(), experts.as<int32_t>(), weights.as<float>(), logits.ptr, N, E, l.K, true,
                  nullptr);
  cuda::moe_group(offsets.as<int32_t>(), token.as<int32_t>(), row.as<int32_t>(), experts.as<int32_t>(), N, E, l.K,
                  nullptr);
  std::vector<int32_t> host(size_t(E) + 1);
  ZT_CUDA_CHECK(cudaMemcpy(host.data(), offsets.ptr, host.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
  int busiest = 0;
  for (int e = 0; e < E; e++) busiest = std::max(busiest, host[size_t(e) + 1] - host[size_t(e)]);
  std::printf("experts: E = %d, top-%d, C = %d, I = %d; N = %d tokens, R = %d rows, the busiest expert %d rows "
              "(mean %.1f)\n\n", E, l.K, C, I, N, R, busiest, double(R) / E);

  Buffer rows(size_t(R) * C, dt), w(stride * E, dt, 0.02f), dw(stride * E, dt), gate_up(size_t(R) * 2 * I, dt),
      act(size_t(R) * I, dt), y(size_t(R) * C, dt), dy(size_t(R) * C, dt), dact(size_t(R) * I, dt),
      dgate_up(size_t(R) * 2 * I, dt), drows(size_t(R) * C, dt);
  auto at = [&](const Buffer& b, size_t elements) { return static_cast<char*>(b.ptr) + elements * es; };
  const auto O = cuda::WeightLayout::OutputMajor;
  cuda::MatmulContext ctx;
  const double flops = 6.0 * R * C * I;  // gate_up (2·R·C·2I) and down (2·R·I·C)
  const double per_expert_fwd = time_ms([&] {
    for (int e = 0; e < E; e++) {
      const int first = host[size_t(e)], n = host[size_t(e) + 1] - first;
      if (n == 0) continue;
      cuda::matmul_forward(ctx, dt, at(gate_up, size_t(first) * 2 * I), at(rows, size_t(first) * C),
                           at(w, e * stride), nullptr, n, C, 2 * I, O, nullptr);
      cuda::matmul_forward(ctx, dt, at(y, size_t(first) * C), at(act, size_t(first) * I),
                           at(w, e * stride + 2 * size_t(I) * C), nullptr, n, I, C, O, nullptr);
    }
  }, iters);
  const double grouped_fwd = time_ms([&] {
    cuda::moe_expert_forward(dt, gate_up.ptr, rows.ptr, w.ptr, stride, offsets.as<int32_t>(), E, R, C, 2 * I, nullptr);
    cuda::moe_expert_forward(dt, y.ptr, act.ptr, at(w, 2 * size_t(I) * C), stride, offsets.as<int32_t>(), E, R, I, C,
                             nullptr);
  }, iters);
  const double per_expert_bwd = time_ms([&] {
    for (int e = 0; e < E; e++) {
      const int first = host[size_t(e)], n = host[size_t(e) + 1] - first;
      if (n == 0) continue;
      cuda::matmul_backward(ctx, dt, at(dact, size_t(first) * I), at(dw, e * stride + 2 * size_t(I) * C), nullptr,
                            at(dy, size_t(first) * C), at(act, size_t(first) * I),
                            at(w, e * stride + 2 * size_t(I) * C), n, I, C, O, nullptr, GradInto::Overwrite);
      cuda::matmul_backward(ctx, dt, at(drows, size_t(first) * C), at(dw, e * stride), nullptr,
                            at(dgate_up, size_t(first) * 2 * I), at(rows, size_t(first) * C), at(w, e * stride), n, C,
                            2 * I, O, nullptr, GradInto::Overwrite);
    }
  }, iters);
  const double grouped_bwd = time_ms([&] {
    cuda::moe_expert_backward(dt, dact.ptr, at(dw, 2 * size_t(I) * C), dy.ptr, act.ptr, at(w, 2 * size_t(I) * C),
                              stride, offsets.as<int32_t>(), E, R, I, C, GradInto::Overwrite, nullptr);
    cuda::moe_expert_backward(dt, drows.ptr, dw.ptr, dgate_up.ptr, rows.ptr, w.ptr, stride, offsets.as<int32_t>(), E,
                              R, C, 2 * I, GradInto::Overwrite, nullptr);
  }, iters);
  report_flops("experts fwd, a GEMM per expert", per_expert_fwd, flops);
  report_flops("experts fwd, grouped", grouped_fwd, flops);
  report_flops("experts bwd, a GEMM per expert", per_expert_bwd, 2 * flops);
  report_flops("experts bwd, grouped", grouped_bwd, 2 * flops);
  std::printf("grouped / per expert: fwd %.2f, bwd %.2f (time; below 1: the grouped GEMM is faster)\n",
              grouped_fwd / per_expert_fwd, grouped_bwd / per_expert_bwd);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CUDA kernels at GPT-2 124M or Llama 3.2 1B shapes"};
  int B = 8, T = 1024, iters = 20;
  std::string dtype_arg = "bf16", model_arg = "gpt2-124m";
  std::vector<std::string> names;
  for (const Model& m : kModels) names.push_back(m.name);
  app.add_option("--model", model_arg, "the shapes: gpt2-124m, llama-3.2-1b, or the tiny toy and llama-tiny")
      ->check(CLI::IsMember(names));
  app.add_option("--batch", B, "B (sequences per batch)")->check(CLI::PositiveNumber);
  app.add_option("--seq", T, "T (tokens per sequence)")->check(CLI::PositiveNumber);
  app.add_option("--dtype", dtype_arg, "bf16 or fp32")->check(CLI::IsMember({"bf16", "fp32"}));
  app.add_option("--iters", iters, "timed repetitions per op")->check(CLI::PositiveNumber);
  std::string moe_arg;
  std::vector<std::string> moe_names;
  for (const MoeLayer& l : kMoeLayers) moe_names.push_back(l.name);
  app.add_option("--moe", moe_arg,
                 "instead: one sparse layer's experts over B·T tokens (qwen3-30b-a3b, or the tiny qwen3-moe-tiny), "
                 "a GEMM per expert against the grouped GEMM")
      ->check(CLI::IsMember(moe_names));
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_kernels: no CUDA device\n");
    return 1;
  }
  try {
    const Model& model = *std::find_if(std::begin(kModels), std::end(kModels),
                                       [&](const Model& m) { return model_arg == m.name; });
    const DType dt = dtype_from_name(dtype_arg);
    if (!moe_arg.empty()) {
      std::printf("bench_kernels --moe %s --batch %d --seq %d --dtype %s --iters %d\n", moe_arg.c_str(), B, T,
                  dtype_arg.c_str(), iters);
      bench_moe(*std::find_if(std::begin(kMoeLayers), std::end(kMoeLayers),
                              [&](const MoeLayer& l) { return moe_arg == l.name; }),
                dt, B * T, iters);
      ZT_CUDA_CHECK(cudaDeviceSynchronize());
      return 0;
    }
    const Run run{model, dt, dtype_size(dt), B, T, B * T, iters};
    cudaDeviceProp prop{};
    ZT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("bench_kernels --model %s --batch %d --seq %d --dtype %s --iters %d\n", model.name, B, T,
                dtype_arg.c_str(), iters);
    std::printf("device: %s, %d SMs; C = %d, NH = %d, NKV = %d, hd = %d, F = %d, Vp = %d, N = B·T = %d\n\n",
                prop.name, prop.multiProcessorCount, model.C, model.NH, model.NKV, model.hd, model.F, model.Vp, run.N);
    {
      cuda::MatmulContext ctx;
      bench_matmuls(run, ctx);
    }
    bench_attention(run);
    if (model.llama) bench_llama_elementwise(run);
    else bench_gpt2_elementwise(run);
    bench_classifier(run);
    bench_adamw(run);
    ZT_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels: %s\n", e.what());
    return 1;
  }
  return 0;
}
