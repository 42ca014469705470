#include "kernels/backend.hpp"

#include "core/error.hpp"
#include "kernels/cpu/model_ops.hpp"
#include "kernels/cpu/vector_ops.hpp"

#ifdef ZT_HAVE_CUDA_BACKEND
#include "kernels/cuda/backend.hpp"
#endif

namespace zt {

Backend& cpu_backend() {
  static cpu::CpuModelOps model;
  static cpu::CpuVectorOps vector;
  static Backend backend{cpu_device(), model, vector};
  return backend;
}

Backend& select_backend(const std::string& device, int local_rank, DType training_dtype) {
  if (device == "cpu") return cpu_backend();
#ifdef ZT_HAVE_CUDA_BACKEND
  if (device == "cuda" || (device == "auto" && cuda::visible_devices() > 0))
    return cuda::backend(local_rank, training_dtype);
#else
  (void)local_rank;
  (void)training_dtype;
  if (device == "cuda")
    fail("training.device: \"cuda\": this build of zerotrain has no CUDA backend (expected \"cpu\" or \"auto\"; "
         "build with the CUDA toolkit and NCCL to train on GPUs)");
#endif
  if (device == "auto") return cpu_backend();
  fail("training.device: \"{}\": expected auto, cpu or cuda", device);
}

}  // namespace zt
