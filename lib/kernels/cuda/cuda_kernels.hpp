#pragma once
// The CUDA operator set (llm.c style: host launchers over device pointers, a size per dimension and
// a cudaStream_t; B batch, T time, C channels, NH heads, OC output channels, Vp padded vocabulary).
// Model operators take fp32 or bf16 tensors (one DType per call) and compute in fp32; their
// statistics (LayerNorm mean and rstd, attention and loss log-sum-exp, losses) are always fp32.
// Backward launchers accumulate (+=) into their gradient outputs unless they say otherwise, as
// kernels/cpu does. Every result is deterministic: the same inputs give the same bits.
// Errors (a failed CUDA call, a bad shape, an unsupported dtype) throw zt::Error naming the operator.
#include "kernels/cuda/cuda_adamw.hpp"
#include "kernels/cuda/cuda_attention.hpp"
#include "kernels/cuda/classifier.hpp"
#include "kernels/cuda/cuda_embedding.hpp"
#include "kernels/cuda/cuda_gelu.hpp"
#include "kernels/cuda/cuda_layernorm.hpp"
#include "kernels/cuda/cuda_matmul.hpp"
#include "kernels/cuda/cuda_moe.hpp"
#include "kernels/cuda/cuda_moe_gemm.hpp"
#include "kernels/cuda/cuda_adapter.hpp"
#include "kernels/cuda/cuda_residual.hpp"
#include "kernels/cuda/cuda_rmsnorm.hpp"
#include "kernels/cuda/cuda_rope.hpp"
#include "kernels/cuda/cuda_swiglu.hpp"
#include "kernels/cuda/cuda_vector_ops.hpp"
