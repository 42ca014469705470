// The thread count of a rank: the cores it was given (affinity masks shared or not, a cgroup quota,
// SLURM's allocation, the ranks on this machine), OMP_NUM_THREADS over all of them, and the reason.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "../data/temp_dir.hpp"
#include "core/threads.hpp"

using namespace zt;

namespace {

ThreadInputs given(CpuMask mine, std::vector<CpuMask> local = {}) {
  ThreadInputs in;
  in.mine = mine;
  in.local = std::move(local);
  return in;
}

void write(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

}  // namespace

TEST_CASE("cpu masks count and print their CPUs", "[threads]") {
  CpuMask m = cpu_mask_of({0, 1, 2, 3, 8, 70, 71});
  CHECK(m.count() == 7);
  CHECK(m.ranges() == "0-3,8,70-71");
  CHECK(CpuMask{}.ranges() == "none");
}

TEST_CASE("one rank alone takes every CPU of its affinity mask", "[threads]") {
  ThreadChoice c = choose_threads(given(cpu_mask_of({0, 1, 2, 3})));
  CHECK(c.threads == 4);
  CHECK(c.why == "the 4 CPUs of its affinity mask 0-3");
  CHECK(choose_threads(given(cpu_mask_of({5}))).threads == 1);
}

TEST_CASE("ranks sharing a mask split it; ranks bound to their own cores keep them", "[threads]") {
  const CpuMask all = cpu_mask_of({0, 1, 2, 3});
  ThreadChoice c = choose_threads(given(all, {all, all}));
  CHECK(c.threads == 2);
  CHECK(c.why == "a share of 2 CPUs of the 4 CPUs of its affinity mask 0-3, shared by 2 ranks on this machine");
  // Three ranks on four CPUs: 1.33 each, one thread (never more threads than CPUs given).
  CHECK(choose_threads(given(all, {all, all, all})).threads == 1);
  // More ranks than CPUs: still one thread.
  CHECK(choose_threads(given(cpu_mask_of({0, 1}), std::vector<CpuMask>(4, cpu_mask_of({0, 1})))).threads == 1);
  // Bound (mpirun --bind-to core, srun --cpu-bind): disjoint masks, nothing shared.
  const CpuMask a = cpu_mask_of({0, 1}), b = cpu_mask_of({2, 3});
  c = choose_threads(given(a, {a, b}));
  CHECK(c.threads == 2);
  CHECK(c.why == "the 2 CPUs of its affinity mask 0-1");
  // Partly shared: CPUs 2-3 are also another rank's.
  c = choose_threads(given(all, {all, b}));
  CHECK(c.threads == 3);
}

TEST_CASE("a cgroup quota or SLURM's allocation bounds the threads", "[threads]") {
  const CpuMask all = cpu_mask_of({0, 1, 2, 3, 4, 5, 6, 7});
  ThreadInputs in = given(all);
  in.cgroup_cpus = 2.5;
  in.cgroup_file = "/sys/fs/cgroup/cpu.max";
  ThreadChoice c = choose_threads(in);
  CHECK(c.threads == 2);
  CHECK(c.why == "the cgroup's CPU quota of 2.5 CPUs in /sys/fs/cgroup/cpu.max");
  // Shared by the ranks of this machine.
  in = given(all, {all, all});
  in.cgroup_cpus = 4;
  in.cgroup_file = "/sys/fs/cgroup/job/cpu.max";
  c = choose_threads(in);
  CHECK(c.threads == 2);
  CHECK(c.why == "the cgroup's CPU quota of 4 CPUs in /sys/fs/cgroup/job/cpu.max, shared by 2 ranks on this machine");
  // A quota below one CPU still gives one thread.
  in = given(all);
  in.cgroup_cpus = 0.5;
  CHECK(choose_threads(in).threads == 1);
  // A quota above the mask changes nothing.
  in.cgroup_cpus = 16;
  CHECK(choose_threads(in).why == "the 8 CPUs of its affinity mask 0-7");
  in = given(all);
  in.slurm_cpus_per_task = 3;
  c = choose_threads(in);
  CHECK(c.threads == 3);
  CHECK(c.why == "SLURM_CPUS_PER_TASK=3");
  in = given(all, {all, all, all, all});
  in.slurm_cpus_on_node = 4;
  c = choose_threads(in);
  CHECK(c.threads == 1);
  CHECK(c.why == "SLURM_CPUS_ON_NODE=4, shared by 4 ranks on this machine");
}

TEST_CASE("OMP_NUM_THREADS overrides the choice and says what it overrode", "[threads]") {
  const CpuMask all = cpu_mask_of({0, 1});
  ThreadInputs in = given(all, {all, all});
  in.omp_num_threads = "3";
  ThreadChoice c = choose_threads(in);
  CHECK(c.threads == 3);
  CHECK(c.why == "OMP_NUM_THREADS=3; the cores it was given: 1, a share of 1 CPU of the 2 CPUs of its affinity mask "
                 "0-1, shared by 2 ranks on this machine");
  in.omp_num_threads = "4,2";  // nested levels: the first is this one
  CHECK(choose_threads(in).threads == 4);
  for (const char* bad : {"0", "-2", "many", ""}) {
    in.omp_num_threads = bad;
    c = choose_threads(in);
    CHECK(c.threads == 1);
    CHECK_THAT(c.why, Catch::EndsWith(std::string("; OMP_NUM_THREADS=\"") + bad + "\" ignored: not a positive number"));
  }
}

TEST_CASE("the cgroup quota is read along the process's cgroup path, v1 and v2", "[threads]") {
  TempDir dir;
  const std::filesystem::path root = dir.path;
  std::string file;
  SECTION("v2: the tightest cpu.max on the way up") {
    write(root / "self", "0::/job/step\n");
    write(root / "fs/job/step/cpu.max", "max 100000\n");
    write(root / "fs/job/cpu.max", "150000 100000\n");
    write(root / "fs/cpu.max", "400000 100000\n");
    CHECK(cgroup_cpu_quota(file, root / "fs", root / "self") == Approx(1.5));
    CHECK(file == (root / "fs/job/cpu.max").string());
  }
  SECTION("v2: no quota") {
    write(root / "self", "0::/\n");
    write(root / "fs/cpu.max", "max 100000\n");
    CHECK(cgroup_cpu_quota(file, root / "fs", root / "self") == 0);
  }
  SECTION("v2: a host path absent inside a container reaches the mounted root") {
    write(root / "self", "0::/system.slice/docker-1.scope\n");
    write(root / "fs/cpu.max", "200000 100000\n");
    CHECK(cgroup_cpu_quota(file, root / "fs", root / "self") == Approx(2));
  }
  SECTION("v1: cfs quota and period of the cpu controller") {
    write(root / "self", "5:memory:/x\n3:cpu,cpuacct:/x\n0::/\n");
    write(root / "fs/cpu,cpuacct/x/cpu.cfs_quota_us", "300000\n");
    write(root / "fs/cpu,cpuacct/x/cpu.cfs_period_us", "100000\n");
    write(root / "fs/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    write(root / "fs/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    CHECK(cgroup_cpu_quota(file, root / "fs", root / "self") == Approx(3));
    CHECK(file == (root / "fs/cpu,cpuacct/x/cpu.cfs_quota_us").string());
  }
  SECTION("nothing to read") {
    CHECK(cgroup_cpu_quota(file, root / "none", root / "none") == 0);
  }
}
