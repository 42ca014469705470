#pragma once
// What a trainer allocates once it has run: steps 2 to 4, each followed by an evaluation, after
// step 1 and its evaluation. 0 where the buffers are planned, pooled and reused.
#include <cstdint>

#include "core/ledger.hpp"
#include "train/trainer.hpp"

namespace zt::test {

inline uint64_t allocations_after_first_step(Trainer& trainer) {
  trainer.train_step(1);
  trainer.evaluate();
  const uint64_t after_first = MemoryLedger::instance().stats().allocations;
  for (int64_t s = 2; s <= 4; ++s) {
    trainer.train_step(s);
    trainer.evaluate();
  }
  return MemoryLedger::instance().stats().allocations - after_first;
}

}  // namespace zt::test
