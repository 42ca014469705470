// Collectives benchmark: the deterministic reduce_scatter, all_gather and all_reduce of the MPI
// backend against MPI's own MPI_Reduce_scatter_block, MPI_Allgather and MPI_Allreduce, fp32.
//   mpirun -np N bench_comm [--min ELEMENTS] [--max ELEMENTS] [--seconds S] [--chunk ELEMENTS]
// Sizes are total elements per rank (the send buffer); they grow by 4x from --min to --max.
// Each point reports the median over repetitions of the slowest rank's time, the bus bandwidth
// (bytes each rank sends / time, as nccl-tests reports it) and the CPU the process used per
// second of wall time during the op (100% = one core busy), which shows whether waiting spins.
#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "comm/mpi_session.hpp"

using namespace zt;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Timing {
  double seconds = 0;      // median of the slowest rank's time per repetition
  double cpu_percent = 0;  // process CPU time / wall time, averaged over ranks
};

// Runs op repeatedly (after one warm-up) for about `budget` seconds, at least 3 times.
Timing measure(const std::function<void()>& op, double budget) {
  op();
  std::vector<double> times;
  double cpu = 0, wall = 0;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double c0 = cpu_seconds();
    const double t0 = MPI_Wtime();
    op();
    double t = MPI_Wtime() - t0;
    cpu += cpu_seconds() - c0;
    wall += t;
    double slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    times.push_back(slowest);
    // Rank 0 decides when to stop, so every rank runs the op the same number of times.
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int more = times.size() < 3 || (elapsed < budget && times.size() < 200);
    MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!more) break;
  }
  std::sort(times.begin(), times.end());
  double pct = 100.0 * cpu / wall, mean_pct = 0;
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Allreduce(&pct, &mean_pct, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return {times[times.size() / 2], mean_pct / n};
}

size_t arg_size(int argc, char** argv, const char* name, size_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(argc, argv);
  const size_t min_elements = arg_size(argc, argv, "--min", 1024);
  const size_t max_elements = arg_size(argc, argv, "--max", size_t(16) << 20);
  const double budget = double(arg_size(argc, argv, "--seconds", 1));
  MpiCommOptions options;
  options.chunk_elements = arg_size(argc, argv, "--chunk", 0);
  auto comm = make_mpi_communicator(options);
  const int n = comm->world_size(), rank = comm->rank();

  if (rank == 0) {
    std::printf(
        "ranks %d, fp32; time = median of the slowest rank; busbw = bytes sent per rank / time\n",
        n);
    std::printf(
        "| op | elements/rank | ours ms | MPI ms | ours/MPI | ours busbw GB/s | MPI busbw GB/s | "
        "ours CPU %% | MPI CPU %% |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  for (size_t total = min_elements; total <= max_elements; total *= 4) {
    const size_t piece = total / size_t(n);
    const size_t elements = piece * size_t(n);
    std::vector<float> send(elements), recv(elements);
    for (size_t i = 0; i < elements; ++i) send[i] = float((i * 7 + size_t(rank)) % 101) * 0.01f;

    struct Case {
      const char* name;
      std::function<void()> ours, theirs;
      double bytes_sent;  // per rank
    };
    const double rs_bytes = double(elements - piece) * 4;
    Case cases[] = {
        {"reduce_scatter",
         [&] { comm->reduce_scatter(send.data(), recv.data(), piece, DType::F32, ReduceOp::Sum); },
         [&] {
           MPI_Reduce_scatter_block(send.data(), recv.data(), int(piece), MPI_FLOAT, MPI_SUM,
                                    MPI_COMM_WORLD);
         },
         rs_bytes},
        {"all_gather", [&] { comm->all_gather(send.data(), recv.data(), piece, DType::F32); },
         [&] {
           MPI_Allgather(send.data(), int(piece), MPI_FLOAT, recv.data(), int(piece), MPI_FLOAT,
                         MPI_COMM_WORLD);
         },
         rs_bytes},
        {"all_reduce",
         [&] { comm->all_reduce(send.data(), recv.data(), elements, DType::F32, ReduceOp::Sum); },
         [&] {
           MPI_Allreduce(send.data(), recv.data(), int(elements), MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD);
         },
         2 * rs_bytes},
    };
    for (const Case& c : cases) {
      const Timing ours = measure(c.ours, budget);
      const Timing theirs = measure(c.theirs, budget);
      if (rank == 0)
        std::printf("| %s | %zu | %.3f | %.3f | %.2f | %.2f | %.2f | %.0f | %.0f |\n", c.name,
                    elements, ours.seconds * 1e3, theirs.seconds * 1e3,
                    ours.seconds / theirs.seconds, c.bytes_sent / ours.seconds / 1e9,
                    c.bytes_sent / theirs.seconds / 1e9, ours.cpu_percent, theirs.cpu_percent);
      std::fflush(stdout);
    }
  }
  return 0;
}
