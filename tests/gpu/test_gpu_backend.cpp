// The CUDA backend's pieces on a GPU: CudaDevice (memory spaces, copies, fills, events, a failed
// allocation), CudaVectorOps against the CPU's table on the same values, and what CudaModelOps
// adds to the kernels (the loss brought to the host, attention's saved state, the llama family's
// operators as the CPU table computes them).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/ignored_target.hpp"
#include "core/ledger.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_model_ops.hpp"
#include "kernels/cpu/cross_entropy.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_device.hpp"
#include "optim/grad_clip.hpp"
#include "random_floats.hpp"

using namespace zt;
using zt::test::random_floats;
using Catch::Matchers::Contains;

namespace {

Backend& gpu(DType dtype = DType::BF16) { return cuda::backend(0, dtype); }
Device& device() { return gpu().device; }
VectorOps& cpu_ops() { return cpu_backend().vector; }

// n elements of `dtype` holding `values` converted, in host memory (bytes).
std::vector<uint8_t> as_dtype(const std::vector<float>& values, DType dtype) {
  std::vector<uint8_t> out(values.size() * dtype_size(dtype));
  from_f32(dtype, values.data(), out.data(), values.size());
  return out;
}

// A device copy of host bytes, and back.
Buffer<uint8_t> upload(const void* host, size_t bytes) {
  Buffer<uint8_t> b(device(), MemSpace::Device, MemCategory::Buffers, bytes, Init::Uninitialised);
  device().copy(b.data(), host, bytes, device().compute());
  return b;
}
std::vector<uint8_t> download(const void* dev, size_t bytes) {
  std::vector<uint8_t> host(bytes);
  device().copy(host.data(), dev, bytes, device().compute());
  return host;
}
template <typename T>
Buffer<uint8_t> upload(const std::vector<T>& v) {
  return upload(v.data(), v.size() * sizeof(T));
}

View dview(void* p, DType t) { return {p, t, MemSpace::Device}; }
ConstView hview(const void* p, DType t) { return {p, t, MemSpace::Host}; }
View hview(void* p, DType t) { return {p, t, MemSpace::Host}; }

}  // namespace

TEST_CASE("the CUDA device names itself and allocates in every space, zeroed when asked", "[gpu][device][smoke]") {
  Device& dev = device();
  CHECK(dev.kind() == DeviceKind::Cuda);
  CHECK_FALSE(dev.name().empty());
  CHECK(dev.memory_bytes() > (size_t(1) << 30));
  const size_t n = (size_t(3) << 20) + 5;  // past the host's mmap threshold, not a page multiple
  const std::vector<uint8_t> zeros(n, 0);
  for (MemSpace space : {MemSpace::Device, MemSpace::Pinned, MemSpace::Host}) {
    INFO(mem_space_name(space));
    const auto before = MemoryLedger::instance().stats();
    Buffer<uint8_t> b(dev, space, MemCategory::Buffers, n);
    CHECK(MemoryLedger::instance().stats().cur(space, MemCategory::Buffers) ==
          before.cur(space, MemCategory::Buffers) + n);
    CHECK(reinterpret_cast<uintptr_t>(b.data()) % 64 == 0);
    CHECK(download(b.data(), n) == zeros);
    const cuda::MemoryKind kind = cuda::memory_kind(b.data());
    CHECK(kind == (space == MemSpace::Device   ? cuda::MemoryKind::Device
                   : space == MemSpace::Pinned ? cuda::MemoryKind::Pinned
                                               : cuda::MemoryKind::Pageable));
  }
}

TEST_CASE("copies between every pair of spaces arrive, and host buffers may be reused at once", "[gpu][device]") {
  Device& dev = device();
  const size_t n = 1000003;
  std::vector<uint8_t> pattern(n);
  for (size_t i = 0; i < n; ++i) pattern[i] = uint8_t(i * 7 + 3);
  for (MemSpace from : {MemSpace::Device, MemSpace::Pinned, MemSpace::Host})
    for (MemSpace to : {MemSpace::Device, MemSpace::Pinned, MemSpace::Host}) {
      INFO(mem_space_name(from) << " -> " << mem_space_name(to));
      Buffer<uint8_t> a(dev, from, MemCategory::Buffers, n), b(dev, to, MemCategory::Buffers, n);
      std::vector<uint8_t> staging = pattern;
      dev.copy(a.data(), staging.data(), n, dev.compute());
      std::fill(staging.begin(), staging.end(), 0);  // pageable: the copy has read it already
      dev.copy(b.data(), a.data(), n, dev.compute());
      CHECK(download(b.data(), n) == pattern);
      dev.fill_zero(b.data() + 1, n - 2, dev.compute());
      const auto back = download(b.data(), n);
      CHECK(back[0] == pattern[0]);
      CHECK(back[n - 1] == pattern[n - 1]);
      CHECK(std::count(back.begin() + 1, back.end() - 1, 0) == std::ptrdiff_t(n - 2));
    }
}

