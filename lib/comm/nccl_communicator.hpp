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
// Set-up: MPI gives rank, world size and local rank; the device is the local rank modulo the
// visible devices (a launcher that shows each rank its own GPU shows it as device 0); the ranks
// compare their GPUs' UUIDs and refuse to share one; rank 0 creates the NCCL unique id and
// broadcasts it. Host values go over channels between the ranks (NcclHostSide): MPI's by default,
// or a caller's (tests run ranks as threads of one process over an emulated NCCL).
//
// Numerics: reductions use NCCL's own summation order (ring or tree, chosen by NCCL), so unlike
// the CPU backend the result is not promised to be the rank-order sum, nor bit-identical across
// different bucketings. bf16/fp16 use ncclBfloat16/ncclFloat16.
//
// Bytes sent are what NCCL's ring algorithms send from this rank: the formulas of comm_volume.hpp
// for even pieces, and the per-piece rings of the uneven fallback (which forward more).
//
// A watchdog thread aborts the job when an op has not completed on the device within the
// timeout, naming the op, the rank, the sequence number and the step; and at once when NCCL
// reports an asynchronous error (ncclCommGetAsyncError: a peer or the network failed, and the op's
// kernel would otherwise wait out the timeout), naming the rank, the op in flight and NCCL's message.
#include <cuda_runtime_api.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"  // WorldInfo

namespace zt {

class CommCounters;

struct NcclCommOptions {
  double timeout_seconds = 600.0;  // <= 0: never
  cudaStream_t compute_stream = nullptr;  // where inputs are produced and blocking ops order; nullptr: default
  std::optional<bool> sequence_check = std::nullopt;  // unset: on in debug builds or when ZT_COMM_CHECK=1
};

// How the ranks reach each other on the host: where this rank sits, and a maker of host channels
// between the same ranks (each counting into `counters`, naming `step` when it times out). The
// communicator makes two: control() (counted in its stats) and one of its own for set-up and the
// sequence check.
// split: the host side of the ranks that pass the same color (Communicator::split), whose world
// keeps this rank's local_rank and local_size, which chose its device; empty: split is refused.
struct NcclHostSide {
  WorldInfo world;
  std::function<std::unique_ptr<ControlChannel>(CommCounters& counters, const std::atomic<int64_t>* step)> channel;
  std::function<NcclHostSide(int color, int key)> split;
};

// Requires a CUDA device for every local rank; initialises MPI when nothing has (as
// make_mpi_communicator does). Collective. Issue ops from one thread.
std::unique_ptr<Communicator> make_nccl_communicator(double timeout_seconds = 600.0);
std::unique_ptr<Communicator> make_nccl_communicator(const NcclCommOptions& options);
// The same over a caller's host side.
std::unique_ptr<Communicator> make_nccl_communicator(const NcclCommOptions& options, NcclHostSide host);

}  // namespace zt
