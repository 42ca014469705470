// select_backend: training.device to a Backend. Built as zt_backend, apart from zt_kernels, so that
// the CUDA backend (zt_kernels_cuda, which builds on zt_kernels) can join it without a cycle.
#include "kernels/backend.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "core/error.hpp"

#ifdef ZT_HAVE_CUDA_BACKEND
#include "kernels/cuda/cuda_backend.hpp"
#endif

namespace zt {

Backend& select_backend(DeviceChoice device, int local_rank, int local_size, DType training_dtype) {
  if (device == DeviceChoice::Cpu) return cpu_backend();
#ifdef ZT_HAVE_CUDA_BACKEND
  if (device == DeviceChoice::Cuda) return cuda::backend(local_rank, training_dtype);
  // auto: every rank of a job must compute on the same kind of device: GPUs only when each local rank
  // has one (as many GPUs as local ranks, or one each that the launcher chose: a rank shown a
  // single GPU through CUDA_VISIBLE_DEVICES) and the dtype is one the GPU kernels compute.
  const int gpus = cuda::visible_devices();
  const char* chosen = std::getenv("CUDA_VISIBLE_DEVICES");
  const bool own_gpu = gpus >= local_size || (gpus == 1 && chosen && *chosen);
  if (gpus > 0 && own_gpu && training_dtype != DType::F16) return cuda::backend(local_rank, training_dtype);
  const std::string why = training_dtype == DType::F16 ? std::string("fp16 runs on the CPU only")
                                                       : fmt::format("{} ranks on this machine", local_size);
  if (gpus > 0 && local_rank == 0)
    spdlog::warn("training.device auto: training on the CPU although {} GPU(s) are visible ({}); "
                 "training.device cuda says why in detail",
                 gpus, why);
#else
  (void)local_rank;
  (void)local_size;
  (void)training_dtype;
  if (device == DeviceChoice::Cuda)
    fail("training.device: \"cuda\": this build of zerotrain has no CUDA backend (expected \"cpu\" or \"auto\"; "
         "build with the CUDA toolkit and NCCL to train on GPUs)");
#endif
  return cpu_backend();  // auto
}

}  // namespace zt
