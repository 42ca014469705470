// The model-state estimator against the ZeRO formulas (docs/architecture.md, "Partitioning"), computed here
// independently from Ψ and N.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.hpp"
#include "model/gpt_shape.hpp"
#include "zero/deepspeed_estimate.hpp"
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

// DeepSpeed's figures, written out here from its formulas (deepspeed/runtime/zero/stage_1_and_2.py
// and stage3.py) for a 7B model with a 131M-parameter largest layer on one node of 8 GPUs.
TEST_CASE("DeepSpeed's estimators: 7B on 8 GPUs") {
  DeepSpeedEstimateInputs in;
  in.total_params = 7000000000;
  in.largest_layer_params = 131072000;
  in.gpus_per_node = 8;
  in.nodes = 1;
  const uint64_t P = 7000000000, L = 131072000;
  // zero2, offload_optimizer cpu: GPU 2Ψ; host Ψ·max(4·8, 16)·1.5.
  auto z2 = deepspeed_zero2_estimate(in, true);
  CHECK(z2.gpu_bytes == 2 * P);
  CHECK(z2.host_bytes_per_node == P * 32 * 3 / 2);
  // zero2, no offload: GPU 2Ψ + 18Ψ/8; host 4Ψ·8·1.5.
  z2 = deepspeed_zero2_estimate(in, false);
  CHECK(z2.gpu_bytes == 2 * P + 18 * P / 8);
  CHECK(z2.gpu_bytes == 29750000000);
  CHECK(z2.host_bytes_per_node == 4 * P * 8 * 3 / 2);
  // zero3, parameters and optimizer offloaded: GPU 4L; host 18Ψ·1.5, or Ψ·max(4·8, 18)·1.5 without zero_init.
  auto z3 = deepspeed_zero3_estimate(in, true, true, true);
  CHECK(z3.gpu_bytes == 4 * L);
  CHECK(z3.host_bytes_per_node == 18 * P * 3 / 2);
  CHECK(deepspeed_zero3_estimate(in, true, true, false).host_bytes_per_node == P * 32 * 3 / 2);
  // zero3, optimizer offloaded: GPU 4L + 2Ψ/8; host 16Ψ·1.5, or Ψ·32·1.5.
  z3 = deepspeed_zero3_estimate(in, true, false, true);
  CHECK(z3.gpu_bytes == 4 * L + 2 * P / 8);
  CHECK(z3.host_bytes_per_node == 16 * P * 3 / 2);
  CHECK(deepspeed_zero3_estimate(in, true, false, false).host_bytes_per_node == P * 32 * 3 / 2);
  // zero3, no offload: GPU 4L + 18Ψ/8; host 4L·8·1.5, or 4Ψ·8·1.5 without zero_init.
  z3 = deepspeed_zero3_estimate(in, false, false, true);
  CHECK(z3.gpu_bytes == 4 * L + 18 * P / 8);
  CHECK(z3.gpu_bytes == 16274288000);
  CHECK(z3.host_bytes_per_node == 4 * L * 8 * 3 / 2);
  CHECK(deepspeed_zero3_estimate(in, false, false, false).host_bytes_per_node == 4 * P * 8 * 3 / 2);
  // Against zerotrain's own stage 3 (16Ψ/N): DeepSpeed's is 2Ψ/N + 4L above it.
  MemoryEstimateOptions o;
  o.num_params = P;
  o.world_size = 8;
  CHECK(double(z3.gpu_bytes) - find(estimate_model_state_memory(o), 3, Offload::None).device_total() ==
        Approx(2.0 * P / 8 + 4.0 * L));
  // The table prints DeepSpeed's options in its order, and the line that says why the figures differ.
  const auto rows = deepspeed_estimates(in);
  REQUIRE(rows.size() == 8);
  CHECK(std::string(rows[0].estimator) == "zero2");
  CHECK(rows[2].offload_param);
  CHECK_FALSE(rows[7].offload_optimizer);
  const std::string table = format_deepspeed_estimates(in, rows, "--largest-layer");
  CHECK(table.find("Why the figures differ") != std::string::npos);
}

TEST_CASE("DeepSpeed's estimators over nodes: host memory per node, truncated as int() truncates") {
  DeepSpeedEstimateInputs in;
  in.total_params = 1000001;
  in.largest_layer_params = 3;
  in.gpus_per_node = 3;
  in.nodes = 2;
  // 18 * 1000001 / 6 = 3000003; 2 * 1000001 / 6 = 333333.67 -> 333333.
  CHECK(deepspeed_zero3_estimate(in, true, false, true).gpu_bytes == 12 + 333333);
  // zero_init: 18Ψ·(1/2)·1.5 = 13500013.5 -> 13500013; without: Ψ·max(12, 9)·1.5 = 18000018.
  CHECK(deepspeed_zero3_estimate(in, true, true, true).host_bytes_per_node == 13500013);
  CHECK(deepspeed_zero3_estimate(in, true, true, false).host_bytes_per_node == 18000018);
  // zero2 offload: Ψ·max(4·6, 16)·1.5 = 36000036.
  CHECK(deepspeed_zero2_estimate(in, true).host_bytes_per_node == 36000036);
}

TEST_CASE("the largest layer is the largest module's own tensors; parameter counts take suffixes") {
  CHECK(largest_module_params({{"wte.weight", 100}, {"h.0.attn.c_attn.weight", 60}, {"h.0.attn.c_attn.bias", 50},
                               {"ln_f.weight", 4}}) == 110);
  // A layer's experts are one module (transformers 5's fused experts), however they are stored.
  std::vector<std::pair<std::string, uint64_t>> moe = {{"model.embed_tokens.weight", 100},
                                                       {"model.layers.0.mlp.gate.weight", 8}};
  for (int e = 0; e < 4; ++e)
    for (const char* proj : {"gate_proj", "up_proj", "down_proj"})
      moe.emplace_back("model.layers.0.mlp.experts." + std::to_string(e) + "." + proj + ".weight", 10);
  CHECK(largest_module_params(moe) == 120);
  moe.emplace_back("model.layers.1.block_sparse_moe.experts.0.w1.weight", 70);  // Mixtral's names
  moe.emplace_back("model.layers.1.block_sparse_moe.experts.1.w2.weight", 70);
  CHECK(largest_module_params(moe) == 140);
  CHECK(parse_param_count("7b", "--params") == 7000000000);
  CHECK(parse_param_count("1.5e9", "--params") == 1500000000);
  CHECK(parse_param_count("350M", "--params") == 350000000);
  CHECK(parse_param_count("0.1m", "--params") == 100000);
  CHECK_THROWS_WITH(parse_param_count("7x", "--params"),
                    "--params \"7x\": expected a positive whole number of parameters such as 124439808, 1.5e9, "
                    "350m or 7b");
  CHECK_THROWS_WITH(parse_param_count("\xff", "--params"), Catch::Contains("\"\\xff\""));
}
