// select_backend: training.device to a Backend. Built as zt_backend, apart from zt_kernels, so that
// the CUDA backend (zt_kernels_cuda, which builds on zt_kernels) can join it without a cycle.
#include "kernels/backend.hpp"

#include "core/error.hpp"

#ifdef ZT_HAVE_CUDA_BACKEND
#include "kernels/cuda/backend.hpp"
#endif

namespace zt {

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