TEST_CASE("events order a stream after another; the host waits for either", "[gpu][device]") {
  Device& dev = device();
  const size_t n = size_t(64) << 20;
  std::vector<uint8_t> pattern(n, 0x5a);
  Buffer<uint8_t> pinned(dev, MemSpace::Pinned, MemCategory::Buffers, n, Init::Uninitialised);
  std::memcpy(pinned.data(), pattern.data(), n);
  // `a` uninitialised: zeroing it would queue a fill on the compute stream that the copies stream's
  // write below does not wait for (a device's first use of a buffer is ordered on compute).
  Buffer<uint8_t> a(dev, MemSpace::Device, MemCategory::Buffers, n, Init::Uninitialised);
  Buffer<uint8_t> b(dev, MemSpace::Device, MemCategory::Buffers, n);
  Event done = dev.create_event();
  dev.copy(a.data(), pinned.data(), n, dev.copies());  // asynchronous: pinned memory
  dev.record(done, dev.copies());
  dev.wait(dev.compute(), done);
  dev.copy(b.data(), a.data(), n, dev.compute());  // must see the whole first copy
  dev.synchronize(dev.compute());
  CHECK(download(b.data(), n) == pattern);
  dev.synchronize(done);
  dev.synchronize(dev.comm());
  dev.destroy_event(done);
}

TEST_CASE("a captured graph replays its copies; what cannot be captured throws and leaves the device usable",
          "[gpu][device][graph]") {
  Device& dev = device();
  Buffer<float> pinned(dev, MemSpace::Pinned, MemCategory::Buffers, 64);
  Buffer<float> on_device(dev, MemSpace::Device, MemCategory::Buffers, 64);
  std::vector<float> pageable(64, 0.0f), back(64, 0.0f);
  const Graph graph =
      dev.capture([&] { dev.copy(on_device.data(), pinned.data(), 64 * sizeof(float), dev.compute()); });
  for (float value : {1.5f, -2.0f}) {
    std::fill(pinned.data(), pinned.data() + 64, value);  // read at each launch
    dev.launch(graph);
    dev.copy(back.data(), on_device.data(), 64 * sizeof(float), dev.compute());
    CHECK(back == std::vector<float>(64, value));
  }
  dev.destroy_graph(graph);
  CHECK_THROWS_WITH(dev.capture([&] { dev.copy(on_device.data(), pageable.data(), 64, dev.compute()); }),
                    Contains("pageable") && Contains("graph"));
  CHECK_THROWS(dev.capture([&] { dev.synchronize(dev.compute()); }));
  std::fill(pageable.begin(), pageable.end(), 4.0f);
  dev.copy(on_device.data(), pageable.data(), 64 * sizeof(float), dev.compute());
  dev.copy(back.data(), on_device.data(), 64 * sizeof(float), dev.compute());
  CHECK(back == pageable);
}

TEST_CASE("an allocation the GPU cannot hold returns null and leaves CUDA usable", "[gpu][device]") {
  Device& dev = device();
  void* p = dev.allocate(MemSpace::Device, dev.memory_bytes() * 4, false);
  CHECK(p == nullptr);
  CHECK(cudaGetLastError() == cudaSuccess);
  // Buffer turns it into an error naming the category.
  CHECK_THROWS_WITH(Buffer<uint8_t>(dev, MemSpace::Device, MemCategory::Grads, dev.memory_bytes() * 4),
                    Contains("out of memory") && Contains("grads"));
  Buffer<float> fine(dev, MemSpace::Device, MemCategory::Buffers, 1024);
  CHECK(download(fine.data(), 4096) == std::vector<uint8_t>(4096, 0));
}

