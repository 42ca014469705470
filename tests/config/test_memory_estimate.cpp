// The model-state estimator against the ZeRO formulas (DESIGN.md's table), computed here
// independently from Ψ and N.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.hpp"
#include "model/gpt_shape.hpp"
#include "zero/memory_estimate.hpp"

using namespace zt;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const MemoryEstimateRow& find(const std::vector<MemoryEstimateRow>& rows, int stage, Offload offload) {
  for (const auto& r : rows)
    if (r.stage == stage && r.offload == offload) return r;
  FAIL("no row for stage " << stage << " offload " << offload_name(offload));
  return rows.front();
}

double round2(double x) { return std::round(x * 100.0) / 100.0; }

}  // namespace

TEST_CASE("GPT-2 1.5B on 8 ranks: stage 0 is 16Ψ = 23.21 GiB") {
  const uint64_t psi = gpt_preset("gpt2-1.5b")->num_params();
  MemoryEstimateOptions o;
  o.num_params = psi;
  o.world_size = 8;
  auto rows = estimate_model_state_memory(o);
  const auto& s0 = find(rows, 0, Offload::None);
  CHECK(s0.device_total() == 16.0 * double(psi));
  CHECK(round2(s0.device_total() / kGiB) == Approx(23.21));
  CHECK(s0.formula == "16Ψ");
  CHECK(find(rows, 1, Offload::None).formula == "4Ψ + 12Ψ/N");
  CHECK(find(rows, 2, Offload::None).formula == "2Ψ + 14Ψ/N");
  CHECK(find(rows, 3, Offload::None).formula == "16Ψ/N");
  auto table = format_memory_estimate(o, rows);
  CHECK(table.find("23.21") != std::string::npos);
  CHECK(table.find("2Ψ + 14Ψ/N") != std::string::npos);
}

TEST_CASE("the four stages follow the mixed-precision formulas for several Ψ and N") {
  for (uint64_t psi : {uint64_t(1000), uint64_t(124439808), uint64_t(7000000000)})
    for (int n : {1, 2, 8, 64}) {
      INFO("Ψ " << psi << ", N " << n);
      MemoryEstimateOptions o;
      o.num_params = psi;
      o.world_size = n;
      auto rows = estimate_model_state_memory(o);
      const double P = double(psi), N = double(n);
      CHECK(find(rows, 0, Offload::None).device_total() == Approx(16 * P));
      CHECK(find(rows, 1, Offload::None).device_total() == Approx(4 * P + 12 * P / N));
      CHECK(find(rows, 2, Offload::None).device_total() == Approx(2 * P + 14 * P / N));
      CHECK(find(rows, 3, Offload::None).device_total() == Approx(16 * P / N));
      // The columns, stage 2: params whole, grads and optimizer sharded.
      const auto& s2 = find(rows, 2, Offload::None);
      CHECK(s2.params == Approx(2 * P));
      CHECK(s2.grads == Approx(2 * P / N));
      CHECK(s2.optimizer == Approx(12 * P / N));
    }
}

TEST_CASE("fp32 training: 4 + 4 + 8 bytes, the same 16Ψ at stage 0") {
  MemoryEstimateOptions o;
  o.num_params = 1000000;
  o.world_size = 4;
  o.dtype = "fp32";
  auto rows = estimate_model_state_memory(o);
  const double P = 1e6, N = 4;
  CHECK(find(rows, 0, Offload::None).device_total() == Approx(16 * P));
  CHECK(find(rows, 1, Offload::None).device_total() == Approx(8 * P + 8 * P / N));
  CHECK(find(rows, 2, Offload::None).device_total() == Approx(4 * P + 12 * P / N));
  CHECK(find(rows, 3, Offload::None).device_total() == Approx(16 * P / N));
  CHECK(find(rows, 1, Offload::None).formula == "8Ψ + 8Ψ/N");
}

TEST_CASE("offload moves optimizer (and stage 3 parameters) to host memory, per node") {
  MemoryEstimateOptions o;
  o.num_params = 1000000;
  o.world_size = 16;
  o.nodes = 2;  // 8 ranks per node
  auto rows = estimate_model_state_memory(o);
  const double P = 1e6, N = 16;
  for (int stage = 1; stage <= 3; ++stage) {
    INFO("stage " << stage);
    const auto& plain = find(rows, stage, Offload::None);
    const auto& off = find(rows, stage, Offload::Optimizer);
    CHECK(off.optimizer == 0);
    CHECK(off.device_total() == Approx(plain.device_total() - plain.optimizer));
    CHECK(off.offloaded == Approx(12 * P / N));
    CHECK(off.host_per_node == Approx(12 * P / N * 8));
    CHECK(off.host_formula == "12Ψ/N");
  }
  const auto& all = find(rows, 3, Offload::OptimizerAndParams);
  CHECK(all.device_total() == Approx(2 * P / N));  // only the gradient shard stays
  CHECK(all.offloaded == Approx(14 * P / N));
  CHECK(all.host_per_node == Approx(14 * P / N * 8));
  CHECK(all.formula == "2Ψ/N");
  CHECK(rows.size() == 8);  // 4 plain, 3 optimizer offload, 1 full offload
}

TEST_CASE("bad estimator options are errors") {
  MemoryEstimateOptions o;
  o.num_params = 10;
  o.world_size = 6;
  o.nodes = 4;
  CHECK_THROWS_WITH(estimate_model_state_memory(o), Catch::Contains("4 nodes do not divide world size 6"));
  o.nodes = 1;
  o.dtype = "int8";
  CHECK_THROWS_AS(estimate_model_state_memory(o), zt::Error);
  o.dtype = "bf16";
  o.num_params = 0;
  CHECK_THROWS_AS(estimate_model_state_memory(o), zt::Error);
}
