// The CUDA kernels at GPT-2 124M shapes (C = 768, 12 heads, T = 1024, Vp = 50304): each op's mean
// time over timed repetitions (CUDA events, after warm-up runs) and its rate, TFLOP/s for the
// matmuls and attention, GB/s of compulsory traffic for the memory-bound ops. Not a test.
//
//   bench_kernels                         # bf16, B = 8, T = 1024
//   bench_kernels --dtype fp32 --batch 16
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/rng.hpp"
#include "kernels/cuda/adamw.hpp"
#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/classifier.hpp"
#include "kernels/cuda/embedding.hpp"
#include "kernels/cuda/gelu.hpp"
#include "kernels/cuda/layernorm.hpp"
#include "kernels/cuda/matmul.hpp"
#include "kernels/cuda/vector_ops.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CUDA kernels at GPT-2 124M shapes"};
  int B = 8, T = 1024, iters = 20;
  std::string dtype_arg = "bf16";
  app.add_option("--batch", B, "B (sequences per batch)")->check(CLI::PositiveNumber);
  app.add_option("--seq", T, "T (tokens per sequence)")->check(CLI::PositiveNumber);
  app.add_option("--dtype", dtype_arg, "bf16 or fp32")->check(CLI::IsMember({"bf16", "fp32"}));
  app.add_option("--iters", iters, "timed repetitions per op")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_kernels: no CUDA device\n");
    return 1;
  }
  try {
    const DType dt = dtype_from_name(dtype_arg);
    const size_t es = dtype_size(dt);
    const int C = 768, NH = 12, V = 50257, Vp = 50304;
    const int N = B * T;
    cudaDeviceProp prop{};
    ZT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("bench_kernels --batch %d --seq %d --dtype %s --iters %d\n", B, T, dtype_arg.c_str(), iters);
    std::printf("device: %s, %d SMs; C = %d, NH = %d, Vp = %d, N = B·T = %d\n\n", prop.name, prop.multiProcessorCount,
                C, NH, Vp, N);

    cuda::MatmulContext ctx;
    {  // the block's four projections and the LM head (tied to wte: OutputMajor)
      struct Proj {
        const char* name;
        int in, out;
        cuda::WeightLayout layout;
      };
      const Proj projs[] = {{"matmul qkv      C -> 3C", C, 3 * C, cuda::WeightLayout::InputMajor},
                            {"matmul attn.proj C -> C", C, C, cuda::WeightLayout::InputMajor},
                            {"matmul fc       C -> 4C", C, 4 * C, cuda::WeightLayout::InputMajor},
                            {"matmul fc.proj 4C -> C", 4 * C, C, cuda::WeightLayout::InputMajor},
                            {"matmul lm_head  C -> Vp", C, Vp, cuda::WeightLayout::OutputMajor}};
      for (const Proj& p : projs) {
        Buffer inp(size_t(N) * p.in, dt), w(size_t(p.in) * p.out, dt, 0.02f), b(size_t(p.out), dt);
        Buffer out(size_t(N) * p.out, dt), dinp(size_t(N) * p.in, dt), dw(size_t(p.in) * p.out, dt),
            db(size_t(p.out), dt);
        const bool bias = p.layout == cuda::WeightLayout::InputMajor;
        const double flops = 2.0 * N * p.in * p.out;
        const std::string name = p.name;
        report_flops((name + " fwd").c_str(), time_ms([&] {
          cuda::matmul_forward(ctx, dt, out.ptr, inp.ptr, w.ptr, bias ? b.ptr : nullptr, N, p.in, p.out, p.layout,
                               nullptr);
        }, iters), flops);
        report_flops((name + " bwd").c_str(), time_ms([&] {
          cuda::matmul_backward(ctx, dt, dinp.ptr, dw.ptr, bias ? db.ptr : nullptr, out.ptr, inp.ptr, w.ptr, N, p.in,
                                p.out, p.layout, nullptr);
        }, iters), 2 * flops);
        if (p.out == 4 * C) {
          Buffer pre(size_t(N) * p.out, dt);
          report_flops((name + " fwd+gelu").c_str(), time_ms([&] {
            cuda::matmul_forward(ctx, dt, out.ptr, inp.ptr, w.ptr, b.ptr, N, p.in, p.out, p.layout, nullptr, pre.ptr);
          }, iters), flops);
        }
      }
    }
    {  // attention; FLOPs as FlashAttention counts them: causal halves the square, backward 2.5x
      Buffer qkv(size_t(N) * 3 * C, dt), out(size_t(N) * C, dt), dout(size_t(N) * C, dt), dqkv(size_t(N) * 3 * C, dt);
      Buffer lse(size_t(B) * NH * T, DType::F32);
      Buffer scratch(cuda::attention_backward_scratch_floats(B, T, NH), DType::F32);
      const double flops = 4.0 * B * double(T) * T * C / 2;
      report_flops("attention fwd", time_ms([&] {
        cuda::attention_forward(dt, out.ptr, lse.as<float>(), qkv.ptr, B, T, C, NH, nullptr);
      }, iters), flops);
      report_flops("attention bwd", time_ms([&] {
        cuda::attention_backward(dt, dqkv.ptr, scratch.as<float>(), dout.ptr, qkv.ptr, out.ptr, lse.as<float>(), B, T,
                                 C, NH, nullptr);
      }, iters), 2.5 * flops);
    }
    {  // layernorm: forward reads x, writes y; backward reads x, dy and dx, writes dx
      Buffer x(size_t(N) * C, dt), y(size_t(N) * C, dt), w(C, dt), b(C, dt), dw(C, dt), db(C, dt);
      Buffer mean(N, DType::F32), rstd(N, DType::F32), dx(size_t(N) * C, dt);
      Buffer scratch(cuda::layernorm_backward_scratch_floats(N, C), DType::F32);
      const double tensor = double(N) * C * es;
      report_bytes("layernorm fwd", time_ms([&] {
        cuda::layernorm_forward(dt, y.ptr, mean.as<float>(), rstd.as<float>(), x.ptr, w.ptr, b.ptr, N, C, nullptr);
      }, iters), 2 * tensor);
      report_bytes("layernorm bwd", time_ms([&] {
        cuda::layernorm_backward(dt, dx.ptr, dw.ptr, db.ptr, scratch.as<float>(), y.ptr, x.ptr, w.ptr,
                                 mean.as<float>(), rstd.as<float>(), N, C, nullptr);
      }, iters), 4 * tensor);
      report_bytes("gelu fwd (4C)", time_ms([&] { cuda::gelu_forward(dt, dx.ptr, x.ptr, size_t(N) * C, nullptr); },
                                            iters), 2 * tensor);
    }
    {  // classifier: the logits read and the gradient written once each (fused reads them twice)
      Buffer logits(size_t(N) * Vp, dt), lse(N, DType::F32), losses(N, DType::F32), mean(1, DType::F32);
      std::vector<int32_t> targets(static_cast<size_t>(N));
      Rng rng(5);
      for (auto& t : targets) t = int32_t(rng.below(uint64_t(V)));
      int32_t* dtargets = nullptr;
      ZT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dtargets), targets.size() * 4));
      ZT_CUDA_CHECK(cudaMemcpy(dtargets, targets.data(), targets.size() * 4, cudaMemcpyHostToDevice));
      const double tensor = double(N) * Vp * es;
      report_bytes("classifier fwd", time_ms([&] {
        cuda::classifier_forward(dt, lse.as<float>(), losses.as<float>(), mean.as<float>(), logits.ptr, dtargets, N, V,
                                 Vp, nullptr);
      }, iters), tensor);
      // fused and backward overwrite the logits with gradients: the values change, the work does not
      report_bytes("classifier fused fwd+bwd", time_ms([&] {
        cuda::classifier_fused(dt, logits.ptr, lse.as<float>(), losses.as<float>(), mean.as<float>(), dtargets,
                               1.0f / N, N, V, Vp, nullptr);
      }, iters), 2 * tensor);
      cudaFree(dtargets);
    }
    {  // AdamW over 124M parameters: reads grad, master, m, v; writes master, m, v (and 16-bit params)
      const size_t P = 124'475'904;
      Buffer master(P, DType::F32, 0.02f), m(P, DType::F32, 0.0f), v(P, DType::F32, 0.0f), grads(P, dt, 1e-3f);
      Buffer params(P, dt);
      const bool sixteen = dt != DType::F32;
      const AdamWHyper config{6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
      const double bytes = double(P) * (3 * 4 * 2 + es + (sixteen ? es : 0));
      report_bytes("adamw (124M params)", time_ms([&] {
        cuda::adamw_update(master.as<float>(), m.as<float>(), v.as<float>(), grads.ptr, dt, 1.0f,
                           sixteen ? params.ptr : nullptr, dt, P, true, config, 1, nullptr);
      }, iters), bytes);
    }
    ZT_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels: %s\n", e.what());
    return 1;
  }
  return 0;
}
