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
// (GPUs when this build has the CUDA backend, every rank of this machine has a GPU of its own, as
// many visible as ranks or one each chosen by the launcher through CUDA_VISIBLE_DEVICES, and the
// dtype is one the GPU kernels compute (fp32 or bf16), else the CPU, saying why when GPUs are
// visible). Both compute every model family. The CPU computes in fp32 whatever the training dtype.
// Throws zt::Error naming training.device when the choice cannot be met.
Backend& select_backend(DeviceChoice device, int local_rank, int local_size, DType training_dtype);

}  // namespace zt
