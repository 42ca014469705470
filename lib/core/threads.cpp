#include "core/threads.hpp"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

namespace zt {

int CpuMask::count() const {
  int n = 0;
  for (uint64_t w : words) n += std::popcount(w);
  return n;
}

std::string CpuMask::ranges() const {
  std::string out;
  for (int cpu = 0; cpu < kMaxCpus; ++cpu) {
    if (!has(cpu)) continue;
    int last = cpu;
    while (last + 1 < kMaxCpus && has(last + 1)) ++last;
    out += fmt::format("{}{}", out.empty() ? "" : ",", cpu);
    if (last > cpu) out += fmt::format("-{}", last);
    cpu = last;
  }
  return out.empty() ? "none" : out;
}

CpuMask cpu_mask_of(std::initializer_list<int> cpus) {
  CpuMask m;
  for (int cpu : cpus) m.set(cpu);
  return m;
}

namespace {

// A positive integer, or nullopt ("4", not "4x", "0" or "-1").
std::optional<int> positive_int(const std::string& text) {
  int n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1) return std::nullopt;
  return n;
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? positive_int(v).value_or(0) : 0;
}

std::string cpus(double n) { return fmt::format("{:.3g} CPU{}", n, n == 1 ? "" : "s"); }

struct Limit {
  double cpus = 0;
  std::string why;
};

// What bounds a rank's threads, each as CPUs for this rank with the reason.
std::vector<Limit> limits_of(const ThreadInputs& in) {
  std::vector<CpuMask> local = in.local.empty() ? std::vector<CpuMask>{in.mine} : in.local;
  const int ranks = int(local.size());
  const std::string among = fmt::format("{} ranks on this machine", ranks);
  // A CPU that k ranks here may run on counts 1/k for each of them.
  double share = 0;
  for (int cpu = 0; cpu < CpuMask::kMaxCpus; ++cpu) {
    if (!in.mine.has(cpu)) continue;
    int sharing = 0;
    for (const CpuMask& m : local) sharing += m.has(cpu) ? 1 : 0;
    share += 1.0 / std::max(1, sharing);
  }
  std::vector<Limit> limits;
  const int own = in.mine.count();
  if (share >= own - 1e-9)
    limits.push_back({double(own), fmt::format("the {} of its affinity mask {}", cpus(own), in.mine.ranges())});
  else
    limits.push_back({share, fmt::format("a share of {} of the {} of its affinity mask {}, shared by {}", cpus(share),
                                         cpus(own), in.mine.ranges(), among)});
  if (in.cgroup_cpus > 0)
    limits.push_back({in.cgroup_cpus / ranks, fmt::format("the cgroup's CPU quota of {} in {}{}", cpus(in.cgroup_cpus),
                                                          in.cgroup_file, ranks > 1 ? ", shared by " + among : "")});
  if (in.slurm_cpus_per_task > 0)
    limits.push_back({double(in.slurm_cpus_per_task), fmt::format("SLURM_CPUS_PER_TASK={}", in.slurm_cpus_per_task)});
  if (in.slurm_cpus_on_node > 0)
    limits.push_back(
        {double(in.slurm_cpus_on_node) / ranks,
         fmt::format("SLURM_CPUS_ON_NODE={}{}", in.slurm_cpus_on_node, ranks > 1 ? ", shared by " + among : "")});
  return limits;
}

}  // namespace

ThreadChoice choose_threads(const ThreadInputs& in) {
  const std::vector<Limit> limits = limits_of(in);
  const Limit& tightest = *std::min_element(limits.begin(), limits.end(),
                                            [](const Limit& a, const Limit& b) { return a.cpus < b.cpus; });
  // Whole threads, never more than the CPUs given (a thread on a CPU it shares waits for it at
  // every barrier), and at least one.
  ThreadChoice c{std::max(1, int(std::floor(tightest.cpus + 1e-9))), tightest.why};
  if (!in.omp_num_threads) return c;
  // libgomp takes "N" or a list "N,M,..." for nested levels; the first is this level's.
  const std::string& text = *in.omp_num_threads;
  if (auto n = positive_int(text.substr(0, text.find(',')))) {
    const int given = c.threads;
    c.threads = *n;
    c.why = fmt::format("OMP_NUM_THREADS={}; the cores it was given: {}, {}", text, given, c.why);
  } else {
    c.why += fmt::format("; OMP_NUM_THREADS=\"{}\" ignored: not a positive number", text);
  }
  return c;
}