TEST_CASE("the GPU's conversions, adds and rounding give the CPU's bits", "[gpu][vector]") {
  VectorOps& ops = gpu().vector;
  const size_t n = 100003;  // not a multiple of 8: the tails take the scalar path
  auto x = random_floats(n, 1, 3.0f);
  x[5] = INFINITY;
  x[6] = -0.0f;
  x[7] = 1e-40f;  // subnormal
  const auto y = random_floats(n, 2);
  for (DType from : {DType::F32, DType::BF16, DType::F16})
    for (DType to : {DType::F32, DType::BF16, DType::F16}) {
      INFO(dtype_name(from) << " -> " << dtype_name(to));
      const auto src = as_dtype(x, from);
      const auto dst0 = as_dtype(y, to);
      auto d_src = upload(src), d_dst = upload(dst0);
      // convert
      std::vector<uint8_t> expect(n * dtype_size(to));
      cpu_ops().convert(hview(src.data(), from), hview(expect.data(), to), n);
      ops.convert(dview(d_src.data(), from), dview(d_dst.data(), to), n);
      CHECK(download(d_dst.data(), expect.size()) == expect);
      // add (from an offset, so the vector path meets unaligned pointers too)
      expect = dst0;
      device().copy(d_dst.data(), dst0.data(), dst0.size(), device().compute());
      cpu_ops().add(hview(src.data() + dtype_size(from), from), hview(expect.data() + dtype_size(to), to), n - 1);
      ops.add(dview(d_src.data() + dtype_size(from), from), dview(d_dst.data() + dtype_size(to), to), n - 1);
      CHECK(download(d_dst.data(), expect.size()) == expect);
    }
  for (DType t : {DType::BF16, DType::F16}) {
    INFO(dtype_name(t));
    std::vector<float> expect = x;
    cpu_ops().round_to(t, expect.data(), n);
    auto d = upload(x);
    ops.round_to(t, reinterpret_cast<float*>(d.data()), n);
    CHECK(download(d.data(), n * 4) == as_dtype(expect, DType::F32));
  }
}

TEST_CASE("the GPU's sum of squares equals the CPU's to double rounding", "[gpu][vector]") {
  VectorOps& ops = gpu().vector;
  for (size_t n : {size_t(1), size_t(16384), size_t(16385), size_t(1000003)}) {
    auto x = random_floats(n, unsigned(n), 2.0f);
    for (DType t : {DType::F32, DType::BF16, DType::F16}) {
      INFO("n " << n << " " << dtype_name(t));
      const auto bytes = as_dtype(x, t);
      auto d = upload(bytes);
      const double expect = cpu_ops().sum_of_squares(hview(bytes.data(), t), n, 0.5f);
      const double got = ops.sum_of_squares(dview(d.data(), t), n, 0.5f);
      CHECK(std::abs(got - expect) <= 1e-13 * expect);
      CHECK(ops.sum_of_squares(dview(d.data(), t), n, 0.5f) == got);  // the same bits every time
    }
  }
  auto x = random_floats(100, 9);
  x[50] = NAN;
  auto d = upload(x);
  CHECK(std::isnan(ops.sum_of_squares(dview(d.data(), DType::F32), 100, 1.0f)));
}

TEST_CASE("the GPU's AdamW over segments gives the CPU's bits", "[gpu][vector][adamw]") {
  VectorOps& ops = gpu().vector;
  // Segments of mixed decay, one longer than a block's piece, with a gap nobody updates.
  const std::vector<AdamSegment> segments{{0, 1000, true}, {1000, 40000, false}, {41000, 16384, true},
                                          {60000, 7, false}};
  const size_t n = 60007;
  const AdamWHyper hyper{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, true, true};
  for (DType pt : {DType::F32, DType::BF16}) {
    INFO("parameters in " << dtype_name(pt));
    const bool fp32 = pt == DType::F32;
    std::vector<float> master = random_floats(n, 3), m = random_floats(n, 4, 0.01f), v(n);
    for (size_t i = 0; i < n; ++i) v[i] = 1e-4f * float(i % 13 + 1);
    const auto grads = as_dtype(random_floats(n, 5), pt);
    std::vector<uint8_t> params = as_dtype(master, pt);
    auto d_master = upload(master), d_m = upload(m), d_v = upload(v);
    auto d_grads = upload(grads), d_params = upload(params);
    for (int64_t step = 1; step <= 3; ++step) {
      float* hm = master.data();
      cpu_ops().adamw(segments, {hm, m.data(), v.data()}, hview(grads.data(), pt), 0.25f,
                      fp32 ? hview(hm, DType::F32) : hview(params.data(), pt), hyper, step);
      auto* dm = reinterpret_cast<float*>(d_master.data());
      ops.adamw(segments, {dm, reinterpret_cast<float*>(d_m.data()), reinterpret_cast<float*>(d_v.data())},
                dview(d_grads.data(), pt), 0.25f, fp32 ? dview(dm, DType::F32) : dview(d_params.data(), pt), hyper,
                step);
    }
    CHECK(download(d_master.data(), n * 4) == as_dtype(master, DType::F32));
    CHECK(download(d_m.data(), n * 4) == as_dtype(m, DType::F32));
    CHECK(download(d_v.data(), n * 4) == as_dtype(v, DType::F32));
    if (!fp32) CHECK(download(d_params.data(), params.size()) == params);
  }
}

