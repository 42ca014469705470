#include <chrono>
#include <thread>

#include "kernels/cpu/kernel_profile.hpp"
#include "kernels/cpu/residual.hpp"

#include "check.hpp"

using namespace zt::cpu;

TEST_CASE("the kernel profile counts calls only while enabled", "[kernels][profile]") {
  std::vector<float> a(64, 1.0f), b(64, 2.0f), y(64);
  KernelProfile::reset();
  residual_forward(y.data(), a.data(), b.data(), y.size());
  REQUIRE(KernelProfile::totals().calls[int(KernelKind::ResidualForward)] == 0);

  KernelProfile::enable(true);
  residual_forward(y.data(), a.data(), b.data(), y.size());
  residual_forward(y.data(), a.data(), b.data(), y.size());
  residual_backward(a.data(), nullptr, y.data(), y.size());
  KernelProfile::enable(false);
  const KernelTotals& t = KernelProfile::totals();
  REQUIRE(t.calls[int(KernelKind::ResidualForward)] == 2);
  REQUIRE(t.calls[int(KernelKind::ResidualBackward)] == 1);
  REQUIRE(t.calls[int(KernelKind::MatmulForward)] == 0);
  REQUIRE(t.seconds[int(KernelKind::ResidualForward)] >= 0.0);
  REQUIRE(kernel_kind_name(KernelKind::ResidualBackward) == "residual bwd");
  KernelProfile::reset();
  REQUIRE(KernelProfile::totals().calls[int(KernelKind::ResidualForward)] == 0);
}

TEST_CASE("the kernel profile's CPU-time clock leaves out time the thread does not run", "[kernels][profile]") {
  auto slept = [] {
    const double t0 = KernelProfile::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return KernelProfile::now() - t0;
  };
  REQUIRE(slept() >= 0.05);
  KernelProfile::use_thread_cpu_time(true);
  const double cpu = slept();
  KernelProfile::use_thread_cpu_time(false);
  REQUIRE(cpu >= 0.0);
  REQUIRE(cpu < 0.025);
}
