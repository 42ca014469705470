// The CPU backend: the process's CPU device with the fp32 model operators and the host vector
// operators.
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_model_ops.hpp"
#include "kernels/cpu/cpu_vector_ops.hpp"

namespace zt {

Backend& cpu_backend() {
  static cpu::CpuModelOps model;
  static cpu::CpuVectorOps vector;
  static Backend backend{cpu_device(), model, vector};
  return backend;
}

}  // namespace zt
