#pragma once
// The CUDA backend (kernels/backend.hpp's Backend on a GPU): the GPU of this process's local rank
// as a CudaDevice, with CudaModelOps in the training dtype and CudaVectorOps. One GPU per process,
// made on first use and kept until the process ends.
#include "core/dtype.hpp"
#include "kernels/backend.hpp"

namespace zt::cuda {

// CUDA devices this process can see; 0 when CUDA reports none or fails (no driver, no device).
// Never throws.
int visible_devices();

// The backend on GPU `local_rank` modulo the visible devices (a launcher that shows each rank one
// GPU shows it as device 0), computing in `training_dtype` (fp32 or bf16). Throws zt::Error naming
// training.device when it cannot be had: fp16 training (the kernels have no fp16 activations), no
// visible GPU, or a second GPU asked of the same process.
Backend& backend(int local_rank, DType training_dtype);

}  // namespace zt::cuda