CpuMask process_affinity() {
  CpuMask mask;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    // No mask to read: every online CPU.
    const long n = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    for (int cpu = 0; cpu < std::min<long>(n, CpuMask::kMaxCpus); ++cpu) mask.set(cpu);
    return mask;
  }
  for (int cpu = 0; cpu < CpuMask::kMaxCpus && cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) mask.set(cpu);
  return mask;
}

namespace {

std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The quota in CPUs set in cgroup directory `dir`, 0 when none.
double quota_in(const std::filesystem::path& dir, bool v2, std::string& file) {
  double quota = 0, period = 0;
  if (v2) {
    file = (dir / "cpu.max").string();
    std::istringstream words(first_line(file));
    std::string q;
    if (!(words >> q >> period) || q == "max") return 0;
    quota = std::atof(q.c_str());
  } else {
    file = (dir / "cpu.cfs_quota_us").string();
    quota = std::atof(first_line(file).c_str());
    period = std::atof(first_line(dir / "cpu.cfs_period_us").c_str());
  }
  return quota > 0 && period > 0 ? quota / period : 0;
}

}  // namespace

double cgroup_cpu_quota(std::string& file, const std::string& cgroup_root, const std::string& proc_self_cgroup) {
  namespace fs = std::filesystem;
  double best = 0;
  std::ifstream in(proc_self_cgroup);
  for (std::string line; std::getline(in, line);) {
    // "0::/path" (v2) or "4:cpu,cpuacct:/path" (v1)
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    fs::path path = line.substr(b + 1);
    const bool v2 = controllers.empty();
    fs::path base = cgroup_root;
    if (!v2) {
      if (("," + controllers + ",").find(",cpu,") == std::string::npos) continue;
      base = fs::exists(base / controllers) ? base / controllers : base / "cpu";
    }
    // The quota of every cgroup on the way up applies. Inside a container the path may name the
    // host's hierarchy, absent here: the walk reaches the mounted root all the same.
    for (fs::path p = path.relative_path();; p = p.parent_path()) {
      std::string where;
      const double q = quota_in(base / p, v2, where);
      if (q > 0 && (best == 0 || q < best)) best = q, file = where;
      if (p.empty()) break;
    }
  }
  return best;
}

ThreadInputs thread_inputs(const CpuMask& mine, std::vector<CpuMask> local) {
  ThreadInputs in;
  in.mine = mine;
  in.local = std::move(local);
  in.cgroup_cpus = cgroup_cpu_quota(in.cgroup_file);
  in.slurm_cpus_per_task = env_int("SLURM_CPUS_PER_TASK");
  in.slurm_cpus_on_node = env_int("SLURM_CPUS_ON_NODE");
  if (const char* v = std::getenv("OMP_NUM_THREADS")) in.omp_num_threads = v;
  return in;
}

ThreadChoice use_compute_threads(const CpuMask& mine, std::vector<CpuMask> local) {
  ThreadChoice c = choose_threads(thread_inputs(mine, std::move(local)));
  omp_set_num_threads(c.threads);
  return c;
}

namespace {
std::string g_restart_failure;  // why exec_with_passive_openmp_wait could not restart
}

void exec_with_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  // The file itself, not /proc/self/exe: the process takes its name (ps, top, pkill) from the path it
  // was started from, which would be "exe".
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  const std::string deleted = " (deleted)";  // rebuilt while running: only /proc/self/exe still reaches it
  std::string path = n > 0 ? std::string(self, size_t(n)) : "/proc/self/exe";
  if (path.size() >= deleted.size() && path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0)
    path = "/proc/self/exe";
  execv(path.c_str(), argv);
  g_restart_failure = std::strerror(errno);
  unsetenv("OMP_WAIT_POLICY");
}

std::string openmp_wait_policy() {
  if (!g_restart_failure.empty())
    return "spin a while, then sleep (libgomp's default: starting again with OMP_WAIT_POLICY=passive failed: " +
           g_restart_failure + ")";
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  std::string p = policy ? policy : "";
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  if (p == "passive") return "sleep (OMP_WAIT_POLICY=passive)";
  if (p == "active") return "spin (OMP_WAIT_POLICY=active)";
  if (spin) return fmt::format("spin GOMP_SPINCOUNT={} times, then sleep", spin);
  return "spin a while, then sleep (libgomp's default)";
}

}  // namespace zt