TEST_CASE("the GPU keeps the gradient norm, the clip factor and the skip flag on the device, with the CPU's bits",
          "[gpu][vector][adamw]") {
  VectorOps& ops = gpu().vector;
  const std::vector<float> g = random_floats(40000, 21, 3.0f);
  auto d_g = upload(g);
  // The sum of squares left on the device equals the one the host gets.
  Buffer<double> d_sums(device(), MemSpace::Device, MemCategory::Buffers, 3, Init::Uninitialised);
  ops.sum_of_squares_into(dview(d_g.data(), DType::F32), 40000, 0.5f, d_sums.data());
  ops.sum_of_squares_into(dview(d_g.data(), DType::F32), 1, 0.5f, d_sums.data() + 1);
  ops.sum_of_squares_into(dview(d_g.data(), DType::F32), 0, 0.5f, d_sums.data() + 2);
  const auto sums = download(d_sums.data(), 3 * sizeof(double));
  const double* got = reinterpret_cast<const double*>(sums.data());
  CHECK(got[0] == ops.sum_of_squares(dview(d_g.data(), DType::F32), 40000, 0.5f));
  CHECK(got[1] == ops.sum_of_squares(dview(d_g.data(), DType::F32), 1, 0.5f));
  CHECK(got[2] == 0.0);

  struct Case {
    std::vector<double> sums;
    double max_norm;
    bool skip_nonfinite;
  };
  const std::vector<Case> cases{{{12.5, 1e-3, 7.25}, 1.0, true},   // clipped
                                {{1e-4, 2e-5}, 1.0, true},          // under the clip: factor unchanged
                                {{12.5, 7.25}, 0.0, true},          // clipping off
                                {{3.0, INFINITY, 1.0}, 1.0, true},  // overflow: skipped
                                {{3.0, NAN}, 1.0, false}};          // bf16 without the check: taken
  for (const Case& c : cases) {
    INFO("sums " << c.sums[0] << ", ... max_norm " << c.max_norm << " skip_nonfinite " << c.skip_nonfinite);
    GradNorm want{};
    cpu_ops().grad_norm(c.sums.data(), int(c.sums.size()), 0.125f, c.max_norm, c.skip_nonfinite, &want);
    auto d_in = upload(c.sums);
    Buffer<GradNorm> d_out(device(), MemSpace::Device, MemCategory::Buffers, 1, Init::Uninitialised);
    ops.grad_norm(reinterpret_cast<const double*>(d_in.data()), int(c.sums.size()), 0.125f, c.max_norm,
                  c.skip_nonfinite, d_out.data());
    GradNorm have{};
    const auto bytes = download(d_out.data(), sizeof(GradNorm));
    std::memcpy(&have, bytes.data(), sizeof have);
    CHECK(std::memcmp(&have.sum_of_squares, &want.sum_of_squares, sizeof(double)) == 0);
    CHECK(std::memcmp(&have.norm, &want.norm, sizeof(double)) == 0);
    CHECK(std::memcmp(&have.grad_factor, &want.grad_factor, sizeof(float)) == 0);
    CHECK(have.skip == want.skip);
  }
  // The host's own arithmetic (optim/grad_clip.hpp), for the clipped case.
  GradNorm clipped{};
  cpu_ops().grad_norm(cases[0].sums.data(), 3, 0.125f, 1.0, true, &clipped);
  CHECK(clipped.norm == std::sqrt(12.5 + 1e-3 + 7.25));
  CHECK(clipped.grad_factor == float(0.125f * clip_coefficient(clipped.norm, 1.0)));

  // AdamW reading the factor from the device gives the bits of AdamW given it, and a skip leaves
  // the state as it was.
  const std::vector<AdamSegment> segments{{0, 30000, true}, {30000, 10000, false}};
  const AdamWHyper hyper{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, true, true};
  for (bool skip : {false, true}) {
    INFO((skip ? "skipped" : "taken"));
    std::vector<float> master = random_floats(40000, 22), m(40000, 0.0f), v(40000, 0.0f);
    auto d_master = upload(master), d_m = upload(m), d_v = upload(v);
    const GradNorm norm{1.0, 1.0, 0.375f, skip ? 1 : 0};
    auto d_norm = upload(&norm, sizeof norm);
    auto* dm = reinterpret_cast<float*>(d_master.data());
    ops.adamw(segments, {dm, reinterpret_cast<float*>(d_m.data()), reinterpret_cast<float*>(d_v.data())},
              dview(d_g.data(), DType::F32), reinterpret_cast<const GradNorm*>(d_norm.data()),
              dview(dm, DType::F32), hyper, 1);
    if (!skip)
      cpu_ops().adamw(segments, {master.data(), m.data(), v.data()}, hview(g.data(), DType::F32), 0.375f,
                      hview(master.data(), DType::F32), hyper, 1);
    CHECK(download(d_master.data(), 40000 * 4) == as_dtype(master, DType::F32));
    CHECK(download(d_m.data(), 40000 * 4) == as_dtype(m, DType::F32));
    CHECK(download(d_v.data(), 40000 * 4) == as_dtype(v, DType::F32));
  }
}

