#pragma once
// The CPU backend: collectives on host buffers over MPI, deterministic in rank order.
//
// Every op runs on one thread at a time in issue order: a communication thread that owns this
// communicator's MPI calls runs queued asynchronous ops while the caller computes; a blocking op
// issued while nothing is queued runs directly on the caller's thread. Either way the ranks issue
// their MPI calls in the same order. The thread polls with backoff (never a busy loop), and an
// op that has not completed within the timeout aborts the whole job, naming the op, the rank,
// the sequence number and the step.
//
// Algorithms (volume per rank equals a ring's; reductions are bit-identical whatever the sizes):
//   reduce_scatter: every rank sends each other rank its piece directly; the receiver sums the N
//                   contributions in rank order (fp32 accumulation, one rounding), chunk by chunk
//                   into a bounded staging buffer.
//   all_gather:     every rank sends its piece directly to every other rank.
//   all_reduce:     reduce_scatter over an even split, then all_gather of the reduced pieces.
//   broadcast:      binomial tree, pipelined in chunks.
//
// MPI must provide at least MPI_THREAD_SERIALIZED (zt::MpiSession asks for MPI_THREAD_MULTIPLE);
// when nothing has initialised MPI, the factory does (ensure_mpi_initialised). Construction is
// collective (MPI_Comm_dup); destroy communicators before MPI is finalised.
#include <cstddef>
#include <memory>
#include <optional>

#include "comm/communicator.hpp"

namespace zt {

struct MpiCommOptions {
  double timeout_seconds = 600.0;      // per op, from when it starts running; <= 0: never
  std::optional<bool> sequence_check = std::nullopt;  // unset: on in debug builds or when ZT_COMM_CHECK=1
  // Elements per message and per reduction chunk; must be equal on every rank. 0: 32768. The
  // reduce_scatter staging buffer holds 2 chunks from each other rank.
  size_t chunk_elements = 0;
};

// Whether the sequence check is on by default: NDEBUG undefined, or ZT_COMM_CHECK=1 in the
// environment (ZT_COMM_CHECK=0 turns it off in debug builds).
bool sequence_check_default();

std::unique_ptr<Communicator> make_mpi_communicator(double timeout_seconds = 600.0);
std::unique_ptr<Communicator> make_mpi_communicator(const MpiCommOptions& options);

}  // namespace zt
