// lib/kernels/cuda/cuda_moe_gemm.cu, its launchers and kernels, compiled by g++ to run on the CPU.
#include "cuda_emulator.hpp"

#include "kernels/cuda/cuda_moe_gemm.cu"
