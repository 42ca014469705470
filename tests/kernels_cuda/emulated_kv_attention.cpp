// lib/kernels/cuda/kv_attention.cu, its launcher and kernels, compiled by g++ to run on the CPU.
#include "cuda_emulator.hpp"

#include "kernels/cuda/kv_attention.cu"
