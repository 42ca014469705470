#pragma once
// One GPU as a zt::Device (core/device.hpp): device memory from cudaMalloc, page-locked host
// memory from cudaHostAlloc, ordinary host memory as the CPU device allocates it; copies and
// fills ordered on a stream; three non-blocking streams (compute, comm, copies) and events.
//
// Copies involving pageable host memory (MemSpace::Host, or any host buffer CUDA does not know)
// must leave the caller free to reuse or read its buffer at once. Small ones to the device (a
// step's tokens) go through pinned staging buffers: the bytes are copied there on the host and the
// device copy is queued, so the call returns without waiting for the device; a staging buffer is
// reused once its copy has run (an event). Other copies with pageable memory return only once
// done. Copies between device and pinned memory stay asynchronous.
//
// Graphs capture the compute stream in thread-local mode (other threads' calls do not disturb the
// capture); a staged copy cannot be captured (its staging buffer would be replayed, not the
// caller's bytes): copies in a captured region come from pinned or device memory.
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <string>

#include "core/buffer.hpp"
#include "core/device.hpp"

namespace zt::cuda {

class CudaDevice final : public Device {
public:
  // Selects the device (cudaSetDevice) for the calling thread and creates the streams.
  explicit CudaDevice(int ordinal);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  int ordinal() const { return ordinal_; }
  // "major.minor", e.g. "9.0".
  std::string compute_capability() const;

  DeviceKind kind() const override { return DeviceKind::Cuda; }
  std::string name() const override { return name_; }  // cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3"
  size_t memory_bytes() const override { return memory_bytes_; }

  void* allocate(MemSpace space, size_t bytes, bool zeroed) override;
  void free(MemSpace space, void* p, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes, Stream stream) override;
  void fill_zero(void* dst, size_t bytes, Stream stream) override;

  Stream compute() override { return {compute_}; }
  Stream comm() override { return {comm_}; }
  Stream copies() override { return {copies_}; }
  Event create_event() override;
  void destroy_event(Event e) override;
  void record(Event e, Stream s) override;
  void wait(Stream s, Event e) override;
  void synchronize(Event e) override;
  void synchronize(Stream s) override;
  bool has_graphs() const override { return true; }
  Graph capture(const std::function<void()>& work) override;
  void launch(Graph g) override;
  void destroy_graph(Graph g) override;

  cudaStream_t compute_stream() const { return compute_; }

  // Host-to-device copies from pageable memory up to this size are staged (the rest wait).
  static constexpr size_t kStagedCopyBytes = size_t(1) << 20;

private:
  // Copies `bytes` of pageable src to dst through the next staging buffer.
  void staged_copy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

  struct Staging {
    Buffer<uint8_t> buffer;  // pinned
    cudaEvent_t copied = nullptr;
  };
  std::array<Staging, 4> staging_;
  size_t next_staging_ = 0;

  int ordinal_;
  std::string name_;
  size_t memory_bytes_ = 0;
  int cc_major_ = 0, cc_minor_ = 0;
  cudaStream_t compute_ = nullptr, comm_ = nullptr, copies_ = nullptr;
};

// Where a pointer points, as CUDA sees it. Kernels reach device (and managed) memory and
// page-locked host memory (mapped into the device's address space), never pageable host memory.
enum class MemoryKind { Pageable, Pinned, Device };
MemoryKind memory_kind(const void* p);

}  // namespace zt::cuda