TEST_CASE("vector ops on pageable host memory run on the host; mixed with device memory they are refused",
          "[gpu][vector]") {
  VectorOps& ops = gpu().vector;
  const auto x = random_floats(1000, 7);
  std::vector<uint16_t> h(1000), expect(1000);
  ops.convert(hview(x.data(), DType::F32), hview(h.data(), DType::BF16), 1000);
  cpu_ops().convert(hview(x.data(), DType::F32), hview(expect.data(), DType::BF16), 1000);
  CHECK(h == expect);
  auto d = upload(x);
  CHECK_THROWS_WITH(ops.add(hview(x.data(), DType::F32), dview(d.data(), DType::F32), 1000), Contains("pageable"));
}

TEST_CASE("the GPU model table: the loss comes to the host, attention saves one float per row", "[gpu][model]") {
  const int N = 37, V = 250, Vp = 256;
  const auto logits = random_floats(size_t(N) * Vp, 8, 2.0f);
  std::vector<int32_t> targets(N);
  for (int i = 0; i < N; ++i) targets[size_t(i)] = i % 5 == 3 ? kIgnoredTarget : (i * 31) % V;
  std::vector<float> lse(N);
  const float expect = cpu::cross_entropy_forward(lse.data(), logits.data(), targets.data(), N, V, Vp);
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    ModelOps& ops = gpu(dt).model;
    CHECK(ops.dtype() == dt);
    CHECK(ops.attention_saved_floats(4, 64, 12) == size_t(4) * 12 * 64);
    const auto values = as_dtype(logits, dt);
    auto d_logits = upload(values), d_targets = upload(targets);
    const auto* t = reinterpret_cast<const int32_t*>(d_targets.data());
    Buffer<float> d_lse(device(), MemSpace::Device, MemCategory::Buffers, N);
    Buffer<float> d_losses(device(), MemSpace::Device, MemCategory::Buffers, N);
    Buffer<int32_t> d_counted(device(), MemSpace::Device, MemCategory::Buffers, 1);
    ops.cross_entropy_forward(d_lse.data(), d_losses.data(), d_logits.data(), t, N, V, Vp);
    const float got = ops.cross_entropy_loss(d_counted.data(), d_losses.data(), t, N);
    CHECK(got == Approx(expect).epsilon(dt == DType::F32 ? 1e-6 : 2e-2));
    int32_t counted = 0;
    std::memcpy(&counted, download(d_counted.data(), sizeof counted).data(), sizeof counted);
    CHECK(counted == 30);  // 7 of the 37 targets are ignored
  }
}

TEST_CASE("the GPU's loss gradient is dloss over the targets the device counted, or by each target's weight",
          "[gpu][model]") {
  const int N = 37, V = 250, Vp = 256;
  const auto logits = random_floats(size_t(N) * Vp, 9, 2.0f);
  std::vector<int32_t> targets(N);
  for (int i = 0; i < N; ++i) targets[size_t(i)] = i % 4 == 1 ? kIgnoredTarget : (i * 17) % V;
  // Preference training's weights, one per row (an ignored row's never read).
  std::vector<float> weights(N);
  for (int i = 0; i < N; ++i) weights[size_t(i)] = i % 4 == 1 ? 1e30f : 0.05f * float(i % 7) - 0.12f;
  for (DType dt : {DType::F32, DType::BF16}) {
    ModelOps& ops = gpu(dt).model;
    const auto values = as_dtype(logits, dt);
    auto d_targets = upload(targets);
    auto d_weights = upload(weights);
    const auto* t = reinterpret_cast<const int32_t*>(d_targets.data());
    Buffer<float> d_lse(device(), MemSpace::Device, MemCategory::Buffers, N);
    Buffer<float> d_losses(device(), MemSpace::Device, MemCategory::Buffers, N);
    Buffer<int32_t> d_counted(device(), MemSpace::Device, MemCategory::Buffers, 1);
    for (float dloss : {1.0f, 0.5f})
      for (bool weighted : {false, true}) {
        INFO(dtype_name(dt) << " dloss " << dloss << (weighted ? " weighted" : ""));
        std::vector<float> want = logits, lse(N), losses(N);
        cpu::CpuModelOps cpu_ops;
        int32_t counted = 0;
        cpu_ops.cross_entropy_forward(lse.data(), losses.data(), want.data(), targets.data(), N, V, Vp);
        cpu_ops.cross_entropy_loss(&counted, losses.data(), targets.data(), N);
        cpu_ops.cross_entropy_backward(want.data(), want.data(), lse.data(), targets.data(), &counted, dloss, N, V, Vp,
                                       0.0f, weighted ? weights.data() : nullptr);
        auto d_logits = upload(values);
        ops.cross_entropy_forward(d_lse.data(), d_losses.data(), d_logits.data(), t, N, V, Vp);
        ops.cross_entropy_loss(d_counted.data(), d_losses.data(), t, N);
        ops.cross_entropy_backward(d_logits.data(), d_logits.data(), d_lse.data(), t, d_counted.data(), dloss, N, V, Vp,
                                   0.0f, weighted ? reinterpret_cast<const float*>(d_weights.data()) : nullptr);
        std::vector<float> got(size_t(N) * Vp);
        to_f32(dt, download(d_logits.data(), values.size()).data(), got.data(), got.size());
        double err = 0, norm = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
          norm += double(want[i]) * want[i];
        }
        CHECK(std::sqrt(err / norm) < (dt == DType::F32 ? 1e-6 : 1e-2));
      }
  }
}

