// lib/kernels/cuda/cuda_matmul.cu, its launchers and kernels, compiled by g++ to run on the CPU (cuBLASLt:
// cublaslt_stub.cpp).
#include "cuda_emulator.hpp"

#include "kernels/cuda/cuda_matmul.cu"
