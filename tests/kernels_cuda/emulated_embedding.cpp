// lib/kernels/cuda/embedding.cu, its launchers and kernels, compiled by g++ to run on the CPU.
#include "cuda_emulator.hpp"

#include "kernels/cuda/embedding.cu"
