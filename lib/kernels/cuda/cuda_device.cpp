#include "kernels/cuda/cuda_device.hpp"

#include <cuda_runtime.h>

#include <cstring>

#include "core/error.hpp"
#include "kernels/cuda/check.hpp"

namespace zt::cuda {

namespace {

cudaStream_t stream_of(Stream s) { return static_cast<cudaStream_t>(s.handle); }
cudaEvent_t event_of(Event e) { return static_cast<cudaEvent_t>(e.handle); }


cudaStream_t make_stream() {
  cudaStream_t s = nullptr;
  ZT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

}  // namespace

MemoryKind memory_kind(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // not an error worth keeping: CUDA does not know the pointer
    return MemoryKind::Pageable;
  }
  switch (attributes.type) {
    case cudaMemoryTypeUnregistered: return MemoryKind::Pageable;
    case cudaMemoryTypeHost: return MemoryKind::Pinned;
    default: return MemoryKind::Device;
  }
}

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {
  ZT_CUDA_CHECK(cudaSetDevice(ordinal));
  cudaDeviceProp prop{};
  ZT_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  name_ = prop.name;
  memory_bytes_ = prop.totalGlobalMem;
  cc_major_ = prop.major;
  cc_minor_ = prop.minor;
  compute_ = make_stream();
  comm_ = make_stream();
  copies_ = make_stream();
}

CudaDevice::~CudaDevice() {
  // Errors are not reported from a destructor (at process exit the runtime may be going too).
  for (cudaStream_t s : {compute_, comm_, copies_})
    if (s) {
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
    }
  for (Staging& s : staging_) {
    if (s.copied) cudaEventDestroy(s.copied);
    s.buffer.reset();
  }
}

std::string CudaDevice::compute_capability() const { return fmt::format("{}.{}", cc_major_, cc_minor_); }

void* CudaDevice::allocate(MemSpace space, size_t bytes, bool zeroed) {
  void* p = nullptr;
  switch (space) {
    case MemSpace::Device: {
      const cudaError_t status = cudaMalloc(&p, bytes);
      if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // clear it: the caller reports the failure in its own words
        return nullptr;
      }
      ZT_CUDA_CHECK(status);
      // On the compute stream, where every first use of a buffer is ordered (the other streams
      // wait for compute before they touch what it produced).
      if (zeroed) ZT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, compute_));
      return p;
    }
    case MemSpace::Pinned: {
      const cudaError_t status = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
      if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        return nullptr;
      }
      ZT_CUDA_CHECK(status);
      if (zeroed) std::memset(p, 0, bytes);
      return p;
    }
    case MemSpace::Host: return cpu_device().allocate(space, bytes, zeroed);
    case MemSpace::File:
    case MemSpace::Count: break;
  }
  fail("CudaDevice::allocate: {} memory is not allocated through a device", mem_space_name(space));
}

void CudaDevice::free(MemSpace space, void* p, size_t bytes) {
  if (!p) return;
  switch (space) {
    case MemSpace::Device: cudaFree(p); return;  // synchronises: no queued work still uses p
    case MemSpace::Pinned: cudaFreeHost(p); return;
    default: cpu_device().free(space, p, bytes); return;
  }
}

void CudaDevice::copy(void* dst, const void* src, size_t bytes, Stream stream) {
  if (bytes == 0 || dst == src) return;
  const cudaStream_t s = stream_of(stream);
  const MemoryKind to = memory_kind(dst), from = memory_kind(src);
  if (from == MemoryKind::Pageable && to == MemoryKind::Device && bytes <= kStagedCopyBytes)
    return staged_copy(dst, src, bytes, s);
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  // Pageable host memory: the caller may reuse or read it as soon as this returns.
  if (to == MemoryKind::Pageable || from == MemoryKind::Pageable) ZT_CUDA_CHECK(cudaStreamSynchronize(s));
}

void CudaDevice::staged_copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  ZT_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
  if (capturing != cudaStreamCaptureStatusNone)
    fail("CudaDevice::copy: {} bytes from pageable host memory in a captured graph (its replays would copy the "
         "staging buffer, not the caller's bytes): copy from pinned memory",
         bytes);
  Staging& slot = staging_[next_staging_];
  next_staging_ = (next_staging_ + 1) % staging_.size();
  if (!slot.copied) ZT_CUDA_CHECK(cudaEventCreateWithFlags(&slot.copied, cudaEventDisableTiming));
  // Its last copy has run, as a rule: the host waits only when all four are still queued.
  const cudaError_t state = cudaEventQuery(slot.copied);
  if (state == cudaErrorNotReady) ZT_CUDA_CHECK(cudaEventSynchronize(slot.copied));
  else ZT_CUDA_CHECK(state);
  if (slot.buffer.size() < bytes) {
    slot.buffer.reset();
    slot.buffer = Buffer<uint8_t>(*this, MemSpace::Pinned, MemCategory::Buffers, kStagedCopyBytes, Init::Uninitialised);
  }
  std::memcpy(slot.buffer.data(), src, bytes);
  ZT_CUDA_CHECK(cudaMemcpyAsync(dst, slot.buffer.data(), bytes, cudaMemcpyHostToDevice, stream));
  ZT_CUDA_CHECK(cudaEventRecord(slot.copied, stream));
}

void CudaDevice::fill_zero(void* dst, size_t bytes, Stream stream) {
  if (bytes == 0) return;
  const cudaStream_t s = stream_of(stream);
  if (memory_kind(dst) != MemoryKind::Device) {  // host memory: after what the stream has queued, by the host
    ZT_CUDA_CHECK(cudaStreamSynchronize(s));
    std::memset(dst, 0, bytes);
    return;
  }
  ZT_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, s));
}

Event CudaDevice::create_event() {
  cudaEvent_t e = nullptr;
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return {e};
}

void CudaDevice::destroy_event(Event e) {
  if (e.handle) cudaEventDestroy(event_of(e));
}

void CudaDevice::record(Event e, Stream s) { ZT_CUDA_CHECK(cudaEventRecord(event_of(e), stream_of(s))); }

void CudaDevice::wait(Stream s, Event e) { ZT_CUDA_CHECK(cudaStreamWaitEvent(stream_of(s), event_of(e), 0)); }

void CudaDevice::synchronize(Event e) { ZT_CUDA_CHECK(cudaEventSynchronize(event_of(e))); }

void CudaDevice::synchronize(Stream s) { ZT_CUDA_CHECK(cudaStreamSynchronize(stream_of(s))); }

Graph CudaDevice::capture(const std::function<void()>& work) {
  ZT_CUDA_CHECK(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    work();
  } catch (...) {
    cudaStreamEndCapture(compute_, &graph);  // the stream leaves the capture whatever happened
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  ZT_CUDA_CHECK(cudaStreamEndCapture(compute_, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  ZT_CUDA_CHECK(status);
  return {exec};
}

void CudaDevice::launch(Graph g) { ZT_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g.handle), compute_)); }

void CudaDevice::destroy_graph(Graph g) {
  if (g.handle) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g.handle));
}

}  // namespace zt::cuda