namespace {

// fp32 tensors in device memory for a table-against-table check; each lives as long as the pool.
struct DevicePool {
  std::vector<Buffer<uint8_t>> held;
  float* put(const std::vector<float>& v) {
    held.push_back(upload(v));
    return reinterpret_cast<float*>(held.back().data());
  }
  float* nans(size_t n) { return put(std::vector<float>(n, std::nanf(""))); }
};

std::vector<float> fetch(const float* d, size_t n) {
  const auto bytes = download(d, n * sizeof(float));
  std::vector<float> v(n);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(err / norm);
}

}  // namespace

TEST_CASE("the GPU model table computes the llama family's operators as the CPU table does", "[gpu][model]") {
  // fp32, within the kernel tests' 1e-5 norm-wise; every input gradient written over a buffer of
  // NaNs on the GPU (GradInto::Overwrite) and over whatever the CPU's buffer held.
  const int B = 2, T = 9, N = B * T, C = 64, NH = 4, NKV = 2, hd = 16, F = 40, V = 32;
  const int QKV = (NH + 2 * NKV) * hd, half = hd / 2;
  const float eps = 1e-6f;
  constexpr auto Set = GradInto::Overwrite;
  cpu::CpuModelOps host;
  ModelOps& gpu_ops = gpu(DType::F32).model;
  DevicePool dev;
  auto close = [](const char* what, const std::vector<float>& got, const std::vector<float>& want) {
    INFO(what);
    CHECK(relative_error(got, want) <= 1e-5);
  };

  {  // the second residual and its RMSNorm in one call, then the norm's backward
    const auto a = random_floats(size_t(N) * C, 21), b = random_floats(size_t(N) * C, 22);
    const auto w = random_floats(size_t(C), 23), dy = random_floats(size_t(N) * C, 24);
    const auto dw0 = random_floats(size_t(C), 25);
    std::vector<float> res(a.size()), out(a.size()), rstd(static_cast<size_t>(N)), dx(a.size(), 7.0f), dw = dw0;
    host.residual_rmsnorm_forward(res.data(), out.data(), rstd.data(), a.data(), b.data(), w.data(), N, C, eps);
    host.rmsnorm_backward(dx.data(), dw.data(), dy.data(), res.data(), w.data(), rstd.data(), N, C, Set);
    float *g_res = dev.nans(a.size()), *g_out = dev.nans(a.size()), *g_rstd = dev.nans(size_t(N));
    float *g_dx = dev.nans(a.size()), *g_dw = dev.put(dw0), *g_w = dev.put(w);
    gpu_ops.residual_rmsnorm_forward(g_res, g_out, g_rstd, dev.put(a), dev.put(b), g_w, N, C, eps);
    gpu_ops.rmsnorm_backward(g_dx, g_dw, dev.put(dy), g_res, g_w, g_rstd, N, C, Set);
    close("residual", fetch(g_res, res.size()), res);
    close("rmsnorm out", fetch(g_out, out.size()), out);
    close("rmsnorm dinp", fetch(g_dx, dx.size()), dx);
    close("rmsnorm dweight", fetch(g_dw, dw.size()), dw);
  }
  {  // the q/k norms, RoPE and grouped-query attention, forward and backward, as the block runs them
    const auto qkv = random_floats(size_t(N) * QKV, 31, 1.5f), dy = random_floats(size_t(N) * NH * hd, 32);
    const auto qw = random_floats(size_t(hd), 33), kw = random_floats(size_t(hd), 34);
    std::vector<float> cos(size_t(T) * half), sin(cos.size());
    for (int t = 0; t < T; t++)
      for (int i = 0; i < half; i++) {
        cos[size_t(t) * half + i] = std::cos(0.3f * t / (i + 1));
        sin[size_t(t) * half + i] = std::sin(0.3f * t / (i + 1));
      }
    std::vector<float> att_in(qkv.size()), qk_rstd(size_t(N) * (NH + NKV)), out(dy.size());
    std::vector<float> saved(host.attention_saved_floats(B, T, NH)), scratch(host.attention_scratch_floats(B, T, NH));
    std::vector<float> d_att(qkv.size(), 3.0f), dqkv(qkv.size(), 5.0f), dqw(size_t(hd), 0.0f), dkw = dqw;
    host.qk_norm_forward(att_in.data(), qk_rstd.data(), qkv.data(), qw.data(), kw.data(), N, NH, NKV, hd, eps);
    host.rope_forward(att_in.data(), cos.data(), sin.data(), nullptr, B, T, NH, NKV, hd);
    const int window = (T + 1) / 2;  // a sliding layer's band
    host.gqa_attention_forward(out.data(), saved.data(), scratch.data(), att_in.data(), nullptr, B, T, NH, NKV, hd,
                               window);
    host.gqa_attention_backward(d_att.data(), scratch.data(), dy.data(), att_in.data(), out.data(), saved.data(),
                                nullptr, B, T, NH, NKV, hd, window, Set);
    host.rope_backward(d_att.data(), cos.data(), sin.data(), nullptr, B, T, NH, NKV, hd);
    host.qk_norm_backward(dqkv.data(), dqw.data(), dkw.data(), d_att.data(), qkv.data(), qw.data(), kw.data(),
                          qk_rstd.data(), N, NH, NKV, hd, Set);

    float *g_qkv = dev.put(qkv), *g_att_in = dev.nans(qkv.size()), *g_rstd = dev.nans(qk_rstd.size());
    float *g_qw = dev.put(qw), *g_kw = dev.put(kw), *g_cos = dev.put(cos), *g_sin = dev.put(sin);
    float *g_out = dev.nans(out.size()), *g_saved = dev.nans(gpu_ops.attention_saved_floats(B, T, NH));
    float* g_scratch = dev.nans(gpu_ops.attention_scratch_floats(B, T, NH));
    float *g_d_att = dev.nans(qkv.size()), *g_dqkv = dev.nans(qkv.size());
    float *g_dqw = dev.put(std::vector<float>(size_t(hd), 0.0f)),
          *g_dkw = dev.put(std::vector<float>(size_t(hd), 0.0f));
    gpu_ops.qk_norm_forward(g_att_in, g_rstd, g_qkv, g_qw, g_kw, N, NH, NKV, hd, eps);
    gpu_ops.rope_forward(g_att_in, g_cos, g_sin, nullptr, B, T, NH, NKV, hd);
    gpu_ops.gqa_attention_forward(g_out, g_saved, g_scratch, g_att_in, nullptr, B, T, NH, NKV, hd, window);
    gpu_ops.gqa_attention_backward(g_d_att, g_scratch, dev.put(dy), g_att_in, g_out, g_saved, nullptr, B, T, NH, NKV,
                                   hd, window, Set);
    gpu_ops.rope_backward(g_d_att, g_cos, g_sin, nullptr, B, T, NH, NKV, hd);
    gpu_ops.qk_norm_backward(g_dqkv, g_dqw, g_dkw, g_d_att, g_qkv, g_qw, g_kw, g_rstd, N, NH, NKV, hd, Set);
    close("q/k norms and RoPE", fetch(g_att_in, att_in.size()), att_in);
    close("attention out", fetch(g_out, out.size()), out);
    close("attention, RoPE dq, dk, dv", fetch(g_d_att, d_att.size()), d_att);
    close("q/k norms dqkv", fetch(g_dqkv, dqkv.size()), dqkv);
    close("q_norm dweight", fetch(g_dqw, dqw.size()), dqw);
    close("k_norm dweight", fetch(g_dkw, dkw.size()), dkw);
  }
  {  // SwiGLU
    const auto x = random_floats(size_t(N) * 2 * F, 41, 2.0f), dy = random_floats(size_t(N) * F, 42);
    std::vector<float> out(dy.size()), dx(x.size(), 9.0f);
    host.swiglu_forward(out.data(), x.data(), N, F);
    host.swiglu_backward(dx.data(), x.data(), dy.data(), N, F, Set);
    float *g_x = dev.put(x), *g_out = dev.nans(out.size()), *g_dx = dev.nans(dx.size());
    gpu_ops.swiglu_forward(g_out, g_x, N, F);
    gpu_ops.swiglu_backward(g_dx, g_x, dev.put(dy), N, F, Set);
    close("swiglu out", fetch(g_out, out.size()), out);
    close("swiglu dinp", fetch(g_dx, dx.size()), dx);
  }
  {  // the token embedding without learned positions, and its gradient
    const auto wte = random_floats(size_t(V) * C, 51), dy = random_floats(size_t(N) * C, 52);
    std::vector<int32_t> tokens(static_cast<size_t>(N));
    for (int i = 0; i < N; ++i) tokens[size_t(i)] = (i * 7) % V;
    std::vector<float> out(dy.size()), dwte(wte.size(), 0.0f);
    host.embedding_forward(out.data(), tokens.data(), wte.data(), nullptr, nullptr, B, T, C);
    host.embedding_backward(dwte.data(), nullptr, dy.data(), tokens.data(), nullptr, B, T, C);
    auto g_tokens = upload(tokens);
    const auto* t = reinterpret_cast<const int32_t*>(g_tokens.data());
    float *g_out = dev.nans(out.size()), *g_dwte = dev.put(std::vector<float>(wte.size(), 0.0f));
    gpu_ops.embedding_forward(g_out, t, dev.put(wte), nullptr, nullptr, B, T, C);
    gpu_ops.embedding_backward(g_dwte, nullptr, dev.put(dy), t, nullptr, B, T, C);
    CHECK(fetch(g_out, out.size()) == out);      // rows copied
    CHECK(fetch(g_dwte, dwte.size()) == dwte);  // the same additions in the same order
  }
}

