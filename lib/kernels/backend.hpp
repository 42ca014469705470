#pragma once
// A device with its two operator tables: what the model and the engine need to run somewhere.
#include <memory>
#include <string>

#include "core/device.hpp"
#include "kernels/model_ops.hpp"
#include "kernels/vector_ops.hpp"

namespace zt {

struct Backend {
  Device& device;
  ModelOps& model;
  VectorOps& vector;
};

// The CPU: fp32 model operators (oneDNN matmuls, OpenMP), host vector operators.
Backend& cpu_backend();

// The backend training.device asks for: "cpu", "cuda" (the GPU of this local rank), or "auto"
// (the GPU when this build has the CUDA backend and one is visible, else the CPU). model_dtype is
// the training dtype; the CPU computes in fp32 whatever it is. Throws zt::Error naming
// training.device when the choice cannot be met.
Backend& select_backend(const std::string& device, int local_rank, DType training_dtype);

}  // namespace zt
