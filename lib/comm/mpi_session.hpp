#pragma once
// MPI start-up and shut-down for the process, and where this rank sits in the job.
// A program creates one MpiSession before any communicator and destroys communicators first.
// Without a launcher MPI starts as a singleton (world of 1), so zerotrain runs as one rank.
#include <string_view>

namespace zt {

struct WorldInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // rank among the processes of this machine (MPI_COMM_TYPE_SHARED)
  int local_size = 1;
};

// Reads rank, world size and local rank from MPI_COMM_WORLD. MPI must be initialised.
WorldInfo mpi_world_info();

class MpiSession {
public:
  // MPI_Init_thread asking for MPI_THREAD_MULTIPLE, unless MPI is already initialised (then this
  // session neither initialises nor finalises it).
  MpiSession();
  MpiSession(int& argc, char**& argv);
  ~MpiSession();  // MPI_Finalize when this session initialised MPI
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int thread_level() const { return thread_level_; }  // MPI_THREAD_* provided
  const WorldInfo& world() const { return world_; }

private:
  void init(int* argc, char*** argv);
  bool owns_mpi_ = false;
  int thread_level_ = 0;
  WorldInfo world_;
};

// For programs and tests that do not manage MPI themselves: initialises MPI as MpiSession does
// when nothing has yet, and finalises it at process exit (after the destructors of static
// objects created later, such as a static communicator). make_mpi_communicator calls it.
void ensure_mpi_initialised();

// Exit codes of jobs ended by the communication layer.
constexpr int kCommTimeoutExitCode = 124;
constexpr int kCommMismatchExitCode = 70;
constexpr int kCommErrorExitCode = 74;  // a collective failed (NCCL's asynchronous error)

// Ends the whole job from any thread: logs `reason` as one critical line, flushes the logs, then
// MPI_Abort on MPI_COMM_WORLD (every rank goes, mpirun exits non-zero); without MPI, _Exit.
// Use it instead of returning from main when a rank fails in a multi-rank job: MPI_Finalize
// waits for the other ranks, which would wait for this one in their next collective.
[[noreturn]] void abort_job(int exit_code, std::string_view reason);

}  // namespace zt