TEST_CASE("the bf16 model table multiplies a router kept in fp32 in fp32, over its input cast to fp32",
          "[gpu][model][moe]") {
  // The CPU table's fp32 product over the same bf16 input is the reference: fp32 outputs and weight
  // gradients within fp32 rounding, the bf16 input gradient (added to what it held) within one
  // bf16 rounding.
  const int N = 24, C = 40, E = 8;
  constexpr auto om = WeightLayout::OutputMajor;
  cpu::CpuModelOps host;
  ModelOps& ops = gpu(DType::BF16).model;
  DevicePool dev;
  auto bf16 = [](std::vector<float> v) {
    cpu_ops().round_to(DType::BF16, v.data(), v.size());
    return v;
  };
  const auto x = bf16(random_floats(size_t(N) * C, 61)), w = random_floats(size_t(E) * C, 62);
  const auto dlogits = random_floats(size_t(N) * E, 63), dw0 = random_floats(size_t(E) * C, 64);
  const auto dx0 = bf16(random_floats(size_t(N) * C, 65));
  std::vector<float> logits(size_t(N) * E), dx = dx0, dw = dw0;
  host.matmul_forward(logits.data(), x.data(), w.data(), nullptr, N, C, E, om);
  host.matmul_backward(dx.data(), dw.data(), nullptr, dlogits.data(), x.data(), w.data(), N, C, E, om,
                       GradInto::Accumulate);
  Buffer<uint8_t> g_x = upload(as_dtype(x, DType::BF16)), g_dx = upload(as_dtype(dx0, DType::BF16));
  float *g_logits = dev.nans(logits.size()), *g_w = dev.put(w), *g_dw = dev.put(dw0), *scratch = dev.nans(x.size());
  ops.matmul_fp32_forward(g_logits, g_x.data(), g_w, scratch, N, C, E, om);
  ops.matmul_fp32_backward(g_dx.data(), g_dw, dev.put(dlogits), g_x.data(), g_w, scratch, N, C, E, om,
                           GradInto::Accumulate);
  CHECK(relative_error(fetch(g_logits, logits.size()), logits) <= 1e-6);
  CHECK(relative_error(fetch(g_dw, dw.size()), dw) <= 1e-6);
  std::vector<float> got_dx(dx.size());
  to_f32(DType::BF16, download(g_dx.data(), dx.size() * 2).data(), got_dx.data(), dx.size());
  CHECK(relative_error(got_dx, dx) <= 4e-3);
  CHECK(relative_error(got_dx, dx) > 0);  // rounded to bf16
}

TEST_CASE("one GPU per process; fp16 is refused", "[gpu][backend]") {
  CHECK(&gpu(DType::F32).device == &gpu(DType::BF16).device);
  CHECK(&gpu(DType::F32).vector == &gpu(DType::BF16).vector);
  CHECK_THROWS_WITH(cuda::backend(0, DType::F16), Contains("fp16.enabled"));
  if (cuda::visible_devices() > 1)
    CHECK_THROWS_WITH(cuda::backend(1, DType::F32), Contains("already computes on GPU 0"));
}
