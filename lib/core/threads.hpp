#pragma once
// How many OpenMP threads a rank computes with (oneDNN's matmuls included: they run on the same
// OpenMP runtime), and how those threads wait.
//
// By default a rank uses the cores it was given and no more: its share of the CPUs in its affinity
// mask (a CPU that k ranks of this machine may all run on counts 1/k for each; ranks bound to
// their own cores keep them whole), within the cgroup's CPU quota shared by the ranks of this
// machine, and within what a SLURM allocation gives (SLURM_CPUS_PER_TASK, SLURM_CPUS_ON_NODE over
// the ranks of this machine). OMP_NUM_THREADS, when set to a positive number, wins, and the choice
// says so beside the share it overrides.
//
// Idle OpenMP threads sleep instead of spinning (OMP_WAIT_POLICY=passive) unless the user set
// OMP_WAIT_POLICY or GOMP_SPINCOUNT: a spinning thread takes a core from every other process, so
// two jobs on one machine each ran 20-50 times slower than alone. libgomp reads its environment
// once, when it is loaded, before main(); the policy therefore needs the program to start again
// with it set (exec_with_passive_openmp_wait), before anything else happens in main(). Setting
// OMP_WAIT_POLICY yourself avoids the second start (valgrind does not follow it by default).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zt {

// A set of CPUs (as sched_getaffinity gives them), plain data so that ranks can exchange it.
struct CpuMask {
  static constexpr int kMaxCpus = 1024;
  std::array<uint64_t, kMaxCpus / 64> words{};

  void set(int cpu) { words[size_t(cpu) / 64] |= uint64_t(1) << (cpu % 64); }
  bool has(int cpu) const { return (words[size_t(cpu) / 64] >> (cpu % 64)) & 1; }
  int count() const;
  std::string ranges() const;  // "0-3,8"
  bool operator==(const CpuMask&) const = default;
};

CpuMask cpu_mask_of(std::initializer_list<int> cpus);

// What a rank was given, from which the thread count is decided.
struct ThreadInputs {
  CpuMask mine;                 // this rank's affinity mask
  std::vector<CpuMask> local;   // the masks of every rank of the job on this machine, this one's included
  double cgroup_cpus = 0;       // the cgroup's CPU quota in CPUs (quota / period); 0: no quota
  std::string cgroup_file;      // where the quota was read
  int slurm_cpus_per_task = 0;  // 0: not set
  int slurm_cpus_on_node = 0;   // 0: not set
  std::optional<std::string> omp_num_threads;  // the environment's OMP_NUM_THREADS
};

struct ThreadChoice {
  int threads = 1;
  std::string why;  // "the 2 CPUs of its affinity mask 0-1", "the cgroup's CPU quota of 1.5 CPUs in ..."
};

// The decision alone (no system calls): what zerotrain's start line reports.
ThreadChoice choose_threads(const ThreadInputs& in);

// This process's affinity mask (sched_getaffinity).
CpuMask process_affinity();

// The CPU quota of the cgroup this process is in, the tightest along its path up to the root:
// cgroup v2 (cpu.max: "QUOTA PERIOD" or "max PERIOD") or v1 (cpu.cfs_quota_us / cpu.cfs_period_us).
// Returns 0 when there is none; `file` gets the file that set it. The paths are parameters for tests.
double cgroup_cpu_quota(std::string& file, const std::string& cgroup_root = "/sys/fs/cgroup",
                        const std::string& proc_self_cgroup = "/proc/self/cgroup");

// Everything above read for this process, given the masks of the ranks on this machine.
ThreadInputs thread_inputs(const CpuMask& mine, std::vector<CpuMask> local);

// Decides, sets the OpenMP thread count, and returns the choice.
ThreadChoice use_compute_threads(const CpuMask& mine, std::vector<CpuMask> local);

// Call first thing in main(): when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, sets
// OMP_WAIT_POLICY=passive and starts the program again (the same process, argv and environment)
// so that the OpenMP runtime reads it. Returns only when nothing had to be done, or when the
// restart failed (then the environment is as it was, and openmp_wait_policy() says why).
void exec_with_passive_openmp_wait(char** argv);

// How idle OpenMP threads wait in this process, for the start line: "sleep (OMP_WAIT_POLICY=passive)".
std::string openmp_wait_policy();

}  // namespace zt
