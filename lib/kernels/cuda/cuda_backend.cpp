#include "kernels/cuda/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/ledger.hpp"
#include "kernels/cuda/cuda_device.hpp"
#include "kernels/cuda/cuda_model_ops.hpp"
#include "kernels/cuda/vector_ops_table.hpp"

namespace zt::cuda {

namespace {

// What the process holds, destroyed in reverse order of the members: the tables before the device.
struct Process {
  std::mutex mutex;
  std::unique_ptr<CudaDevice> device;
  std::unique_ptr<CudaVectorOps> vector;
  std::map<DType, std::unique_ptr<CudaModelOps>> models;
  std::map<DType, std::unique_ptr<Backend>> backends;
};

Process& process() {
  MemoryLedger::instance();  // made first, so it outlives the buffers the tables free at exit
  static Process p;
  return p;
}

std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (status != cudaSuccess) return fmt::format("CUDA reports {}", cudaGetErrorString(status));
  return "CUDA sees no device";
}

}  // namespace

int visible_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error: a CPU run goes on without CUDA
    return 0;
  }
  return count;
}

Backend& backend(int local_rank, DType training_dtype) {
  if (training_dtype == DType::F16)
    fail("training.device: the GPU backend does not train in fp16 (fp16.enabled is true): its kernels compute in "
         "fp32 or bf16; set bf16.enabled (and fp16.enabled false), or training.device \"cpu\"");
  const int devices = visible_devices();
  if (devices == 0)
    fail("training.device: \"cuda\" needs a GPU, but {} (expected \"cpu\" on this machine)", no_device_reason());
  if (local_rank < 0) fail("training.device: local rank {} is negative", local_rank);
  // A launcher that shows each rank its own GPU (CUDA_VISIBLE_DEVICES per rank, SLURM's per-task
  // binding) shows it as device 0; one that shows every rank all of them, as device local_rank.
  // Two ranks on one GPU are refused where the ranks meet (the NCCL communicator).
  const int ordinal = local_rank % devices;

  Process& p = process();
  std::lock_guard lock(p.mutex);
  if (!p.device) {
    p.device = std::make_unique<CudaDevice>(ordinal);
    p.vector = std::make_unique<CudaVectorOps>(*p.device);
    spdlog::info("CUDA device {} of {}: {}, {:.1f} GiB, compute capability {}", ordinal, devices,
                 p.device->name(), double(p.device->memory_bytes()) / double(1u << 30),
                 p.device->compute_capability());
  } else if (p.device->ordinal() != ordinal) {
    fail("training.device: this process already computes on GPU {}; it cannot also take GPU {}",
         p.device->ordinal(), ordinal);
  }
  auto& backend = p.backends[training_dtype];
  if (!backend) {
    auto& model = p.models[training_dtype];
    model = std::make_unique<CudaModelOps>(*p.device, training_dtype);
    backend = std::make_unique<Backend>(Backend{*p.device, *model, *p.vector});
  }
  return *backend;
}

}  // namespace zt::cuda
