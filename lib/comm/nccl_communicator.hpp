#pragma once
// The GPU backend: the same collectives on device buffers through NCCL.
//
// Ops run on a dedicated communication stream that first waits for the work already queued on
// the compute stream (so inputs produced there are ready). Work::sync(stream) makes a stream wait
// for the op (cudaStreamWaitEvent) without blocking the host; Work::wait() blocks the host until
// the op is done. A blocking op (async=false) orders the compute stream after it at once; only
// barrier(async=false) also blocks the host. Buffers must stay allocated until the op has
// completed on the device. Control values travel over MPI (MpiControlChannel), never through NCCL.
//
// Set-up: MPI gives rank, world size and local rank; the local rank selects the device
// (cudaSetDevice); rank 0 creates the NCCL unique id and broadcasts it over MPI.
//
// Numerics: reductions use NCCL's own summation order (ring or tree, chosen by NCCL), so unlike
// the CPU backend the result is not promised to be the rank-order sum, nor bit-identical across
// different bucketings. bf16/fp16 use ncclBfloat16/ncclFloat16.
//
// Bytes sent are what NCCL's ring algorithms send from this rank: the formulas of comm_volume.hpp
// for even pieces, and the per-piece rings of the uneven fallback (which forward more).
//
// A watchdog thread aborts the job when an op has not completed on the device within the
// timeout, naming the op, the rank, the sequence number and the step.
#include <cuda_runtime_api.h>

#include <memory>
#include <optional>

#include "comm/communicator.hpp"

namespace zt {

struct NcclCommOptions {
  double timeout_seconds = 600.0;  // <= 0: never
  cudaStream_t compute_stream = nullptr;  // where inputs are produced and blocking ops order; nullptr: default
  std::optional<bool> sequence_check;  // unset: on in debug builds or when ZT_COMM_CHECK=1
};

// Requires a CUDA device for every local rank; initialises MPI when nothing has (as
// make_mpi_communicator does). Collective. Issue ops from one thread.
std::unique_ptr<Communicator> make_nccl_communicator(double timeout_seconds = 600.0);
std::unique_ptr<Communicator> make_nccl_communicator(const NcclCommOptions& options);

}  // namespace zt
