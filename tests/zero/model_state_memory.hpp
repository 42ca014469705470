#pragma once
// What an engine allocates for its model states, checked against the ZeRO paper's table.
#include <catch2/catch.hpp>

#include <string>

#include "config/config.hpp"
#include "core/ledger.hpp"
#include "kernels/backend.hpp"
#include "model/gpt.hpp"
#include "train/engine_config.hpp"
#include "zero/engine.hpp"

namespace zt::test {

// The bytes the ledger gained, by category, while an engine for `shape` under c was made, and the
// engine's padded parameter count.
struct ModelStateBytes {
  size_t params = 0, grads = 0, optimizer = 0, buffers = 0, padded = 0;
};

inline ModelStateBytes model_state_bytes(const config::Config& c, const GptShape& shape, Communicator& comm,
                                         const TrainedParts& parts = {}) {
  Gpt model(shape, 2, 16, false, cpu_backend(), parts);
  auto before = MemoryLedger::instance().stats();
  Engine engine(engine_options(c), model.layout(), comm, cpu_backend(), cpu_backend().vector,
                [&](float* d, size_t b, size_t n) { model.init_params(d, b, n, 1); });
  auto after = MemoryLedger::instance().stats();
  auto delta = [&](MemCategory k) { return after.cur(k) - before.cur(k); };
  return {delta(MemCategory::Params), delta(MemCategory::Grads), delta(MemCategory::Optimizer),
          delta(MemCategory::Buffers), engine.partition().padded()};
}

// Each model state per rank, and their sum: the ZeRO table's 16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N in
// 16-bit training (fp32: 4+4+8 bytes).
inline void check_zero_table(const ModelStateBytes& m, const std::string& dtype, int stage, size_t N) {
  const size_t P = m.padded, S = P / N;
  const size_t d = dtype == "bf16" ? 2 : 4, opt = dtype == "bf16" ? 12 : 8;
  CHECK(m.params == (stage < 3 ? d * P : d * S));
  CHECK(m.grads == (stage < 2 ? d * P : d * S));
  CHECK(m.optimizer == (stage == 0 ? opt * P : opt * S));
  double total = double(m.params + m.grads + m.optimizer);
  double mixed[] = {16.0 * P, 4.0 * P + 12.0 * P / N, 2.0 * P + 14.0 * P / N, 16.0 * P / N};
  double fp32[] = {16.0 * P, 8.0 * P + 8.0 * P / N, 4.0 * P + 12.0 * P / N, 16.0 * P / N};
  CHECK(total == (dtype == "bf16" ? mixed : fp32)[stage]);
}

}  // namespace zt::test
