// The CUDA runtime calls the kernels, the CUDA backend (CudaDevice, the operator tables) and the
// tests make, for the emulated build: memory is host memory, copies are memcpy, kernels have
// already finished when launch() returns (emulate() is synchronous), so streams and events are
// handles with nothing to wait for, and there is one device with H100 limits. Allocations are
// remembered, so that cudaPointerGetAttributes tells device, page-locked and pageable memory
// apart as the real runtime does (CudaDevice decides by it which copies it must wait for).
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {

struct Allocation {
  size_t bytes;
  cudaMemoryType type;
};

std::mutex allocations_mutex;
std::map<const char*, Allocation> allocations;  // by first byte

void* allocate(size_t n, cudaMemoryType type) {
  // 256-byte aligned, like cudaMalloc (the kernels' vector paths and the workspaces rely on it).
  void* p = std::aligned_alloc(256, (n + 255) / 256 * 256);
  if (!p) return nullptr;
  std::lock_guard lock(allocations_mutex);
  allocations[static_cast<const char*>(p)] = {n, type};
  return p;
}

void release(void* p) {
  if (!p) return;
  {
    std::lock_guard lock(allocations_mutex);
    allocations.erase(static_cast<const char*>(p));
  }
  std::free(p);
}

cudaMemoryType type_of(const void* p) {
  const char* c = static_cast<const char*>(p);
  std::lock_guard lock(allocations_mutex);
  auto it = allocations.upper_bound(c);
  if (it == allocations.begin()) return cudaMemoryTypeUnregistered;
  --it;
  return c < it->first + it->second.bytes ? it->second.type : cudaMemoryTypeUnregistered;
}

std::atomic<int> handles{0};  // streams and events: distinct non-null handles, never dereferenced
template <typename Handle>
Handle new_handle() {
  return reinterpret_cast<Handle>(static_cast<intptr_t>(++handles) * 16);
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** p, size_t n) {
  *p = allocate(n, cudaMemoryTypeDevice);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  release(p);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) {
  *p = allocate(n, cudaMemoryTypeHost);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void* p) {
  release(p);
  return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p) {
  *attributes = cudaPointerAttributes{};
  attributes->type = type_of(p);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind) {
  std::memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t) {
  std::memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t n) {
  std::memset(p, value, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t) {
  std::memset(p, value, n);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  *s = new_handle<cudaStream_t>();
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new_handle<cudaEvent_t>();
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
const char* cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
const char* cudaGetErrorString(cudaError_t) { return "error in the emulated runtime"; }
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  *prop = cudaDeviceProp{};
  std::strncpy(prop->name, "CUDA emulated on the CPU", sizeof prop->name - 1);
  prop->totalGlobalMem = size_t(80) << 30;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = 227 * 1024; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = 132; return cudaSuccess;
    default: return cudaErrorInvalidValue;
  }
}
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { return cudaSuccess; }

}  // extern "C"
