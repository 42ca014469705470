#include "kernels/cuda/check.hpp"

#include <spdlog/spdlog.h>

#include "core/error.hpp"

namespace zt::cuda {

void throw_error(const std::string& message) { throw Error(message); }

void warn(const std::string& message) { spdlog::warn("{}", message); }

void cuda_call_failed(cudaError_t status, const char* call, const char* where) {
  fail("{}: {} failed: {}: {}", where, call, cudaGetErrorName(status), cudaGetErrorString(status));
}

}  // namespace zt::cuda
