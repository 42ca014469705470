#pragma once
// Error checks for the CUDA kernels: a failed CUDA or cuBLASLt call, a failed kernel launch or a bad
// argument becomes a zt::Error naming the call (or the operator and the requirement it broke).
// Plain C++ with no fmt: the .cu files include it, and nvcc cannot compile fmt's format strings.
#include <cuda_runtime_api.h>

#include <sstream>
#include <string>

namespace zt::cuda {

// Throws zt::Error(message).
[[noreturn]] void throw_error(const std::string& message);
// Logs a warning line (spdlog).
void warn(const std::string& message);
// Throws zt::Error "<where>: <call> failed: <CUDA error name>: <description>".
[[noreturn]] void cuda_call_failed(cudaError_t status, const char* call, const char* where);

inline void check_cuda(cudaError_t status, const char* call, const char* where) {
  if (status != cudaSuccess) cuda_call_failed(status, call, where);
}

// Throws zt::Error with the parts streamed together when ok is false: require(C % 8 == 0,
// "layernorm_forward: C = ", C, " must be a multiple of 8").
template <typename... Parts>
void require(bool ok, const Parts&... parts) {
  if (ok) return;
  std::ostringstream message;
  (message << ... << parts);
  throw_error(message.str());
}

}  // namespace zt::cuda

// Every CUDA runtime call goes through ZT_CUDA_CHECK; kernel launches are checked by launch()
// (common.cuh), which names the kernel.
#define ZT_CUDA_CHECK(call) ::zt::cuda::check_cuda((call), #call, __func__)
