// lib/kernels/cuda/round.cu, its launcher and kernel, compiled by g++ to run on the CPU.
#include "cuda_emulator.hpp"

#include "kernels/cuda/round.cu"
