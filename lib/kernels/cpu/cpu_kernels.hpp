#pragma once
// The fp32 CPU operator set of the model (every family), forward and backward (llm.c style: plain functions
// over flat float buffers; B batch, T time, C channels, NH heads, OC output channels, Vp padded
// vocabulary). Backward functions accumulate (+=) into their gradient outputs unless they say
// otherwise. Threads: OpenMP, following OMP_NUM_THREADS.
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/cross_entropy.hpp"
#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/gelu.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/kernel_profile.hpp"
#include "kernels/cpu/layernorm.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/residual.hpp"
#include "kernels/cpu/rmsnorm.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/cpu/swiglu.hpp"
