// A small MPI program for job-level tests, run through mpirun (run_failure_case.sh, CTest):
//   probe no_session DIR  no MpiSession: the factory initialises MPI itself; checks one sum
//   probe timeout  DIR   rank 1 skips a collective; the others must abort after 2 s
//   probe mismatch DIR   rank 1 issues all_gather where the others issue reduce_scatter
//   probe loop     DIR   every rank loops on collectives until killed (the script kills one)
//   probe loop_all_to_all DIR   the same with all_to_all (expert parallelism's dispatch)
//   probe exit     DIR   rank 1 calls exit(3) mid-job without MPI_Finalize
// Every rank writes DIR/rank<r>.pid first, so the script can check that no rank outlives the job.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "comm/mpi_session.hpp"

using namespace zt;

namespace {

void write_pid(const std::string& dir, int rank) {
  std::ofstream(dir + "/rank" + std::to_string(rank) + ".pid") << getpid() << "\n";
}

// Collectives for up to `seconds`; a healthy job never gets to the end.
void loop_collectives(Communicator& c, double seconds) {
  std::vector<float> buf(1000, 1.0f);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (int64_t step = 0; std::chrono::steady_clock::now() < end; ++step) {
    c.set_step(step);
    c.all_reduce(buf.data(), buf.data(), buf.size(), DType::F32, ReduceOp::Max);
  }
}

// The same with all_to_all: every rank sends each other rank 1000 elements.
void loop_all_to_all(Communicator& c, double seconds) {
  const size_t n = size_t(c.world_size());
  std::vector<float> send(1000 * n, 1.0f), recv(1000 * n);
  std::vector<size_t> counts(n, 1000);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (int64_t step = 0; std::chrono::steady_clock::now() < end; ++step) {
    c.set_step(step);
    c.all_to_all(send.data(), counts, recv.data(), counts, DType::F32);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s no_session|timeout|mismatch|loop|loop_all_to_all|exit DIR\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  if (mode == "no_session") {
    auto comm = make_mpi_communicator(60.0);
    float x = float(comm->rank() + 1);
    comm->all_reduce(&x, &x, 1, DType::F32, ReduceOp::Sum);
    const int n = comm->world_size();
    const bool ok = x == float(n * (n + 1) / 2);
    std::printf("rank %d of %d: sum %g %s\n", comm->rank(), n, x, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
  }
  MpiSession session(argc, argv);
  const int rank = session.world().rank;
  write_pid(dir, rank);

  MpiCommOptions options;
  options.timeout_seconds = mode == "timeout" ? 2.0 : 60.0;
  options.sequence_check = mode == "mismatch";
  auto comm = make_mpi_communicator(options);
  comm->barrier();

  std::vector<float> buf(30 * size_t(comm->world_size()), 1.0f);
  if (mode == "timeout") {
    comm->set_step(42);
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(60));  // skipped the all_reduce below
    } else {
      // Rank 0 waits on an async op (the communication thread times out), the rest block.
      comm->all_reduce(buf.data(), buf.data(), 30, DType::F32, ReduceOp::Sum, rank == 0)->wait();
    }
  } else if (mode == "mismatch") {
    comm->set_step(5);
    if (rank == 1)
      comm->all_gather(buf.data() + 30, buf.data(), 10, DType::F32);
    else
      comm->reduce_scatter(buf.data(), buf.data() + 10 * size_t(rank), 10, DType::F32,
                           ReduceOp::Sum);
    std::this_thread::sleep_for(std::chrono::seconds(60));
  } else if (mode == "loop") {
    loop_collectives(*comm, 60.0);
  } else if (mode == "loop_all_to_all") {
    loop_all_to_all(*comm, 60.0);
  } else if (mode == "exit") {
    std::vector<float> x(10, 1.0f);
    for (int i = 0; i < 20; ++i)
      comm->all_reduce(x.data(), x.data(), 10, DType::F32, ReduceOp::Max);
    if (rank == 1)
      std::exit(3);  // no MPI_Finalize: locals (session, communicator) are not destroyed
    loop_collectives(*comm, 60.0);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  std::fprintf(stderr, "rank %d: the job should have ended before this point\n", rank);
  return 0;
}
