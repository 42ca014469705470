#pragma once
// The CUDA operator set (llm.c style: host launchers over device pointers, a size per dimension and
// a cudaStream_t; B batch, T time, C channels, NH heads, OC output channels, Vp padded vocabulary).
// Model operators take fp32 or bf16 tensors (one DType per call) and compute in fp32; their
// statistics (LayerNorm mean and rstd, attention and loss log-sum-exp, losses) are always fp32.
// Backward launchers accumulate (+=) into their gradient outputs unless they say otherwise, as
// kernels/cpu does. Every result is deterministic: the same inputs give the same bits.
// Errors (a failed CUDA call, a bad shape, an unsupported dtype) throw zt::Error naming the operator.
#include "kernels/cuda/adamw.hpp"
#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/classifier.hpp"
#include "kernels/cuda/embedding.hpp"
#include "kernels/cuda/gelu.hpp"
#include "kernels/cuda/layernorm.hpp"
#include "kernels/cuda/matmul.hpp"
#include "kernels/cuda/residual.hpp"
#include "kernels/cuda/rmsnorm.hpp"
#include "kernels/cuda/rope.hpp"
#include "kernels/cuda/swiglu.hpp"
#include "kernels/cuda/vector_ops.hpp"
